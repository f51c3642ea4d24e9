"""run_job with careless candidates: success, exceptions, invalid solutions, setup errors."""

from __future__ import annotations

import os
import pickle

import pytest
from solvers import make_job

from hifo.sandbox import SandboxResult, run_job


def test_success_returns_solutions_output_and_isolation():
    code = "def f(x):\n    print('seen', x)\n    return [x, x * 2]\n"
    result = run_job(make_job(code, instances=[1, 2, 3]))
    assert isinstance(result, SandboxResult)
    assert result.ok, result.error
    assert result.solutions == [[1, 2], [2, 4], [3, 6]]
    assert result.stdout == "seen 1\nseen 2\nseen 3\n"
    assert result.error is None and not result.output_truncated
    iso = result.isolation
    assert iso["sandbox"] == "v2" and iso["level"] == "standard" and iso["warm_worker"] is False
    assert iso["rlimits"]["address_space_mb"] == 2048 and iso["rlimits"]["core_bytes"] == 0
    assert "own session" in iso["session"] and "OPENAI_API_KEY" not in iso["scrubbed_env"]
    assert set(iso["layers"]) == {"unprivileged_user", "pid_namespace", "network_namespace", "read_only_fs",
                                  "bounded_disk", "seccomp"}
    assert all(isinstance(gap, str) for gap in iso["gaps"]) and any("forge" in gap for gap in iso["gaps"])
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


def test_temp_dir_is_home_and_tmpdir_and_is_removed(pool):
    code = ("import os\ndef f(x):\n    open('scratch.txt', 'w').write('hi')\n"
            "    return [os.getcwd(), os.environ['HOME'], os.environ['TMPDIR'], os.listdir('.')]\n")
    first = run_job(make_job(code), warm=pool)
    assert first.ok, first.error
    cwd, home, tmp, listing = first.solutions[0]
    assert cwd == home == tmp and listing == ["scratch.txt"]
    assert _nothing_left_for_later_candidates(cwd, pool)


def test_chmod_and_symlink_tricks_do_not_break_cleanup_or_output(pool):
    code = (
        "import os\n"
        "def f(x):\n"
        "    os.makedirs('locked/inner')\n"
        "    os.symlink('/etc', 'locked/inner/etc')\n"
        "    os.chmod('locked/inner', 0)\n"
        "    os.chmod('locked', 0)\n"
        "    print('still captured')\n"
        "    return os.getcwd()\n"
    )
    result = run_job(make_job(code), warm=pool)
    assert result.ok, result.error
    assert result.stdout == "still captured\n"
    assert oct(os.stat("/etc").st_mode & 0o777) == "0o755"  # the cleanup never followed the link
    assert _nothing_left_for_later_candidates(result.solutions[0], pool)


def _nothing_left_for_later_candidates(path: str, pool) -> bool:
    """The same warm worker's next candidates cannot read ``path``, and soon it is gone."""
    probe = ("import os\n"
             "def f(x):\n"
             "    try:\n"
             f"        return os.listdir({path!r})\n"
             "    except OSError as exc:\n"
             "        return type(exc).__name__\n")
    seen = [run_job(make_job(probe), warm=pool).solutions[0] for _ in range(3)]
    return all(s in ("PermissionError", "FileNotFoundError") for s in seen) and seen[-1] == "FileNotFoundError"


def test_descendant_walk_matches_a_full_proc_scan():
    """The zygote kills what it finds through /proc/<pid>/task/<tid>/children, or by a full
    scan of /proc on kernels without CONFIG_PROC_CHILDREN: both must find the same tree."""
    import subprocess
    import sys

    from hifo.sandbox import _proctree

    tree = subprocess.Popen([sys.executable, "-c", "import subprocess, time; p = subprocess.Popen(['sleep', '30']);"
                             " time.sleep(30)"])
    try:
        import time

        deadline = time.monotonic() + 10
        while len(_proctree.descendants(tree.pid)) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        walked = _proctree.descendants(tree.pid)
        assert len(walked) == 1
        assert _proctree.children_by_scan(tree.pid) == walked
        assert tree.pid in _proctree.children(os.getpid()) and tree.pid in _proctree.children_by_scan(os.getpid())
    finally:
        for pid in _proctree.descendants(tree.pid):
            os.kill(pid, 9)
        tree.kill()
        tree.wait()
