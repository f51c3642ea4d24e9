"""The command line that starts a zygote behind the plan's launcher (bubblewrap, unshare, none).

* ``bwrap``: new pid, network, IPC, UTS (and, as an ordinary user, user) namespaces; only the
  system directories (``SYSTEM_DIRS``) and the solver's import paths (``spec.ro_paths``: the
  interpreter, site-packages, hifo's package directories, plug-in paths; never the repository
  root, ``$HOME`` or other ``sys.path`` entries) bound read-only, everything else absent (a
  ``.env`` in the checkout, ``~/.ssh``, ...); fresh ``/proc`` and ``/dev``; a tmpfs of
  ``disk_bytes`` on ``/tmp`` and a smaller one on ``/dev/shm``; an empty read-only ``/run``;
  the root read-only; as an ordinary user no further user namespaces and ``CAP_SYS_ADMIN`` of
  its own user namespace, as root only the capabilities the zygote needs to drop each child to
  its sandbox uid, signal it, clean up after it and give it its own namespaces (``_nest``).
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
    from ._spec import ZygoteSpec

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
# CAP_SYS_ADMIN: the worker gives each candidate its own pid + mount namespace (sandbox._nest)
ROOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_SYS_ADMIN")


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


# System directories bound read-only (symlinks, e.g. /bin -> usr/bin, recreated as such). Nothing
# else of the host is visible: no /home, /root, /work, /var, /mnt, /opt; what the solver imports
# from elsewhere comes in as ``spec.ro_paths`` (the import paths computed by the runner).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")


def bwrap_args(spec: ZygoteSpec, is_root: bool) -> list[str]:
    shm = min(spec.disk_bytes, 64 * 1024 * 1024)
    args = ["--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "hifo-sandbox"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--dev", "/dev", "--proc", "/proc", "--size", str(spec.disk_bytes), "--tmpfs", "/tmp",
             "--size", str(shm), "--tmpfs", "/dev/shm", "--tmpfs", "/run", "--remount-ro", "/run"]
    if is_root:
        args += ["--cap-drop", "ALL"]
        for cap in ROOT_CAPS:
            args += ["--cap-add", cap]
    else:  # CAP_SYS_ADMIN of its own user namespace: the worker mounts each candidate's private /tmp
        args += ["--unshare-user", "--disable-userns", "--cap-add", "CAP_SYS_ADMIN"]
    system = [os.path.realpath(d) for d in SYSTEM_DIRS if os.path.isdir(d)]
    binds = [p for p in _under("/", spec.ro_paths) if not any(p == d or p.startswith(d + os.sep) for d in system)]
    made: set[str] = set()
    for path in binds:  # bubblewrap would make the parents of a mount point 0700: a sandbox uid could not pass
        parent = os.path.dirname(path)
        chain = []
        while parent not in ("/", "") and parent not in made and parent not in ("/tmp", "/dev/shm", "/run"):
            chain.append(parent)
            parent = os.path.dirname(parent)
        for directory in reversed(chain):
            made.add(directory)
            args += ["--perms", "0755", "--dir", directory]
    for path in binds:
        args += ["--ro-bind", path, path]
    # bubblewrap's own root is a writable tmpfs: no writable place besides the capped /tmp and /dev/shm
    return args + ["--remount-ro", "/", "--chdir", "/tmp"]


def _under(home: str, paths: tuple[str, ...]) -> list[str]:
    """Existing paths inside ``home``, without those already covered by an ancestor in the list."""
    inside = sorted({os.path.realpath(p) for p in paths if os.path.exists(p)} - {"/"})
    inside = [p for p in inside if p == home or p.startswith(home.rstrip(os.sep) + os.sep)]
    kept: list[str] = []
    for path in inside:
        if not any(path == k or path.startswith(k + os.sep) for k in kept):
            kept.append(path)
    return kept
