"""Fair fitness (issue 13): a candidate must not win by leaving its slot.

Every file in ``attacks/`` is a gaming candidate (solver call, budget patch, frame reading, forged
result, patched library, re-derived data, ...) with two header lines, ``# evaluator: NAME`` and
``# expect: TEXT``. Each is run through the real sandbox with its evaluator and must fail with a
reason that contains TEXT. The seeded baselines must still score exactly as without the fence.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from hifo.agents.evaluation import check_instance_times, make_job, score_result
from hifo.evaluators.registry import get_evaluator
from hifo.sandbox import InProcessExecutor, run_job
from hifo.sandbox import _fence
from hifo.sandbox.job import SandboxResult

# attacks that must be rejected with a reason; the ones whose header says "# expect: no better than the best
# baseline" (leaks through the evaluator's own inputs) are scored by tests/evaluators/test_instance_secrecy.py
ATTACKS = sorted(p for p in (Path(__file__).parent / "attacks").glob("*.py")
                 if "# expect: no better than the best baseline" not in p.read_text())
# Baselines that are deterministic given the instance (no wall-clock budget inside the algorithm).
EXACT = ("bpp_online", "tsp_construct", "atsp_construct", "acvrp_construct", "optwvp_route", "optwvp_service",
         "toptwvp_route", "tsp_gls", "surface_recon")


def _header(path: Path) -> tuple[str, str]:
    text = path.read_text()
    evaluator = re.search(r"^# evaluator: (\S+)$", text, re.M)
    expect = re.search(r"^# expect: (.+)$", text, re.M)
    assert evaluator and expect, f"{path.name} lacks its '# evaluator:' / '# expect:' header"
    return evaluator.group(1), expect.group(1)


def _load(name: str, count: int = 1):
    ev = get_evaluator(name)
    try:
        instances = ev.load_instances(ev.default_train_set)[:count]
    except ModuleNotFoundError as exc:  # an optional extra (torch, highspy) of this evaluator
        pytest.skip(f"{name} needs {exc.name}")
    return ev, instances


def test_every_attack_names_its_evaluator_and_reason():
    assert len(ATTACKS) >= 15
    names = {_header(p)[0] for p in ATTACKS}
    assert {"atsp_construct", "tsp_construct", "radar_tune", "milp_primal", "bpp_online", "optimizer_update",
            "acvrp_construct", "optwvp_service", "tsp_gls", "fmip_guidance", "optwvp_route"} <= names


@pytest.mark.parametrize("path", ATTACKS, ids=[p.stem for p in ATTACKS])
def test_attack_is_rejected_with_a_reason(path):
    name, expect = _header(path)
    ev, instances = _load(name)
    result = run_job(make_job(ev, path.read_text(), instances))
    score = score_result(ev, instances, result)
    assert not score.feasible, f"{path.name} was scored feasible: {score.metrics}"
    assert expect in (score.error or ""), score.error


@pytest.mark.parametrize("name", EXACT)
def test_baselines_score_exactly_as_without_the_fence(name):
    ev, instances = _load(name, count=2)
    for baseline, source in sorted(ev.baselines.items()):
        job = make_job(ev, source, instances)
        fenced = score_result(ev, instances, run_job(job))
        with InProcessExecutor() as ex:
            plain = score_result(ev, instances, ex.submit(dataclasses.replace(job, fence=None)).result())
        assert fenced.feasible and plain.feasible, (baseline, fenced.error, plain.error)
        assert fenced.per_instance == plain.per_instance, baseline


def test_parent_times_each_instance_from_the_childs_marks():
    ev, instances = _load("bpp_online", count=2)
    job = make_job(ev, ev.baseline_source(), instances)
    result = run_job(job)
    assert result.ok and len(result.instance_s) == 2 and all(t >= 0 for t in result.instance_s)
    # on a busy machine the parent may read several marks at once: each instance between them is then charged
    # the whole window in which they arrived (an overestimate, never a free 0 s in the candidate's favour)
    assert all(t > 0 for t in result.instance_s)
    assert max(result.instance_s) < result.wall_s + 0.1  # measured inside the job's wall time, by the parent


def test_overtime_is_rejected_by_the_parent():
    ev, instances = _load("bpp_online", count=1)
    ev.instance_time_limit = lambda instance: 1e-6  # this object only: no instance is that fast
    score = score_result(ev, instances, run_job(make_job(ev, ev.baseline_source(), instances)))
    # killed live by the sandbox parent, or (if the instance ended before the kill landed) caught afterwards
    assert not score.feasible and "overtime: instance 0" in score.error, score.error


SPIN = """import numpy as np


