"""Isolation levels and layers: strict refuses, standard warns, minimal warns; each layer bites."""

from __future__ import annotations

import dataclasses
import os
import subprocess

import pytest
from sandbox_helpers import needs
from solvers import make_job

from hifo.sandbox import IsolationUnavailable, LocalExecutor, run_job
from hifo.sandbox._layers import LAYERS, probe, readable_by_others, resolve


def _without(**errors):
    return dataclasses.replace(probe(), **errors)


def test_strict_refuses_and_names_the_missing_layer_and_its_fix():
    fake = _without(bwrap_error="simulated: not installed")
    with pytest.raises(IsolationUnavailable) as refused:
        resolve("strict", warn=False, probe_result=fake)
    assert "read_only_fs" in str(refused.value) and "apt-get install -y bubblewrap" in str(refused.value)
    with pytest.raises(IsolationUnavailable):
        LocalExecutor(1, isolation=resolve("strict", warn=False, probe_result=_without(seccomp_error="simulated")))


def test_strict_runs_when_every_layer_is_here():
    plan = resolve("standard", warn=False)
    if plan.missing:
        pytest.skip(f"layers missing here: {', '.join(plan.missing)}")
    strict = resolve("strict", warn=False)
    assert strict.applied == LAYERS and strict.launcher == "bwrap"
    result = run_job(make_job("def f(x):\n    return x\n"), isolation=strict)
    assert result.ok and all(result.isolation["layers"].values())


def test_standard_uses_what_is_there_and_warns_loudly_about_the_rest(capsys):
    fake = _without(bwrap_error="simulated: not installed", unshare_error="simulated: not installed")
    with pytest.warns(RuntimeWarning, match="pid_namespace"):
        plan = resolve("standard", probe_result=fake)
    assert plan.launcher == "none"
    assert {"pid_namespace", "network_namespace", "read_only_fs", "bounded_disk"} <= set(plan.missing)
    assert "seccomp" in plan.applied
    err = capsys.readouterr().err
    assert "WARNING: hifo sandbox" in err and "apt-get install -y bubblewrap" in err


def test_minimal_always_warns():
    with pytest.warns(RuntimeWarning, match="minimal"):
        plan = resolve("minimal")
    assert plan.launcher == "none" and not plan.drop_user and not plan.seccomp
    assert set(plan.missing) | set(plan.applied) == set(LAYERS)
    with pytest.raises(ValueError):
        resolve("paranoid")


def test_an_ordinary_user_is_unprivileged_already():
    fake = dataclasses.replace(probe(), is_root=False, unshare_error="needs root (not used without it)")
    plan = resolve("standard", warn=False, probe_result=fake)
    assert "unprivileged_user" in plan.applied and not plan.drop_user
    assert plan.launcher == ("bwrap" if fake.bwrap_error is None else "none")


def test_interpreter_for_a_sandbox_uid_is_readable_by_it():
    found = probe()
    if not found.is_root:
        pytest.skip("the interpreter choice matters only when dropping from root to a sandbox uid")
    assert not readable_by_others("/root/.bashrc") or os.stat("/root").st_mode & 0o001
    if found.python_error is None:
        assert readable_by_others(os.path.realpath(found.python))
        version = subprocess.run([found.python, "-c", "import sys; print(sys.version_info[:2])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        import sys

        assert version == str(tuple(sys.version_info[:2]))  # same minor: site-packages ABI matches


@needs("unprivileged_user", "seccomp")
def test_candidate_has_no_capabilities_no_new_privs_and_a_filter(pool):
    code = ("def f(x):\n"
            "    fields = dict(line.split(':', 1) for line in open('/proc/self/status'))\n"
            "    keys = ('CapEff', 'CapPrm', 'CapAmb', 'NoNewPrivs', 'Seccomp', 'Uid')\n"
            "    return {k: fields[k].strip() for k in keys}\n")
    result = run_job(make_job(code), warm=pool)
    assert result.ok, result.error
    status = result.solutions[0]
    assert status["CapEff"] == status["CapPrm"] == status["CapAmb"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"
    assert set(status["Uid"].split()) == {str(int(status["Uid"].split()[0]))} and status["Uid"].split()[0] != "0"


@needs("seccomp")
@pytest.mark.parametrize(
    "body, expected",
    [
        ("socket.socket(socket.AF_INET, socket.SOCK_STREAM)", "PermissionError"),
        ("socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)", "PermissionError"),
        ("ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0 or _raise()", "OSError: errno 1"),
        # io_uring_setup(1, NULL): EFAULT (14) without the filter, EPERM with it
        ("ctypes.CDLL(None, use_errno=True).syscall(425, 1, None) == 0 or _raise()", "OSError: errno 1"),
    ],
)
def test_seccomp_denies_what_the_deny_list_names(pool, body, expected):
    code = ("import ctypes, socket\n"
            "def _raise():\n"
            "    raise OSError(f'errno {ctypes.get_errno()}')\n"
            f"def f(x):\n    {body}\n    return 'allowed'\n")
    result = run_job(make_job(code), warm=pool)
    assert result.status == "error", result.solutions
    assert result.error.startswith(expected), result.error


@needs("seccomp")
def test_threads_and_subprocesses_still_work_under_the_filter(pool):
    code = ("import subprocess, threading, socket\n"
            "def f(x):\n"
            "    out = []\n"
            "    t = threading.Thread(target=out.append, args=('thread',))  # clone3 -> ENOSYS -> clone\n"
            "    t.start(); t.join()\n"
            "    out.append(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())\n"
            "    a, b = socket.socketpair(); a.send(b'unix'); out.append(b.recv(4).decode())\n"
            "    return out\n")
    result = run_job(make_job(code), warm=pool)
    assert result.ok, result.error
    assert result.solutions == [["thread", "child", "unix"]]


@pytest.mark.parametrize("switches, expected", [
    ({"kernel.apparmor_restrict_unprivileged_userns": "1"}, "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"),
    ({"kernel.unprivileged_userns_clone": "0"}, "sysctl -w kernel.unprivileged_userns_clone=1"),
    ({"user.max_user_namespaces": "0"}, "sysctl -w user.max_user_namespaces=15000"),
    ({}, "a container or an enclosing sandbox forbids them"),
])
def test_blocked_user_namespaces_get_their_own_cause_and_fix(switches, expected):
    from hifo.sandbox._layers import userns_diagnosis

    error = "bwrap: setting up uid map: Permission denied"
    why = userns_diagnosis(error, read=switches.get)
    assert why is not None and expected in why and "apt-get" not in why
    assert userns_diagnosis("bwrap: execvp true: No such file or directory", read=switches.get) is None
    fake = dataclasses.replace(probe(), is_root=False, bwrap_error=error, unshare_error="needs root",
                               userns_blocked=why)
    with pytest.raises(IsolationUnavailable) as refused:
        resolve("strict", warn=False, probe_result=fake)
    assert expected in str(refused.value) and "apt-get install -y bubblewrap" not in str(refused.value)
    plan = resolve("standard", warn=False, probe_result=fake)
    assert len(plan.warnings) == 1 and expected in plan.warnings[0]  # one note naming the cause, not four
