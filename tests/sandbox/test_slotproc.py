"""hifo.sandbox._slotproc: the candidate in a process of its own, answering over a pipe (issue 13)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from hifo.sandbox import _execute, _fence, _slotchannel, _slotproc

LIMITS = {"memory_mb": 2048, "max_solution_bytes": 1 << 20}
FENCE = {"imports": list(_fence.DEFAULT_SLOT_IMPORTS), "process": True}


def start(code: str, entry: str = "f") -> _slotproc.SlotProxy:
    return _slotproc.fork({"code": code, "entry": entry, "fence": FENCE, "instances": b"x"}, (), LIMITS)


def test_calls_go_to_another_process_and_return_arrays():
    proxy = start("import numpy as np\n"
                  "def f(x, scale=1.0):\n"
                  "    x[0] = 99.0  # mutates its own copy only\n"
                  "    return x * scale, np.float64(2.5), {'n': len(x)}\n").ready()
    try:
        assert proxy.pid != os.getpid()
        arg = np.arange(3.0)
        values, scalar, info = proxy(arg, scale=2.0)
        assert values.tolist() == [198.0, 2.0, 4.0] and scalar == 2.5 and info == {"n": 3}
        assert arg.tolist() == [0.0, 1.0, 2.0]  # the caller's array is untouched
        assert proxy.calls == 1 and proxy.slot_cpu_s >= 0.0
    finally:
        proxy.close()


def test_cpu_time_of_the_slot_is_measured_from_outside():
    proxy = start("def f(n):\n    t = 0\n    for i in range(n):\n        t += i * i\n    return t\n").ready()
    try:
        assert proxy(3_000_000) == sum(i * i for i in range(3_000_000))
        assert proxy.slot_cpu_s > 0.05  # the loop's CPU time, read from /proc/<pid>/stat by this process
    finally:
        proxy.close()


def test_loading_is_charged_on_no_instance_and_calls_on_every_one():
    """A budget charged with ``slot_cpu_s`` around each call sees the call's CPU time on every instance alike:
    not the module body, whether it ran before the first instance or inside the first call of a later one."""
    loading = "t = 0\nfor i in range(8_000_000):\n    t += i\n"  # about 10x one call's loop
    proxy = start(loading + "def f(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n").ready()
    try:
        assert proxy.slot_cpu_s < 0.05  # loaded: its loop is not charged
        charged = []
        for _ in range(2):
            before = proxy.slot_cpu_s
            assert proxy(800_000) == sum(range(800_000))  # the second time: a fresh server loads inside this call
            charged.append(proxy.slot_cpu_s - before)
            proxy.next_instance()
        assert proxy.servers == 2 and all(c > 0.005 for c in charged)
        assert charged[1] < 3 * charged[0], charged  # with its loading charged it would be about 10x more
    finally:
        proxy.close()


@pytest.mark.parametrize("code, status, text", [
    ("class Box:\n    pass\n\ndef f():\n    return Box()\n", "invalid", "plain data and numpy arrays only"),
    ("def f():\n    raise ValueError('nope')\n", "error", "ValueError: nope (in the slot process)"),
    ("def f():\n    return len\n", "invalid", "slot answer refused"),
])
def test_failures_in_the_slot_become_job_failures(code, status, text):
    proxy = start(code).ready()
    try:
        with pytest.raises(_execute.JobFailure) as info:
            proxy()
        assert info.value.status == status and text in info.value.reason, info.value.reason
        with pytest.raises(_execute.JobFailure):  # still serving after a failure
            proxy()
    finally:
        proxy.close()


def test_a_fenced_import_fails_the_load():
    proxy = start("import os\ndef f():\n    pass\n")
    try:
        with pytest.raises(_execute.JobFailure, match="fence: import of 'os' not allowed"):
            proxy.ready()
    finally:
        proxy.close()


def test_a_dead_slot_process_is_a_crash():
    import time

    proxy = start("def f():\n    return 1\n").ready()
    server = proxy.server_pid
    os.kill(proxy.pid, 9)  # the zygote: its server goes with it (PR_SET_PDEATHSIG)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(server, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    with pytest.raises(_execute.JobFailure, match="slot process died") as info:
        proxy()
    assert info.value.status == "crashed"
    proxy.close()


def test_a_dead_slot_server_is_a_crash():
    proxy = start("def f():\n    return 1\n").ready()
    os.kill(proxy.server_pid, 9)
    with pytest.raises(_execute.JobFailure, match="slot process died .killed by SIGKILL") as info:
        proxy()
    assert info.value.status == "crashed"
    proxy.close()


def test_each_instance_gets_a_fresh_slot_server_with_nothing_kept():
    code = ("import numpy as np\n"
            "seen = []\n"
            "def f(x):\n"
            "    seen.append(x)  # module state, a function attribute and a mutated argument: all kept per server\n"
            "    f.calls = getattr(f, 'calls', 0) + 1\n"
            "    return list(seen), f.calls\n")
    proxy = start(code).ready()
    try:
        first = proxy.server_pid
        assert proxy(1) == ([1], 1) and proxy(2) == ([1, 2], 2)  # within an instance state is kept
        proxy.next_instance()
        assert proxy(3) == ([3], 1)  # the next instance: a fresh load in a fresh process
        assert proxy.server_pid not in (None, first) and proxy.servers == 2
        with pytest.raises(ProcessLookupError):  # the first server is gone (reaped by the zygote)
            os.kill(first, 0)
    finally:
        proxy.close()


def test_frames_larger_than_the_shared_channel_go_over_the_socket():
    proxy = start("import numpy as np\ndef f(x):\n    return x + 1.0\n").ready()
    try:
        big = np.arange(3 * _slotproc.CHANNEL_BYTES // 8, dtype=float)  # 3 MiB each way
        assert np.array_equal(proxy(big), big + 1.0) and proxy(np.ones(2)).tolist() == [2.0, 2.0]
    finally:
        proxy.close()


def test_the_channel_is_wiped_between_instances():
    proxy = start("def f(x):\n    return x\n").ready()
    try:
        assert proxy("a" * 1000) == "a" * 1000
        proxy.next_instance()
        assert proxy.channel.mem[: 2 * _slotproc.CHANNEL_BYTES].count(b"a") == 0  # nothing left for the next server
        assert proxy("b") == "b"
    finally:
        proxy.close()


def test_call_returning_args_gives_back_the_mutated_arguments():
    proxy = start("def f(x, memory):\n    memory['n'] = memory.get('n', 0) + x\n    return x * 2\n").ready()
    try:
        value, args, kwargs = proxy.call_returning_args(3, {"n": 1})
        assert value == 6 and args == (3, {"n": 4}) and kwargs == {}
    finally:
        proxy.close()


def test_restricted_unpickler_refuses_other_classes():
    import pickle

    with pytest.raises(pickle.UnpicklingError):
        _slotproc.loads_restricted(pickle.dumps(ValueError("x")))
    assert _slotproc.loads_restricted(pickle.dumps([1, 2.0, "a", (None, True), {1j}])) == [1, 2.0, "a", (None, True), {1j}]


def test_through_the_sandbox_the_candidate_runs_outside_the_algorithms_process():
    import dataclasses

    from solvers import make_job

    from hifo.sandbox import run_job

    code = "import os\ndef f(x):\n    return [os.getpid(), x]\n"
    fence = {"imports": [*FENCE["imports"], "os"], "process": True}
    job = dataclasses.replace(make_job(code, [1, 2], solver="solvers:with_pid"), fence=fence)
    result = run_job(job)
    assert result.ok, result.error
    (slot_pid, x1), (slot_pid2, x2) = (s["value"] for s in result.solutions)
    assert (x1, x2) == (1, 2) and slot_pid != slot_pid2  # a fresh slot server per instance
    assert {s["pid"] for s in result.solutions} != {slot_pid}
    inline = run_job(dataclasses.replace(job, fence=dict(fence, process=False)))
    assert inline.ok and all(s["value"][0] == s["pid"] for s in inline.solutions)


def test_milp_primal_runs_its_heuristic_in_a_slot_process():
    from hifo.agents.evaluation import make_job, score_result
    from hifo.evaluators.registry import get_evaluator
    from hifo.sandbox import run_job

    ev = get_evaluator("milp_primal")
    assert ev.slot_process
    instances = ev.load_instances("train")[:1]
    job = make_job(ev, ev.baseline_source(), instances)
    assert job.fence["process"] is True
    score = score_result(ev, instances, run_job(job))
    assert score.feasible, score.error


def test_milp_charges_the_slot_processs_cpu_time_to_its_budget():
    from hifo.evaluators.milp_primal import FREE_CPU_S, run_primal_heuristic
    from hifo.evaluators.registry import get_evaluator

    ev = get_evaluator("milp_primal")
    instance = ev.load_instances("train")[0]
    inst = instance["milp"]
    spin = ("import numpy as np\n"
            "def primal_heuristic(x_lp, reduced_cost, c, A, row_lo, row_hi, lb, ub, is_int):\n"
            "    t = 0\n    for i in range(3_000_000):\n        t += i\n"
            "    return x_lp, np.zeros_like(x_lp)\n")
    proxy = start(spin, "primal_heuristic").ready()
    try:
        before = proxy.slot_cpu_s  # loading the candidate is charged on no instance
        out = run_primal_heuristic(proxy, inst, instance["work_limit"], instance["work_per_cpu_s"])
        used = proxy.slot_cpu_s - before
    finally:
        proxy.close()
    assert used > FREE_CPU_S + 0.02
    # the trajectory starts after the work charged for the slot process's CPU beyond the free allowance
    charged = (used - FREE_CPU_S) * instance["work_per_cpu_s"]
    assert out["trajectory"] and min(t for t, _ in out["trajectory"]) >= 0.9 * charged


@pytest.mark.parametrize("spin_s", [0.0, 1e-3])
def test_the_channel_spins_or_blocks_with_the_same_answers(monkeypatch, spin_s):
    """Calls wait for their frame by spinning on its counter in shared memory (a core free) or by blocking on
    the eventfd (a busy machine, or after spins that found nothing): both give every answer, in order, over
    many calls and across a new server per instance (whose counters start from zero again)."""
    monkeypatch.setattr(_slotchannel, "SPIN_S", spin_s)
    monkeypatch.setattr(_slotchannel.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    proxy = start("def f(i, slow):\n"
                  "    if slow:\n"
                  "        sum(range(200_000))  # a few ms, longer than the spin: the waiting side blocks\n"
                  "    return i * 2\n").ready()
    try:
        assert proxy.channel.spin_s == spin_s
        for instance in range(2):
            got = [proxy(i, i % 7 == 0) for i in range(300)]
            assert got == [2 * i for i in range(300)]
            proxy.next_instance()
        assert proxy.servers == 2
    finally:
        proxy.close()
