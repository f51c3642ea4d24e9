"""A native crash fails one test, not the suite (see tests/conftest.py)."""

import shutil
import subprocess
import sys
from pathlib import Path

CRASHING = '''
import os, signal
import pytest

@pytest.mark.native
def test_segfaults():
    os.kill(os.getpid(), signal.SIGSEGV)

@pytest.mark.model
def test_model_marked_tests_are_contained_too():
    os.kill(os.getpid(), signal.SIGILL)

@pytest.mark.native
def test_skips_in_the_child():
    pytest.skip("no model here")

@pytest.mark.native
def test_fails_in_the_child():
    assert 1 == 2, "plain failure"

def test_after_the_crashes():
    assert True
'''


def test_a_segfaulting_test_fails_alone_and_the_summary_line_is_printed(tmp_path):
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_native.py").write_text(CRASHING)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    model: uses the real embedded model\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "crashed with SIGSEGV (signal 11)" in out and "crashed with SIGILL (signal 4)" in out
    assert "plain failure" in out
    assert "SKIPPED" in out and "no model here" in out
    assert "3 failed, 1 passed, 1 skipped" in out.splitlines()[-1]
