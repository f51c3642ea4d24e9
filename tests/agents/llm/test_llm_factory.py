"""Model specs, the wrapper stack that make_client builds, and lazy imports."""

import subprocess
import sys

import pytest
from llm_helpers import prompt

from hifo.agents.llm.base import BudgetExceeded, Usage
from hifo.agents.llm.factory import ModelSpec, default_model_spec, make_client, parse_spec, wrap_client
from hifo.agents.llm.replay import ScriptedClient


@pytest.mark.parametrize("spec, want", [
    ("local", ModelSpec("local")),
    ("  local:/models/m.gguf ", ModelSpec("local", "/models/m.gguf")),
    ("replay:runs/a.jsonl", ModelSpec("replay", "runs/a.jsonl")),
    ("openai/qwen2.5-coder@http://127.0.0.1:8000/v1", ModelSpec("openai", "qwen2.5-coder", "http://127.0.0.1:8000/v1")),
    ("openai/Qwen/Qwen2.5-7B@https://h.example/v1", ModelSpec("openai", "Qwen/Qwen2.5-7B", "https://h.example/v1")),
    ("openai/gpt-4o-mini", ModelSpec("litellm", "openai/gpt-4o-mini")),
    ("anthropic/claude-3-5-haiku-latest", ModelSpec("litellm", "anthropic/claude-3-5-haiku-latest")),
    ("ollama/qwen2.5-coder:7b", ModelSpec("litellm", "ollama/qwen2.5-coder:7b")),
    ("ollama_chat/qwen2.5-coder@http://127.0.0.1:11434", ModelSpec("litellm", "ollama_chat/qwen2.5-coder",
                                                                    "http://127.0.0.1:11434")),
    ("vertex_ai/claude-3-5-sonnet@20240620", ModelSpec("litellm", "vertex_ai/claude-3-5-sonnet@20240620")),
])
def test_specs_parse(spec, want):
    assert parse_spec(spec) == want


@pytest.mark.parametrize("spec, msg", [
    ("", "empty"), ("lcoal", "malformed"), ("gpt-4o", "malformed"), ("foo:bar", "unknown model spec scheme 'foo'"),
    ("local:", "needs a path"), ("replay: ", "needs a path"), ("scripted:abc", "ScriptedClient directly"),
    ("openai/m@http://", "not an http"), ("/model", "malformed"),
])
def test_bad_specs_raise_clear_errors(spec, msg):
    with pytest.raises(ValueError, match=msg):
        parse_spec(spec)


def test_default_model_spec(monkeypatch):
    monkeypatch.delenv("HIFO_MODEL", raising=False)
    assert default_model_spec() == "local"
    monkeypatch.setenv("HIFO_MODEL", "openai/gpt-4o-mini")
    assert default_model_spec() == "openai/gpt-4o-mini"


def test_a_recorded_run_with_cache_hits_and_a_budget_replays_exactly(tmp_path):
    cassette, cache = tmp_path / "run.jsonl", tmp_path / "cache.sqlite"
    inner = ScriptedClient(["r1", "r2", "r3", "r4", "r5"], cost_per_completion=0.01)
    live = wrap_client(inner, cache_path=cache, record_path=cassette, max_calls=3, seed=100)
    requests = [dict(seed=1), dict(seed=1), dict(), dict(), dict(seed=2), dict(seed=1), dict(seed=3)]
    seen = []
    for kw in requests:
        try:
            seen.append([c.to_dict() for c in live.complete(prompt("p"), temperature=0.5, **kw)])
        except BudgetExceeded as exc:
            seen.append(str(exc))
    assert isinstance(seen[-1], str) and seen[1][0]["cached"] and seen[5][0]["cached"]
    live.close()
    cache.unlink()  # the replay must not depend on the cache
    replayed = make_client(f"replay:{cassette}", cache_path=cache, max_calls=3, seed=100)
    again = []
    for kw in requests:
        try:
            again.append([c.to_dict() for c in replayed.complete(prompt("p"), temperature=0.5, **kw)])
        except BudgetExceeded as exc:
            again.append(str(exc))
    assert again == seen
    assert replayed.usage == live.usage and isinstance(replayed.usage, Usage)
    assert (replayed.usage.calls, replayed.usage.cache_hits) == (3, 2)
    assert len(inner.calls) == 3 and not cache.exists()
    assert (replayed.model, replayed.style) == ("scripted", "chat")


def test_make_client_builds_remote_backends_without_contacting_them(tmp_path):
    client = make_client("openai/m@http://127.0.0.1:9/v1", cache_path=tmp_path / "c.sqlite", max_calls=2)
    assert (client.model, client.style, client.usage.calls) == ("m", "chat", 0)
    (tmp_path / "a.jsonl").write_text("")
    with pytest.raises(ValueError, match="cassette being replayed"):
        make_client(f"replay:{tmp_path / 'a.jsonl'}", record_path=tmp_path / "a.jsonl")
    with pytest.raises(FileNotFoundError):
        make_client(f"replay:{tmp_path / 'missing.jsonl'}")


def test_importing_the_package_loads_no_sdk():
    code = ("import sys, time; t = time.perf_counter(); import agents.llm, agents.llm.factory; "
            "from agents.llm import make_client, parse_spec; dt = time.perf_counter() - t; "
            "c = make_client('openai/gpt-4o-mini'); "
            "heavy = [m for m in ('litellm', 'openai', 'llama_cpp', 'httpx') if m in sys.modules]; "
            "print(heavy, dt)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    heavy, _ = out.stdout.rsplit(" ", 1)
    assert heavy == "[]", out.stdout