def priority(item, bins):
    total = 0
    for i in range(10 ** 9):  # far beyond any limit: only the parent's kill ends it
        total += i
    return -np.asarray(bins)
"""


def test_parent_kills_an_instance_that_runs_over_its_limit():
    ev, instances = _load("bpp_online", count=2)
    job = dataclasses.replace(make_job(ev, SPIN, instances), instance_limits_s=(0.3, None))
    result = run_job(job)
    assert result.status == "timeout" and result.error.startswith("overtime: instance 0 still running"), result.error
    assert "timed and killed by the parent" in result.error
    assert result.wall_s < 10.0 < job.limits.timeout_s  # long before the job's own timeout


FORGED_TIMES = """import json, os, sys, time


def priority(item, bins):
    time.sleep(0.6)  # over the limit, then claim 0 s in a forged result and leave
    fd = int(sys.argv[1])
    os.write(fd, json.dumps({"status": "ok", "error": None, "instance_s": [0.0], "solutions": [[0]]}).encode())
    os._exit(0)
"""


def test_child_reported_times_are_ignored():
    """Unfenced (so it can reach the result pipe): the forged timing is not what the parent uses."""
    ev, instances = _load("bpp_online", count=1)
    job = dataclasses.replace(make_job(ev, FORGED_TIMES, instances), fence=None, instance_limits_s=())
    result = run_job(job)
    assert result.instance_s == []  # no end-of-instance mark arrived: the child's [0.0] is not taken
    ev.instance_time_limit = lambda instance: 0.5
    score = score_result(ev, instances, result)
    assert not score.feasible and "0 instance timings for 1 instances" in score.error, score.error


def test_marks_are_split_off_the_result_and_timestamped_on_arrival():
    from hifo.sandbox._marks import Marks, instance_seconds

    marks, buf = Marks(), bytearray(b"\x02")
    marks.take(buf)
    buf += b"\x01\x01{\"status\":\"ok\"}\x01"
    marks.take(buf)
    assert len(marks.times) == 3 and marks.scanned == 3 and marks.done
    assert bytes(buf[marks.scanned:]).startswith(b"{") and instance_seconds(marks.times)[0] >= 0
    late = Marks()
    late.take(bytearray(b"\x01\x02"))  # an instance mark before the begin mark is not a mark
    assert late.times == [] and late.done
    assert instance_seconds([1.0, 1.5, 3.5]) == [0.5, 2.0]


def test_instance_time_check_is_strict_about_missing_timings():
    ev, instances = _load("bpp_online", count=2)
    ev.instance_time_limit = lambda instance: 1.0
    assert check_instance_times(ev, instances, [0.5, 0.9]) is None
    assert "over its 1.00 s limit" in check_instance_times(ev, instances, [0.5, 1.5])
    assert "2 instances" in check_instance_times(ev, instances, [])  # a result without timings
    assert check_instance_times(get_evaluator("bpp_online"), instances, []) is None  # no limit declared


def test_milp_primal_refuses_the_measured_attack_s_overtime():
    """Issue 13's attack ran a solver for 4 s per instance. The budget is now HiGHS work ticks, so the parent's
    per-instance limit is only a safety net; what refuses the attack is the heuristic's own CPU cap, read by the
    algorithm from outside the slot process (tests/evaluators/test_milp_primal.py runs it)."""
    from hifo.evaluators.milp_primal import FREE_CPU_S, HEURISTIC_CPU_S, INSTANCE_WALL_S

    ev = get_evaluator("milp_primal")
    assert FREE_CPU_S < HEURISTIC_CPU_S < 4.0  # the attack ran 4 s per instance
    assert ev.instance_time_limit(ev.load_instances("train")[0]) == INSTANCE_WALL_S


def test_radar_budget_cannot_be_lifted_by_patching_the_module(monkeypatch):
    from hifo.evaluators import radar_tune

    monkeypatch.setattr(radar_tune, "BUDGET_PER_NODE", 10**6)
    with pytest.raises(radar_tune.InvalidSettings, match="exceeds the budget"):
        radar_tune.parse_settings({"start_nodes": list(range(10)), "augmentations": 24}, 10)


def test_sandbox_result_carries_no_timings_unless_ok():
    assert SandboxResult(status="error").instance_s == []


# ---- the fence on its own (compile-time rules and guarded builtins, no sandbox) ------------------
HONEST = '''
import math
from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass
class Memo:
    best: float = 0.0


class Scorer:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * x


_cache = {}


def priority(item, bins):
    memo = Memo()
    memo.best = max(memo.best, item)
    s = Scorer(2.0)
    q = deque([1, 2])
    arr = np.asarray(bins, dtype=float).copy()
    arr[0] = arr[0] + 0.0
    name = getattr(arr, "shape", None)
    label = f"{item:.2f}" + "{}".format(len(q))
    priority.calls = getattr(priority, "calls", 0) + 1
    return [s(-(b - item)) + math.sqrt(0) + 0 * len(label) + 0 * len(name) for b in arr]
'''


def test_honest_candidate_runs_under_the_fence():
    fn = _fence.load(HONEST, "priority", _fence.DEFAULT_SLOT_IMPORTS)
    assert fn(0.5, [1.0, 0.75]) == [-1.0, -0.5]


@pytest.mark.parametrize("source, rule", [
    ("import os\ndef f(): pass", "import of 'os'"),
    ("from . import x\ndef f(): pass", "relative import"),
    ("def f():\n    return f.__globals__", "'__globals__'"),
    ("def f():\n    return __builtins__", "dunder name"),
    ("def f():\n    return (x for x in []).gi_frame", "'gi_frame'"),
    ("def f():\n    return getattr(f, '__glob' + 'als__')", "'__globals__'"),
    ("def f():\n    return eval('1')", "name 'eval' is not defined"),
    ("def f():\n    return open('/etc/hostname')", "name 'open' is not defined"),
    ("import numpy as np\ndef f():\n    setattr(np, 'sum', min)", "module 'numpy'"),
    ("import math\ndef f():\n    del math.pi", "module 'math'"),
    ("def f():\n    __import__('os')", "dunder name"),
    ("def f():\n    import importlib", "import of 'importlib'"),
    ("def f():\n    int.bit_length = None", "class builtins.int"),
    ("import numpy as np\ndef f():\n    return np.zeros(2).ctypes.data", "raw-memory attribute 'ctypes'"),
    ("import numpy as np\ndef f():\n    return np.lib.stride_tricks", "'numpy.lib.stride_tricks'"),
    ("import numpy as np\ndef f():\n    np.seterr(all='ignore')", "'seterr' changes process-wide state"),
    ("from operator import attrgetter\ndef f():\n    pass", "'attrgetter' looks attributes up unguarded"),
    ("import operator\ndef f():\n    return operator.methodcaller('x')", "'methodcaller'"),
    ("import functools\ndef f():\n    return functools.update_wrapper", "'update_wrapper'"),
    ("def f():\n    return str.format('{0.__class__}', 1)", "lookups inside str.format fields"),
    ("import numbers\ndef f():\n    numbers.Integral.register(str)", "'register' changes process-wide state"),
    ("def f():\n    import string", "import of 'string'"),
    # issue 28: definitions through which libraries run the candidate's code or read memory it names
    ("class A:\n    def __array__(self):\n        return 0\ndef f():\n    pass", "defining '__array__'"),
    ("class A:\n    def __get__(self, o, t):\n        return 0\ndef f():\n    pass", "defining '__get__'"),
    ("class A:\n    def __getattr__(self, n):\n        return 0\ndef f():\n    pass", "defining '__getattr__'"),
    ("class A:\n    def __reduce__(self):\n        return 0\ndef f():\n    pass", "defining '__reduce__'"),
    ("class A:\n    def __class_getitem__(cls, k):\n        return 0\ndef f():\n    pass", "defining '__class_getitem__'"),
    ("def f():\n    return id(f)", "id() is not allowed"),
    ("def f():\n    return type('A', (), {})", "type() with more than one argument"),
    ("def f():\n    return {'__array_interface__': 1}", "the name '__array_interface__' is not allowed"),
    ("class M(type):\n    pass\nclass A(metaclass=M):\n    pass\ndef f():\n    pass", "metaclasses are not allowed"),
])
def test_fence_rules(source, rule):
    with pytest.raises((_fence.FenceViolation, NameError), match=re.escape(rule)):
        fn = _fence.load(source, "f", _fence.DEFAULT_SLOT_IMPORTS)
        fn()


def test_fence_lint_allows_plain_classes_and_a_local_named_id():
    source = ("from typing import NamedTuple\n"
              "class P(NamedTuple):\n    a: int\n    b: int\n"
              "class Item:\n    def __init__(self, v):\n        self.v = v\n"
              "    def __lt__(self, other):\n        return self.v < other.v\n"
              "def f():\n    id = lambda x: x  # a name of its own, not the builtin\n"
              "    return id(P(1, 2).b) + (Item(1) < Item(2))\n")
    assert _fence.load(source, "f", _fence.DEFAULT_SLOT_IMPORTS)() == 3


def test_class_statement_is_checked_at_run_time_too():
    """Past the static check (here: compiled directly), the guarded ``__build_class__`` still refuses a class of
    the candidate's that defines a denied method; library classes with such methods (NamedTuple's) pass."""
    code = compile("class A:\n    def __array__(self):\n        return 0\n", "<candidate>", "exec")
    with pytest.raises(_fence.FenceViolation, match="class 'A' defines '__array__'"):
        exec(code, {"__builtins__": _fence.guarded_builtins(_fence.DEFAULT_SLOT_IMPORTS), "__name__": "hifo_candidate"})


def test_parent_refuses_a_fenced_import_without_a_sandbox_run():
    from hifo.agents.evaluation import CandidateEvaluator

    class NoExecutor:
        def submit(self, job):
            raise AssertionError("the sandbox must not be asked")

    ev = get_evaluator("bpp_online")
    source = (ATTACKS[0].parent / "bpp_forge_result.py").read_text()
    score = CandidateEvaluator(ev, "train", NoExecutor()).evaluate(source)
    assert not score.feasible and "fence: import of 'os' not allowed" in score.error


def test_default_slot_imports_match_the_fence_default():
    from hifo.evaluators.base import Evaluator

    assert tuple(Evaluator.slot_imports) == tuple(_fence.DEFAULT_SLOT_IMPORTS)


AUDITED = '''
import sys
from hifo.sandbox import _fence
_fence.install()
honest = sys.argv[1]
print([float(v) for v in _fence.load(honest, "priority", _fence.DEFAULT_SLOT_IMPORTS)(0.5, [1.0, 0.75])])
extra = "from collections import namedtuple\\nP = namedtuple('P', 'a b')\\n" + \\
        "import numpy as np\\ndef f():\\n    with np.errstate(divide='ignore'):\\n        z = np.ones(1) / 0\\n" + \\
        "    return P(1, 2).b + np.polynomial.Polynomial([1, 2])(3.0) + float(np.isinf(z[0]))" + \\
        " + float(np.median(np.array([1.0, 2.0, 3.0])))\\n"  # np.median imports numpy.ma lazily
print(_fence.load(extra, "f", _fence.DEFAULT_SLOT_IMPORTS)())
print(_fence.take_violation())
'''


def test_honest_candidate_runs_under_the_audit_hook():
    """Dataclasses, namedtuple, numpy's lazy submodules (and the classes they define) and error states work with the hook
    installed (a process of its own: the hook can never be removed from this one)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", AUDITED, HONEST], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:3] == ["[-1.0, -0.5]", "12.0", "None"]


