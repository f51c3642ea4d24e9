"""Nothing shared between candidates, nothing of the user's files visible (issue 20).

Run as root here and, by ``test_as_user.py``, again as an ordinary user. Each test needs the
layers it checks (bubblewrap: the read-only, import-paths-only view and per-candidate namespaces)
and skips with the reason when the machine lacks them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sandbox_helpers import needs
from solvers import make_job

from hifo.sandbox import Job, JobLimits, WarmPool, run_job

REPO = Path(__file__).resolve().parents[2]

HOME = os.path.realpath(os.path.expanduser("~"))  # the user's; the candidate's own HOME is its job directory
WRITE_EVERYWHERE = """
def f(x):
    import os
    wrote = []
    for d in ("/tmp", "/dev/shm", "/var/tmp", os.environ["HOME"], REAL_HOME, "/run", "/", "/home", "/root"):
        try:
            with open(os.path.join(d, "hifo-planted-by-a"), "w") as fh:
                fh.write("from candidate A")
            wrote.append(os.path.join(d, "hifo-planted-by-a"))
        except OSError:
            pass
    return wrote
""".replace("REAL_HOME", repr(HOME))

LOOK_FOR_PLANTED = """
def f(x):
    import os
    return [path for path in PLANTED if os.path.exists(path)]
"""


@needs("read_only_fs", "pid_namespace")
def test_two_candidates_of_one_warm_worker_share_no_writable_place():
    pool = WarmPool()
    try:
        first = run_job(make_job(WRITE_EVERYWHERE), warm=pool)
        assert first.ok, first.error
        planted = first.solutions[0]
        second = run_job(make_job(LOOK_FOR_PLANTED.replace("PLANTED", repr(planted))), warm=pool)
        assert pool.started == 1 and pool.reused == 1  # the same warm worker served both
    finally:
        pool.close()
    assert second.ok, second.error
    assert any(path.startswith("/tmp/") for path in planted)  # its own directory is writable
    assert all(path.startswith(("/tmp/", "/dev/shm/")) for path in planted)  # and nothing else
    assert second.solutions[0] == []


@needs("read_only_fs", "bounded_disk")
def test_writable_places_are_capped_and_a_big_write_fails_at_the_cap():
    code = """
def f(x):
    import os
    caps = {d: os.statvfs(d).f_blocks * os.statvfs(d).f_frsize for d in ("/tmp", "/dev/shm")}
    written, error = 0, None
    try:
        with open(os.path.join(os.environ["HOME"], "big"), "wb") as fh:  # its directory, in /tmp
            block = b"x" * (1 << 20)
            for _ in range(1024):  # 1 GiB
                fh.write(block)
                written += len(block)
    except OSError as exc:
        error = exc.errno
    return {"caps": caps, "written": written, "error": error}
"""
    disk = 32 * 1024 * 1024
    result = run_job(make_job(code, max_disk_bytes=disk, max_file_bytes=1 << 31, memory_mb=1024), warm=True)
    assert result.ok, result.error
    out = result.solutions[0]
    assert out["caps"]["/tmp"] <= disk and out["caps"]["/dev/shm"] <= disk
    assert out["error"] == 28 and out["written"] <= disk  # ENOSPC at its cap, far below 1 GiB


@needs("read_only_fs")
def test_a_dotenv_in_the_checkout_and_the_home_directory_are_invisible(tmp_path):
    planted = REPO / ".env"
    created = not planted.exists()
    if created:
        planted.write_text("OPENAI_API_KEY=sk-test-planted-in-dotenv-0123456789\n")
    home = Path(os.path.expanduser("~"))
    code = f"""
def f(x):
    import os
    found = {{}}
    for path in ({str(planted)!r}, {str(REPO / 'pyproject.toml')!r}, {str(home / '.profile')!r},
                 {str(home / '.bashrc')!r}, {str(home)!r}, {str(REPO)!r}):
        try:
            found[path] = os.path.exists(path) and (os.path.isdir(path) and sorted(os.listdir(path)) or True)
        except PermissionError:
            found[path] = []  # there, but nothing in it can be listed
    return found
