"""The command line that starts a zygote behind the plan's launcher (bubblewrap, unshare, none).

* ``bwrap``: new pid, network, IPC, UTS (and, as an ordinary user, user) namespaces; the whole
  file system bound read-only; fresh ``/proc`` and ``/dev``; a tmpfs of ``disk_bytes`` on
  ``/tmp`` (the candidates' directories) and a smaller one on ``/dev/shm``; an empty read-only
  ``/run`` (no host sockets); as an ordinary user ``$HOME`` hidden (what the job needs from it
  bound back read-only) and no further user namespaces; as root only the capabilities the
  zygote needs to drop each child to its sandbox uid, signal it and clean up after it.
  ``--die-with-parent``: the whole namespace dies with the parent.
* ``unshare`` (root, no bubblewrap): new pid, network, mount, IPC and UTS namespaces through
  util-linux; the zygote mounts size-capped tmpfs on /tmp, /var/tmp and /dev/shm itself.
* ``none``: the interpreter directly (the zygote asks for SIGKILL when its parent thread dies).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ._layers import UNSHARE_ARGS, probe

if TYPE_CHECKING:
    from ._process import ZygoteSpec

_PACKAGE_DIR = str(Path(__file__).resolve().parent)
# Loads exactly the parent's copy of this package without putting the repository root (or
# anything else) on the child's sys.path, whether or not the package is installed.
LOAD_PACKAGE = (
    "import importlib.util, sys\n"
    f"spec = importlib.util.spec_from_file_location('_hifo_sandbox', {os.path.join(_PACKAGE_DIR, '__init__.py')!r}, "
    f"submodule_search_locations=[{_PACKAGE_DIR!r}])\n"
    "module = sys.modules['_hifo_sandbox'] = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
)
_BOOTSTRAP = LOAD_PACKAGE + "from _hifo_sandbox._zygote import main\nmain(int(sys.argv[1]))\n"
ROOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER")


def launcher_argv(spec: ZygoteSpec, ctl_fd: int) -> list[str]:
    plan = spec.plan
    python = [plan.python, "-I", "-S", "-B", "-c", _BOOTSTRAP, str(ctl_fd)]
    found = probe()
    if plan.launcher == "bwrap":
        return [found.bwrap or "bwrap", *bwrap_args(spec, found.is_root), "--", *python]
    if plan.launcher == "unshare":
        # setpriv: the unshare process dies with this thread; --kill-child: the zygote with it.
        return ["setpriv", "--pdeathsig", "KILL", "--", found.unshare or "unshare", *UNSHARE_ARGS, *python]
    return python


def bwrap_args(spec: ZygoteSpec, is_root: bool) -> list[str]:
    shm = min(spec.disk_bytes, 64 * 1024 * 1024)
    args = ["--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "hifo-sandbox", "--ro-bind", "/", "/", "--dev", "/dev",
            "--proc", "/proc", "--size", str(spec.disk_bytes), "--tmpfs", "/tmp", "--size", str(shm),
            "--tmpfs", "/dev/shm", "--tmpfs", "/run", "--remount-ro", "/run"]
    if is_root:
        args += ["--cap-drop", "ALL"]
        for cap in ROOT_CAPS:
            args += ["--cap-add", cap]
    else:
        args += ["--unshare-user", "--disable-userns"]
        home = os.path.realpath(os.path.expanduser("~"))
        if home not in ("/", "") and os.path.isdir(home):
            args += ["--tmpfs", home]
            for path in _under(home, spec.ro_paths):
                args += ["--ro-bind", path, path]
    for masked in ("/tmp", "/dev/shm"):  # code living under a fresh tmpfs is bound back read-only
        for path in _under(masked, spec.ro_paths):
            if path != masked:
                args += ["--ro-bind", path, path]
    return args + ["--chdir", "/tmp"]


def _under(home: str, paths: tuple[str, ...]) -> list[str]:
    """Existing paths inside ``home``, without those already covered by an ancestor in the list."""
    inside = sorted({os.path.realpath(p) for p in paths if os.path.exists(p)})
    inside = [p for p in inside if p == home or p.startswith(home + os.sep)]
    kept: list[str] = []
    for path in inside:
        if not any(path == k or path.startswith(k + os.sep) for k in kept):
            kept.append(path)
    return kept
