"""`hifo doctor`'s view of the embedded model: build flags, and a one-token test in a child process."""

import importlib.util

import pytest

from hifo.agents.llm.smoke import build_info, signal_name, smoke_test

needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")


def test_signal_names():
    assert signal_name(-11) == "SIGSEGV (signal 11)"
    assert signal_name(-4) == "SIGILL (signal 4)"


@needs_llama
def test_a_crash_in_the_smoke_test_is_reported_with_its_signal_not_inherited():
    child = ("import json, os, signal\nprint(json.dumps({'stage': 'imported', 'system_info': 'AMX_INT8 = 1'}), "
             "flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    rep = smoke_test(child_code=child)
    assert rep["ok"] is False
    assert rep["result"] == "crashed with SIGSEGV (signal 11) after stage 'imported'"
    assert rep["system_info"] == "AMX_INT8 = 1"
    rep = smoke_test(child_code="raise SystemExit('no model file')")
    assert rep["ok"] is False and "exit 1" in rep["result"] and "no model file" in rep["result"]


@needs_llama
def test_build_info_reads_the_flags_setup_recorded():
    info = build_info()
    assert info["installed"] and info["version"] != "unknown"
    # scripts/setup.sh builds without native CPU detection and records it; any other install says so
    assert "-DGGML_NATIVE=OFF" in info["build flags"] or info["build flags"].startswith("not recorded")


@pytest.mark.model
@needs_llama
def test_the_embedded_model_passes_the_smoke_test():
    rep = smoke_test()
    assert rep["ok"], rep
    assert rep["result"].startswith("ok: generated 1 token") and "AVX" in rep["system_info"]