"""
    try:
        result = run_job(make_job(code), warm=True)
    finally:
        if created:
            planted.unlink()
    assert result.ok, result.error
    seen = result.solutions[0]
    assert seen[str(planted)] is False and seen[str(REPO / "pyproject.toml")] is False
    assert seen[str(home / ".profile")] is False and seen[str(home / ".bashrc")] is False
    listing = seen[str(REPO)]  # only the package directories (mount points) are there, if anything
    assert listing is False or not {".env", ".git", "pyproject.toml", "README.md"} & set(listing)


@needs("read_only_fs")
def test_home_stays_invisible_when_it_is_on_the_python_path(monkeypatch):
    home = os.path.realpath(os.path.expanduser("~"))
    monkeypatch.syspath_prepend(home)  # as with PYTHONPATH=$HOME, or a driver script in ~
    from hifo.sandbox.runner import as_plan, import_paths

    job = make_job("def f(x):\n    return x\n")
    paths = import_paths(job, as_plan(None, warn=False))
    assert not any(os.path.realpath(p) == home for p in paths)
    # only what an import path needs (e.g. a Python under ~/.pyenv) may show, as a mount point
    allowed = {Path(os.path.realpath(p)).relative_to(home).parts[0] for p in paths
               if os.path.realpath(p).startswith(home + os.sep)}
    planted = Path(home) / ".hifo-test-profile"
    planted.write_text("export SECRET_TOKEN=planted-in-home-0123456789\n")
    code = f"""
def f(x):
    import os
    try:
        listing = os.path.exists({home!r}) and sorted(os.listdir({home!r}))
    except PermissionError:
        listing = []
    return {{"planted": os.path.exists({str(planted)!r}), "listing": listing}}
"""
    try:
        result = run_job(make_job(code), warm=True)
    finally:
        planted.unlink()
    assert result.ok, result.error
    out = result.solutions[0]
    assert out["planted"] is False
    assert out["listing"] is False or set(out["listing"]) <= allowed


@needs("pid_namespace")
def test_a_candidate_that_kills_its_worker_is_contained_quickly():
    code = """
def f(x):
    import os, signal
    hits = []
    for pid in (os.getppid(), 1, 2, 3, -1, 0):
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                if pid != os.getpid() and pid not in (0, -1):
                    os.kill(pid, sig)
                    hits.append(pid)
            except OSError:
                pass
    import time
    time.sleep(30)
"""
    pool = WarmPool()
    try:
        started = time.monotonic()
        result = run_job(make_job(code, timeout_s=2.0), warm=pool)
        elapsed = time.monotonic() - started
        after = run_job(make_job("def f(x):\n    return x + 1\n"), warm=pool)
    finally:
        pool.close()
    assert result.status == "timeout" and elapsed < 8.0, (result.status, result.error, elapsed)
    assert after.ok and after.solutions == [2]
    assert pool.started == 1 and pool.replaced == 0  # the worker was never hit: no restart


@needs("pid_namespace")
def test_the_candidate_has_its_own_pid_namespace_and_no_capabilities():
    code = """
def f(x):
    import os
    caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith(("CapEff", "CapPrm", "CapAmb"))]
    return {"pid": os.getpid(), "ppid": os.getppid(), "caps": caps}
"""
    result = run_job(make_job(code), warm=True)
    assert result.ok, result.error
    out = result.solutions[0]
    assert out["pid"] == 2 and out["ppid"] == 1  # its parent is the namespace's own init
    assert all(int(c, 16) == 0 for c in out["caps"])


def test_the_runner_binds_only_import_paths():
    from hifo.sandbox.runner import as_plan, import_paths

    job = Job(code="", entry="f", solver="solvers:apply", instances=[1], limits=JobLimits())
    paths = {os.path.realpath(p) for p in import_paths(job, as_plan(None, warn=False))}
    assert str(REPO) not in paths and os.path.realpath(os.path.expanduser("~")) not in paths
    assert str(REPO / "sandbox") in paths and "/" not in paths
