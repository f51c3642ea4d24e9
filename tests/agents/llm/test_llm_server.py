"""A real OpenAI-compatible server in the tests (issue 12, item 6): llama-cpp-python's own server
(``llama_cpp.server``) serves the embedded GGUF on 127.0.0.1, and a one-generation chat-style search
runs against it through ``--model openai/NAME@http://127.0.0.1:PORT/v1`` — chat prompts, reply parsing
and model-written distillation, with no scripted client in between.  Marked ``model`` (it loads
llama.cpp, in a child pytest: tests/conftest.py)."""

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from typer.testing import CliRunner

from hifo.agents.cli import app
from hifo.agents.rundb import RunStore

ALIAS = "gemma-270m"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, proc: subprocess.Popen, log, timeout_s: float = 120.0) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise AssertionError(f"llama_cpp.server exited ({proc.returncode}):\n{log.read()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as r:
                if ALIAS in json.loads(r.read())["data"][0]["id"]:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"llama_cpp.server did not answer {url}/models within {timeout_s:.0f} s")


def _check_search(where, spec: str) -> None:
    """One-generation chat search against ``spec``; the chat prompts, reply parsing and distillation ran."""
    where.mkdir()
    (where / "run.toml").write_text("[run]\nmax_tokens = 256\ntemperature = 0.7\n")
    res = CliRunner().invoke(app, [
        "run", "-p", "bpp_online", "--model", spec, "-g", "0", "-n", "2", "--seed", "1",
        "--kb", str(where / "kb.sqlite"), "--run-dir", str(where / "run"), "--test-set", "or3",
        "--workers", "1", "--no-check", "--config", str(where / "run.toml")])
    assert res.exit_code == 0, f"{spec}: {res.output}"
    store = RunStore(where / "run" / "run.sqlite")
    try:
        prompts = store.prompts()
        cands = store.candidates(generation=0, not_operator="baseline")
    finally:
        store.close()
    ops = [p for p in prompts if p["operator"] == "i1"]
    # chat prompts (system/user roles), each answered by the server
    assert len(ops) == 2 and all(p["messages"][-1]["role"] == "user" for p in ops), spec
    # the server answered every call (Gemma 270M under the chat prompts sometimes closes its code block at
    # once: an empty reply is the model's, not the route's)
    assert all(p["usage"].get("completion_tokens", 0) > 0 for p in prompts), prompts
    assert any(p["reply"] for p in ops), prompts
    # every reply was parsed: a candidate per reply, none lost to a failed call
    assert len([c for c in cands if c.operator == "i1"]) == 2, spec
    assert not [c for c in cands if (c.error or "").startswith("model call failed")], spec
    # model-written distillation asked the same server
    distill = [p for p in prompts if p["operator"] == "distill"]
    assert len(distill) == 1 and distill[0]["reply"], (spec, [p["operator"] for p in prompts])
    print(spec, {c.id: (c.operator, c.status, (c.error or "")[:80]) for c in cands})


@pytest.mark.model
def test_chat_search_against_a_real_openai_compatible_server(tmp_path):
    missing = [m for m in ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")
               if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the server test needs llama-cpp-python's server extra (missing: {', '.join(missing)})")
    from hifo.agents.llm.local import gemma_path  # the fast model: this test is about the server route

    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log = (tmp_path / "server.log").open("w+")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gemma_path()),
                             "--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
                             "--seed", "0"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_ready(url, proc, log)
        # the openai SDK route, then litellm's OpenAI-compatible one (``hosted_vllm/``: no key, api_base = URL)
        for route, spec in (("openai", f"openai/{ALIAS}@{url}"), ("litellm", f"hosted_vllm/{ALIAS}@{url}")):
            _check_search(tmp_path / route, spec)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