MILP_SPIN = """import numpy as np


def primal_heuristic(x_lp, reduced_cost, c, A, row_lo, row_hi, lb, ub, is_int):
    total = 0
    for i in range(10 ** 9):  # a solver-length search; the parent's clock ends it
        total += i
    return x_lp, np.ones_like(x_lp)
"""


def test_milp_overtime_in_the_slot_process_is_killed_by_the_parent():
    ev, instances = _load("milp_primal", count=1)
    job = make_job(ev, MILP_SPIN, instances)
    assert job.fence["process"] and job.instance_limits_s == (ev.instance_time_limit(instances[0]),)
    job = dataclasses.replace(job, instance_limits_s=(0.5,))  # the real limit is 4 s: keep the test short
    score = score_result(ev, instances, run_job(job))
    assert not score.feasible and "overtime: instance 0 still running" in score.error, score.error


def test_few_call_slots_run_in_a_process_of_their_own():
    from hifo.evaluators.registry import get_evaluator_class as _class, list_evaluators

    using = {name for name in list_evaluators() if getattr(_class(name), "slot_process", False)}
    assert {"milp_primal", "radar_tune", "optwvp_service", "newton_schulz", "fl_aggregate", "lp_irls",
            "ridge_schedule", "fdiv_pessimism"} <= using
    # issue 28: the last four that ran in the algorithm's process; now none does
    assert {"tsp_gls", "surface_recon", "optimizer_update", "fmip_guidance"} <= using
    assert using == set(list_evaluators())
