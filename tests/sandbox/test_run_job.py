"""run_job with careless candidates: success, exceptions, invalid solutions, setup errors."""

from __future__ import annotations

import os
import pickle

import pytest
from solvers import make_job

from sandbox import SandboxResult, run_job


def test_success_returns_solutions_output_and_isolation():
    code = "def f(x):\n    print('seen', x)\n    return [x, x * 2]\n"
    result = run_job(make_job(code, instances=[1, 2, 3]))
    assert isinstance(result, SandboxResult)
    assert result.ok, result.error
    assert result.solutions == [[1, 2], [2, 4], [3, 6]]
    assert result.stdout == "seen 1\nseen 2\nseen 3\n"
    assert result.error is None and not result.output_truncated
    iso = result.isolation
    assert iso["sandbox"] == "v1" and iso["namespaces"].startswith("none")
    assert iso["rlimits"]["address_space_mb"] == 2048 and iso["rlimits"]["core_bytes"] == 0
    assert "process group" in iso["session"] and "OPENAI_API_KEY" not in iso["scrubbed_env"]
    assert 0 < result.wall_s < 5


def test_class_solver_uses_its_solve_method():
    result = run_job(make_job("def f(x):\n    return x + 1\n", instances=[4], solver="solvers:ClassSolver"))
    assert result.ok and result.solutions == [{"value": 5}]


def test_numpy_values_become_json():
    code = "import numpy as np\ndef f(x):\n    return {'a': np.arange(3), 'b': np.float32(0.5), 'c': np.int64(7)}\n"
    result = run_job(make_job(code))
    assert result.ok, result.error
    assert result.solutions == [{"a": [0, 1, 2], "b": 0.5, "c": 7}]


def test_python_exception_gives_reason_and_candidate_frames():
    code = "def helper(x):\n    return x / 0\n\ndef f(x):\n    return helper(x)\n"
    result = run_job(make_job(code, instances=[1, 2]))
    assert result.status == "error"
    first, *frames = result.error.splitlines()
    assert first == "ZeroDivisionError: division by zero (on instance 0)"
    assert frames[-1].strip() == "candidate line 2, in helper: return x / 0"
    assert "candidate line 5, in f" in frames[-2]
    assert "Traceback" in result.stderr  # the full traceback is kept too
    assert result.solutions == []


def test_exception_with_hostile_str_is_still_described():
    code = "class Boom(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\ndef f(x):\n    raise Boom()\n"
    result = run_job(make_job(code))
    assert result.status == "error"
    assert result.error.startswith("Boom: <unprintable> (on instance 0)")


@pytest.mark.parametrize(
    "code, expected",
    [
        ("def f(x)\n    return 1\n", "SyntaxError"),
        ("def g(x):\n    return 1\n", "candidate defines no 'f'"),
        ("f = 3\n", "candidate's 'f' is not callable"),
        ("raise ValueError('at import')\ndef f(x):\n    return 1\n", "ValueError: at import (while loading the candidate)"),
        ("import sys\ndef f(x):\n    sys.exit(3)\n", "candidate called sys.exit(3)"),
    ],
)
def test_broken_candidates_are_errors(code, expected):
    result = run_job(make_job(code))
    assert result.status == "error"
    assert expected in result.error


def test_unknown_solver_is_a_setup_error():
    result = run_job(make_job("def f(x):\n    return 1\n", solver="solvers:nope"))
    assert result.status == "error"
    assert result.error.startswith("sandbox setup failed: cannot import solver 'solvers:nope'")


@pytest.mark.parametrize(
    "body, expected",
    [
        ("return float('nan')", "contains NaN or infinity"),
        ("return [1.0, float('inf')]", "contains NaN or infinity"),
        ("return {1, 2}", "is not JSON-serialisable"),
        ("a = []\n    a.append(a)\n    return a", "circular reference"),
    ],
)
def test_unserialisable_solutions_are_invalid(body, expected):
    result = run_job(make_job(f"def f(x):\n    {body}\n"))
    assert result.status == "invalid"
    assert expected in result.error and "instance 0" in result.error


def test_solution_over_result_cap_is_output_limit():
    result = run_job(make_job("def f(x):\n    return 'x' * 5000\n", instances=[1, 2], max_solution_bytes=6000))
    assert result.status == "output_limit"
    assert "result cap" in result.error and "instance 1" in result.error


def test_exit_without_result_is_crashed():
    result = run_job(make_job("import os\ndef f(x):\n    os._exit(0)\n"))
    assert result.status == "crashed"
    assert result.error == "exited with code 0 before reporting a result"


def test_unpicklable_instances_raise_in_the_parent():
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        run_job(make_job("def f(x):\n    return 1\n", instances=[lambda: 1]))


def test_temp_dir_is_home_and_tmpdir_and_is_removed():
    code = "import os\ndef f(x):\n    open('scratch.txt', 'w').write('hi')\n    return [os.getcwd(), os.environ['HOME'], os.environ['TMPDIR']]\n"
    result = run_job(make_job(code))
    assert result.ok, result.error
    cwd, home, tmp = result.solutions[0]
    assert cwd == home == tmp and os.path.basename(cwd) == "work"
    assert not os.path.exists(cwd) and not os.path.exists(os.path.dirname(cwd))


def test_polling_fallback_without_pidfd(monkeypatch):
    from sandbox import _process

    monkeypatch.setattr(_process, "_pidfd", lambda pid: None)  # as on kernels before 5.3
    assert run_job(make_job("def f(x):\n    return x\n", instances=[3])).solutions == [3]
    slow = run_job(make_job("import time\ndef f(x):\n    time.sleep(10)\n", timeout_s=0.5))
    assert slow.status == "timeout" and slow.wall_s < 2
