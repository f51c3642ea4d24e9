"""Model clients: one small protocol (:class:`LLMClient`), several backends, and wrappers that add
retries, a response cache, recording/replay and a budget. Build one with :func:`make_client`.

Backends: :class:`LocalGGUFClient` (embedded Qwen2.5-Coder-1.5B-Instruct or Gemma 3 270M),
:class:`LiteLLMClient` (any provider), :class:`OpenAIClient` (OpenAI-compatible servers),
:class:`ReplayClient` (a recorded cassette), :class:`ScriptedClient` (tests).
Wrappers: :class:`RetryingClient`, :class:`CachedClient`, :class:`RecordingClient`, :class:`BudgetedClient`.

Everything is imported on first attribute access, so ``import agents.llm`` stays cheap and no SDK
(litellm takes ~5 s to import) loads until a client that needs it is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from hifo.agents.llm.base import BudgetExceeded, Completion, LLMClient, LLMError, Message, Usage

_LAZY = {
    "make_client": "factory", "parse_spec": "factory", "default_model_spec": "factory", "ModelSpec": "factory",
    "BudgetedClient": "budget", "CachedClient": "cache", "RetryingClient": "retry", "is_transient": "retry",
    "RecordingClient": "replay", "ReplayClient": "replay", "ScriptedClient": "replay", "ReplayMismatch": "replay",
    "LocalGGUFClient": "local", "LocalModelError": "local", "default_model_path": "local", "gemma_path": "local",
    "LiteLLMClient": "litellm_client", "OpenAIClient": "openai_client",
}

__all__ = ["BudgetExceeded", "Completion", "LLMClient", "LLMError", "Message", "Usage", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f"hifo.agents.llm.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hifo.agents.llm' has no attribute {name!r}")
