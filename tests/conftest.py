"""Crash containment for tests that load native code at risk.

A test marked ``native`` (every ``model`` test is, automatically: they load llama.cpp) runs in a child
pytest process of its own. A segfault there (llama.cpp's AMX kernels on some CPUs, llama.cpp #20824)
fails that one test, naming the signal, instead of killing the whole run before pytest's summary line.
The parent still sets up the test's fixtures (cheap ones here); only the call runs in the child.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import signal
import subprocess
import sys
from collections import defaultdict
from types import SimpleNamespace

import pytest

CHILD_ENV = "HIFO_TEST_CHILD"
CHILD_TIMEOUT_S = 1200


def _pin_numeric_kernels(config) -> None:
    """The test process runs on the sandbox child's pinned numeric kernels (hifo/sandbox/_numeric.py,
    issue 26), so a figure measured in-process is the one the sandbox gives on every x86-64 CPU with
    AVX2. They must be set before numpy loads, so a plain ``pytest`` without them re-executes itself
    once with them (``scripts/test.sh`` sets them already)."""
    if os.environ.get("HIFO_TEST_PINNED") or os.environ.get(CHILD_ENV):
        return
    proc = subprocess.run([sys.executable, "-m", "hifo.sandbox._numeric"], capture_output=True, text=True)
    if proc.returncode != 0:  # e.g. a pytest started as another user (tests/sandbox/test_as_user.py), where
        # this interpreter cannot import hifo: say so and go on unpinned (such a run measures no figures)
        sys.stderr.write(f"conftest: the numeric kernels are not pinned ({proc.stderr.strip()[-300:]})\n")
        os.environ["HIFO_TEST_PINNED"] = "1"
        return
    out = proc.stdout
    want = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    os.environ["HIFO_TEST_PINNED"] = "1"
    if all(os.environ.get(k) == v for k, v in want.items()):
        return
    main = os.path.basename(sys.argv[0]) if sys.argv else ""
    if main in ("pytest", "py.test", "__main__.py"):  # a command-line run: restart it pinned
        capman = config.pluginmanager.getplugin("capturemanager")
        if capman is not None:  # give the restarted run the real stdout/stderr back
            capman.stop_global_capturing()
        os.execve(sys.executable, [sys.executable, "-m", "pytest", *sys.argv[1:]], {**os.environ, **want})


def pytest_configure(config):
    _pin_numeric_kernels(config)
    config.addinivalue_line("markers", "native: loads native code that may crash (llama.cpp); runs in a child "
                                       "process so a crash fails this test only, with its signal named")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("model") is not None and item.get_closest_marker("native") is None:
            item.add_marker(pytest.mark.native)


def signal_name(returncode: int) -> str:
    try:
        return f"{signal.Signals(-returncode).name} (signal {-returncode})"
    except ValueError:
        return f"signal {-returncode}"


def run_in_child(nodeid: str, rootdir: str, timeout_s: float = CHILD_TIMEOUT_S) -> None:
    """Run one test in a child pytest; turn its outcome into this test's (pass, skip or fail)."""
    cmd = [sys.executable, "-m", "pytest", nodeid, "-q", "-rs", "--no-header", "-p", "no:cacheprovider"]
    try:
        proc = subprocess.run(cmd, cwd=rootdir, env={**os.environ, CHILD_ENV: "1"}, capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{nodeid}: its child process did not finish within {timeout_s:.0f} s\n"
                    f"{(exc.stdout or b'')[-3000:]!r}", pytrace=False)
    out = (proc.stdout + proc.stderr)[-6000:]
    if proc.returncode < 0:
        pytest.fail(f"{nodeid}: the test process crashed with {signal_name(proc.returncode)} "
                    f"(native code; the rest of the suite goes on)\n--- child output ---\n{out}", pytrace=False)
    if proc.returncode == 0:
        skipped = re.search(r"SKIPPED \[\d+\] [^\n]*?: (.*)", proc.stdout)
        if skipped and not re.search(r"\b\d+ passed", proc.stdout):
            pytest.skip(skipped.group(1))
        return
    pytest.fail(f"{nodeid}: failed in its child process (exit {proc.returncode})\n--- child output ---\n{out}",
                pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if pyfuncitem.get_closest_marker("native") is None or os.environ.get(CHILD_ENV):
        return None
    run_in_child(pyfuncitem.nodeid, str(pyfuncitem.config.rootpath))
    return True


@pytest.fixture(autouse=True)
def _own_runs_index(tmp_path_factory, monkeypatch):
    """Each test notes its runs in an index of its own, never in the user's (``hifo runs`` reads it)."""
    monkeypatch.setenv("HIFO_RUNS_INDEX", str(tmp_path_factory.mktemp("runs-index") / "runs.index"))


_KEYS_DRAWN: defaultdict[str, itertools.count] = defaultdict(itertools.count)


def _test_secret_bytes(n: int = 32) -> bytes:
    """Stands in for ``secrets.token_bytes`` where the code draws a secret key (an evaluator's secret test set,
    a run's key): the k-th key drawn while a test runs is a hash of the test's id and k. Every object still
    gets a key of its own (two objects draw different sets, as in a run), but a test meets the same draw on
    every machine and every run, so a property checked on a secret draw cannot pass here and fail there."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "outside a test").rsplit(" (", 1)[0]
    return hashlib.blake2b(f"{test}#{next(_KEYS_DRAWN[test])}".encode(), digest_size=n).digest()


@pytest.fixture(autouse=True, scope="session")
def _reproducible_secret_keys():
    """Secret keys in tests are reproducible (see :func:`_test_secret_bytes`); a real run's keys come from
    :mod:`secrets` (tests/agents/test_secret_key.py checks the real call)."""
    try:
        from hifo.agents import run_kb
        from hifo.evaluators import base
    except ImportError:  # a pytest whose interpreter cannot import hifo (see _pin_numeric_kernels) draws no keys
        yield
        return
    fake = SimpleNamespace(token_bytes=_test_secret_bytes, token_hex=lambda n=32: _test_secret_bytes(n).hex())
    saved = base.secrets, run_kb.secrets
    base.secrets = run_kb.secrets = fake  # type: ignore[assignment]
    yield
    base.secrets, run_kb.secrets = saved
