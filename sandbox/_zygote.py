"""The warm worker ("zygote"): runs inside the sandbox's namespaces, forks one child per candidate.

Started by :mod:`hifo.sandbox._process` as ``python -I -S -B -c <bootstrap> CTL_FD`` behind the
launcher the plan chose (bubblewrap, ``unshare`` or nothing), with the scrubbed environment.
It becomes a child subreaper (orphans of a candidate, even after ``setsid`` and a double fork,
are re-parented to it) and non-dumpable, imports the solver's module and the ``preload``
libraries once, then serves jobs one at a time for as long as the parent keeps it:

1. a *spare* child is forked in advance (``os.fork`` of an interpreter holding torch costs
   several ms); it calls ``setsid`` and waits on its own socket;
2. a job from the parent (header + descriptors: payload memfd, stdout, stderr, result pipe)
   gets a fresh directory and is handed to the spare, which applies identity, limits and
   seccomp and runs the candidate (:mod:`hifo.sandbox._child`). The zygote never reads the payload,
   so no candidate's code or data lingers in its memory for the next one;
3. supervision ends on the child's "done" note, its exit (pidfd), the deadline, or a kill from
   the parent; every process of the candidate is then SIGKILLed (see :class:`Zygote` for how)
   and the parent gets one JSON event. The parent never unpickles what comes from here.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import pickle
import selectors
import signal
import socket
import sys
import time
from typing import Any

from . import _proctree, _seccomp, _wire

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36


def main(ctl_fd: int) -> None:
    ctl = socket.socket(fileno=ctl_fd)
    body, _ = _wire.recv(ctl)
    config = pickle.loads(body)  # from the trusted parent
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a candidate come back to us
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # a same-uid candidate cannot ptrace or read our memory
    if config["launcher"] == "none":
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != config["parent_pid"]:
            os._exit(70)
    for path, size in config["mount_tmpfs"]:
        _proctree.mount_tmpfs(libc, path, size)
    import site

    for directory in config["site_dirs"]:
        site.addsitedir(directory)
    sys.path[0:0] = list(config["sys_path"])
    errors = {}
    for name in [*config["preload"], config["solver_module"]]:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # reported; the candidate child reports it again per job
            errors[name] = f"{type(exc).__name__}: {exc}"[:500]
    if config["seccomp"]:  # libseccomp loaded and the candidate filter built once; each child only loads it
        try:
            _seccomp.candidate_filter()
        except BaseException as exc:  # each candidate child fails its setup with the same error (fail closed)
            errors["seccomp"] = f"{type(exc).__name__}: {exc}"[:500]
    own_ns = _proctree.owns_pid_namespace(config["parent_pidns"])
    _wire.send_json(ctl, {"event": "ready", "pid": os.getpid(), "errors": errors, "own_pid_namespace": own_ns})
    Zygote(ctl, config, own_ns).serve()


class Zygote:
    """The serving loop. Two strategies, by whether candidates get a sandbox uid:

    * with uids (root): two leased uids alternate between jobs. The candidate's processes are
      killed with ``kill(-1)`` sent *as its uid* (atomic, namespace or not, and it spares the
      root-owned next spare), the parent is answered at once, and the kernel's teardown, the
      reaping and the wiping of that uid's files happen while the *other* uid's job runs: the
      next candidate can neither see nor touch them, and its RLIMIT_NPROC budget is its own.
      The next spare is forked while the candidate runs. Per-candidate cost: a few ms.
    * without (ordinary user, or ``minimal``): everything of the candidate is killed (``kill(-1)``
      in our own pid namespace, else the subreaper walk), reaped and wiped before the next job,
      and the next spare is forked after that.
    """

    def __init__(self, ctl: socket.socket, config: dict[str, Any], own_ns: bool) -> None:
        self.ctl, self.config, self.own_ns = ctl, config, own_ns
        self.uids: list[int] = list(config["uids"])
        if any(uid < 1000 for uid in self.uids):
            raise ValueError(f"refusing sandbox uids below 1000: {self.uids}")  # kill(-1) runs as them
        self.jobs = 0
        self.spare: tuple[int, socket.socket] | None = None
        self.left_behind: dict[int, str] = {}  # uid -> its last job directory, locked, not yet wiped

    def serve(self) -> None:
        while True:
            if self.spare is None:
                self.spare = self._fork_spare()
            self._reap_nohang()
            try:
                body, fds = _wire.recv(self.ctl)
            except (_wire.WireClosed, OSError):
                self._kill_everything()
            request = pickle.loads(body)  # from the trusted parent
            if request["op"] != "job":  # "exit", or a late "kill" for a job that already ended
                for fd in fds:
                    os.close(fd)
                if request["op"] == "exit":
                    self._kill_everything()
                continue
            self.jobs += 1
            uid = self.uids[self.jobs % len(self.uids)] if self.uids else None
            self._run(request, fds, uid)

    def _fork_spare(self) -> tuple[int, socket.socket]:
        mine, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            mine.close()
            self.ctl.close()  # the candidate must never talk to the parent directly
            from . import _child

            _child.spare_main(theirs, self.config, os.getppid())  # never returns
        theirs.close()
        return pid, mine

    def _run(self, request: dict[str, Any], fds: list[int], uid: int | None) -> None:
        assert self.spare is not None
        pid, sock = self.spare
        self.spare = None
        if uid is not None:
            self._settle(uid)  # what this uid left two jobs ago is reaped and wiped by now
        workdir = self._workdir(uid)
        try:
            _wire.send(sock, pickle.dumps({**request, "workdir": workdir, "uid": uid}), tuple(fds))
        except OSError:
            pass  # the spare is gone; its exit status says so below
        finally:
            for fd in fds:
                os.close(fd)
        _wire.send_json(self.ctl, {"event": "started", "pid": pid})
        if uid is not None:
            self.spare = self._fork_spare()  # root-owned: the kill as `uid` below spares it
        event = self._supervise(pid, sock, time.monotonic() + float(request["timeout_s"]))
        sock.close()
        self._kill_candidate(uid)
        returncode: int | None
        if event["how"] == "done":  # the result is written: the parent need not wait for teardown
            returncode, cpu_s = 0, 0.0
        else:
            returncode, cpu_s = self._reap(pid)
        _wire.send_json(self.ctl, {"event": "done", "returncode": returncode, "cpu_s": cpu_s, **_flags(event)})
        if uid is None:
            self._reap_all()
            self._wipe(None, workdir)
        else:
            _proctree.lock_out(workdir)  # the other uid runs next; it must not enter this directory
            self.left_behind[uid] = workdir

    def _settle(self, uid: int) -> None:
        """Reap every process ``uid`` had (all were SIGKILLed), then remove its files."""
        while True:
            self._reap_nohang()
            left = [p for p in _proctree.descendants(os.getpid()) if _proctree.uid_of(p) == uid]
            if not left:
                break
            for p in left:
                try:
                    os.waitpid(p, 0)  # a direct child (we are the subreaper) still tearing down
                except ChildProcessError:
                    time.sleep(0.001)  # not ours yet: its parent is dying, it will be reparented
        self._wipe(uid, self.left_behind.pop(uid, None))

    def _kill_candidate(self, uid: int | None) -> None:
        """SIGKILL every process of the candidate, however it detached itself.

        A process with SIGKILL pending never runs user code again, so the parent may be told at
        once; the kernel's teardown of big address spaces (torch: ~10 ms) happens after."""
        if uid is not None:
            _proctree.kill_as(uid)
        elif self.own_ns:
            try:  # everyone in our pid namespace but its init and us, in one sweep
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            self._kill_descendants()

    def _kill_descendants(self) -> None:
        signalled: set[int] = set()
        for _ in range(10_000):  # no namespace of our own and no uid: walk our descendants
            mine = _proctree.descendants(os.getpid())
            fresh = [p for p in mine if p not in signalled and not _proctree.is_zombie(p)]
            if not fresh:
                return
            for p in fresh:
                try:
                    os.kill(p, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                signalled.add(p)

    def _kill_everything(self) -> None:
        for uid in self.uids:
            _proctree.kill_as(uid)
        self._kill_descendants()
        os._exit(0)

    def _reap(self, pid: int) -> tuple[int | None, float]:
        try:
            _, status, usage = os.wait4(pid, 0)
        except ChildProcessError:
            return None, 0.0
        return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime

    def _reap_nohang(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.spare is not None and pid == self.spare[0]:
                self.spare[1].close()
                self.spare = None  # it died (killed from outside?): fork another

    def _reap_all(self) -> None:
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return
            except InterruptedError:
                continue

    def _workdir(self, uid: int | None) -> str:
        path = os.path.join(self.config["tmp_root"], f"job-{self.jobs}")
        os.mkdir(path, 0o700)
        if uid is not None:
            os.chown(path, uid, uid)
        return path

    def _wipe(self, uid: int | None, workdir: str | None) -> None:
        """Remove what a (now dead) candidate left: its job directory and, in the temporary
        directories private to this worker, what its uid owns (everything, without a uid)."""
        targets = [workdir] if workdir else []
        for root in self.config["private_dirs"]:
            try:
                names = os.listdir(root)
            except OSError:
                continue
            for name in names:
                path = os.path.join(root, name)
                try:
                    if uid is None or os.lstat(path).st_uid == uid:
                        targets.append(path)
                except OSError:
                    continue
        for path in targets:
            _proctree.remove(path)

    def _supervise(self, pid: int, sock: socket.socket, deadline: float) -> dict[str, Any]:
        sel = selectors.DefaultSelector()
        pidfd = _proctree.pidfd(pid)
        sel.register(sock, selectors.EVENT_READ, "child")
        sel.register(self.ctl, selectors.EVENT_READ, "parent")
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ, "exit")
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return {"how": "timeout"}
                for key, _ in sel.select(remaining if pidfd is not None else min(remaining, 0.005)):
                    if key.data == "exit":
                        return {"how": "exit"}
                    if key.data == "child":
                        if _readable_note(sock) == "done":
                            return {"how": "done"}
                        sel.unregister(sock)  # EOF or noise: only the exit or the deadline count now
                    if key.data == "parent":
                        return {"how": "cancel", "reason": self._parent_note()}
                if pidfd is None and _proctree.exited(pid):
                    return {"how": "exit"}
        finally:
            sel.close()
            if pidfd is not None:
                os.close(pidfd)

    def _parent_note(self) -> str:
        try:
            body, fds = _wire.recv(self.ctl)
        except (_wire.WireClosed, OSError):
            self._kill_everything()  # the parent is gone: nobody wants the result
        for fd in fds:
            os.close(fd)
        return str(pickle.loads(body).get("reason", "killed by the parent"))


def _flags(event: dict[str, Any]) -> dict[str, Any]:
    return {"timed_out": event["how"] == "timeout", "cancelled": event.get("reason")}


def _readable_note(sock: socket.socket) -> str:
    try:
        data = sock.recv(16)
    except OSError:
        return ""
    return "done" if data.startswith(b"done") else ""
