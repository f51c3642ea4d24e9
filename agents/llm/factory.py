"""Build a ready client from a model spec string.

Specs:
  ``local``                     the default embedded model, Qwen2.5-Coder-1.5B-Instruct (llama-cpp-python,
                                chat completion)
  ``local:NAME``                an embedded model by name: ``gemma-270m`` (Gemma 3 270M, a base model),
                                ``qwen2.5-coder-1.5b`` (the default); see `hifo.agents.llm.embedded`
  ``local:/path/model.gguf``    another GGUF file, run as a base model (completion prompts)
  ``replay:/path/run.jsonl``    play back a cassette written with ``record_path``
  ``openai/MODEL@URL``          an OpenAI-compatible server at base URL (vLLM, llama.cpp, Ollama),
                                e.g. ``openai/qwen2.5-coder@http://127.0.0.1:8000/v1``, via the openai SDK
  ``PROVIDER/MODEL``            anything litellm knows: ``openai/gpt-4o-mini``, ``anthropic/...``,
                                ``ollama_chat/qwen2.5-coder``; ``PROVIDER/MODEL@URL`` sets litellm's api_base

Wrapping, outermost first: ``budget(default_seed(record(cache(retry(backend)))))``.
The recorder sits above the cache, so a cassette holds exactly what the agent received, cache hits
included: a replay never depends on a cache file that may have changed or gone. It sits below the budget,
so refused calls (never made) are not recorded, and replays see the same refusals at the same points.
A replay gets no cache (the cassette already is one) and no retries (nothing transient to retry).
Backends and SDKs are imported inside ``make_client``, so importing this module is cheap.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

DEFAULT_TIMEOUT_S = 120.0
_PROVIDER_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/\S+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9_+.-]*:")
_FORMS = ("local, local:gemma-270m, local:PATH.gguf, replay:PATH.jsonl, openai/MODEL@http(s)://HOST[:PORT]/v1, "
          "or a litellm PROVIDER/MODEL string such as openai/gpt-4o-mini")


@dataclass(frozen=True)
class ModelSpec:
    kind: str  # "local" | "replay" | "openai" | "litellm"
    target: str | None = None  # model name, GGUF path or cassette path
    base_url: str | None = None

    @property
    def named(self) -> str:
        """The target, for the kinds that always name one (replay, openai, litellm)."""
        if self.target is None:
            raise ValueError(f"a {self.kind!r} model spec names no model or file")
        return self.target


def default_model_spec() -> str:
    return os.environ.get("HIFO_MODEL", "local")


def parse_spec(spec: str) -> ModelSpec:
    """Parse a model spec; anything malformed or unknown raises ValueError naming the accepted forms."""
    s = (spec or "").strip()
    if not s:
        raise ValueError(f"empty model spec; expected {_FORMS}")
    if s == "local":
        return ModelSpec("local")
    for kind in ("local", "replay"):
        if s.startswith(kind + ":"):
            path = s[len(kind) + 1:].strip()
            if not path:
                raise ValueError(f"model spec {spec!r} needs a path after '{kind}:'")
            return ModelSpec(kind, os.path.expanduser(path))
    if s == "scripted" or s.startswith("scripted:"):
        raise ValueError("'scripted' is not a model spec: tests construct agents.llm.ScriptedClient directly")
    name, base_url = s, None
    at = s.find("@http")
    if at >= 0:
        name, base_url = s[:at], s[at + 1:]
        url = urlparse(base_url)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise ValueError(f"model spec {spec!r}: {base_url!r} is not an http(s) base URL")
    if not _PROVIDER_MODEL.fullmatch(name):
        if _SCHEME.match(name) and "/" not in name.split(":", 1)[0]:
            raise ValueError(f"unknown model spec scheme {name.split(':', 1)[0]!r} in {spec!r}; expected {_FORMS}")
        raise ValueError(f"malformed model spec {spec!r}; expected {_FORMS}")
    provider, model = name.split("/", 1)
    if provider == "openai" and base_url:
        return ModelSpec("openai", model, base_url)
    return ModelSpec("litellm", name, base_url)


def make_client(spec: str, *, cache_path: str | os.PathLike | None = None,
                record_path: str | os.PathLike | None = None, max_calls: int | None = None,
                max_cost_usd: float | None = None, seed: int | None = None,
                timeout_s: float = DEFAULT_TIMEOUT_S, max_tries: int = 4) -> Any:
    """The client for ``spec``, wrapped as described in the module docstring. The result always has
    ``usage`` (a :class:`~agents.llm.base.Usage`), ``model`` and ``style``.

    seed: a default for calls that pass none (the k-th such call gets a seed derived from it).
    max_tries: attempts per call of a remote model (1 for the pre-flight check: no retries)."""
    parsed = parse_spec(spec)
    if parsed.kind == "replay" and record_path is not None and os.path.abspath(record_path) == os.path.abspath(
            parsed.named):
        raise ValueError(f"cannot record into the cassette being replayed: {record_path}")
    client: Any
    if parsed.kind == "replay":
        from hifo.agents.llm.replay import ReplayClient

        client = ReplayClient(parsed.named)
    elif parsed.kind == "local":
        from hifo.agents.llm.local import LocalGGUFClient

        client = LocalGGUFClient(parsed.target)  # nothing transient in-process: no retry wrapper
    else:
        from hifo.agents.llm.retry import RetryingClient

        if parsed.kind == "openai":
            from hifo.agents.llm.openai_client import OpenAIClient

            assert parsed.base_url is not None  # parse_spec makes "openai" only with a base URL
            backend: Any = OpenAIClient(parsed.named, parsed.base_url, timeout=timeout_s)
        else:
            from hifo.agents.llm.litellm_client import LiteLLMClient

            backend = LiteLLMClient(parsed.named, api_base=parsed.base_url, timeout=timeout_s)
        # the watchdog is a safety net above the SDK's own request timeout (which normally fires first)
        client = RetryingClient(backend, max_tries=max_tries, timeout_s=2 * timeout_s + 30)
    return wrap_client(client, cache_path=None if parsed.kind == "replay" else cache_path, record_path=record_path,
                       max_calls=max_calls, max_cost_usd=max_cost_usd, seed=seed)


def wrap_client(backend: Any, *, cache_path: str | os.PathLike | None = None,
                record_path: str | os.PathLike | None = None, max_calls: int | None = None,
                max_cost_usd: float | None = None, seed: int | None = None) -> Any:
    """Put the cache, recorder, default seed and budget around ``backend`` (retries are the backend's
    business, added by :func:`make_client` for remote ones)."""
    from hifo.agents.llm._common import DefaultSeedClient
    from hifo.agents.llm.budget import BudgetedClient

    client = backend
    if cache_path is not None:
        from hifo.agents.llm.cache import CachedClient

        client = CachedClient(client, cache_path)
    if record_path is not None:
        from hifo.agents.llm.replay import RecordingClient

        client = RecordingClient(client, record_path)
    if seed is not None:
        client = DefaultSeedClient(client, seed)
    return BudgetedClient(client, max_calls=max_calls, max_cost_usd=max_cost_usd)
