"""What ``hifo doctor`` says about the embedded model: how llama.cpp was built, and whether it can
generate one token here.

The generation runs in a child process: a llama.cpp built for the wrong CPU dies with a signal
(SIGSEGV in ggml's AMX kernels, SIGILL for missing instructions) and must not take the doctor with it.
The build flags are those ``scripts/setup.sh`` wrote beside the installed package
(``llama_cpp/hifo_build_flags.txt``); a llama-cpp-python installed some other way has none.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

FLAGS_FILE = "hifo_build_flags.txt"

# printed stage by stage, so a crash says how far it got
_CHILD = r"""
import json, sys, time
def say(**kw):
    print(json.dumps(kw), flush=True)
import llama_cpp
info = llama_cpp.llama_print_system_info()
say(stage="imported", system_info=(info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)).strip())
from hifo.agents.llm.local import LocalGGUFClient
client = LocalGGUFClient(sys.argv[1] or None)
say(stage="resolved", model=str(client.path))
t0 = time.perf_counter()
out = client.complete([{"role": "prompt", "content": "def add(a, b):\n    return"}], n=1, temperature=0.0,
                      seed=0, max_tokens=1)
say(stage="generated", text=out[0].text, tokens=out[0].completion_tokens, load_s=client.load_s,
    seconds=time.perf_counter() - t0)
"""


def signal_name(returncode: int) -> str:
    """``-11`` -> ``"SIGSEGV (signal 11)"``; a process killed by a signal has a negative return code."""
    num = -returncode
    try:
        return f"{signal.Signals(num).name} (signal {num})"
    except ValueError:
        return f"signal {num}"


def build_info() -> dict[str, Any]:
    """llama-cpp-python's version and the build flags setup.sh recorded, without importing it."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return {"installed": False}
    pkg = Path(list(spec.submodule_search_locations)[0])
    try:
        version = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    flags_file = pkg / FLAGS_FILE
    flags = (flags_file.read_text().strip() if flags_file.is_file()
             else "not recorded (not installed by scripts/setup.sh: may be a native build)")
    return {"installed": True, "version": version, "build flags": flags, "package": str(pkg)}


def smoke_test(model_path: str | None = None, timeout_s: float = 180.0, child_code: str = _CHILD) -> dict[str, Any]:
    """Load the embedded model and generate one token in a child process.

    Returns ``{"ok": bool, "result": one line, "system_info": ..., ...}``; a crash is reported with its
    signal named and the last stage the child reached. ``child_code`` is for tests."""
    if importlib.util.find_spec("llama_cpp") is None:
        return {"ok": False, "result": "skipped: llama-cpp-python is not installed"}
    try:
        proc = subprocess.run([sys.executable, "-c", child_code, model_path or ""], capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"ok": False, "result": f"timed out after {timeout_s:.0f} s"}
    stages: dict[str, Any] = {}
    for line in proc.stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and "stage" in d:
            stages[d.pop("stage")] = d
    rep: dict[str, Any] = {"ok": False}
    if "imported" in stages:
        rep["system_info"] = stages["imported"]["system_info"]
    last = list(stages)[-1] if stages else "start"
    if proc.returncode < 0:
        rep["result"] = f"crashed with {signal_name(proc.returncode)} after stage '{last}'"
    elif proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no error output"])[-1]
        rep["result"] = f"failed (exit {proc.returncode}) after stage '{last}': {tail}"
    elif "generated" not in stages:
        rep["result"] = f"exited without generating (last stage '{last}')"
    else:
        g = stages["generated"]
        rep.update(ok=True, result=f"ok: generated {g['tokens']} token ({g['text']!r}) in {g['seconds']:.2f} s "
                                   f"(model load {g['load_s'] or 0:.2f} s included)", model=stages["resolved"]["model"])
    return rep
