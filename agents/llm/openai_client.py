"""Any OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, OpenAI itself) through the openai SDK.

A completion-style request (one "prompt" message) goes to ``/completions`` so a base model continues
the text verbatim; chat requests go to ``/chat/completions``. The SDK is imported on first use.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from hifo.agents.llm._common import as_chat, fill_to_n
from hifo.agents.llm.base import Completion, Message


class OpenAIClient:
    """``api_key`` defaults to ``$OPENAI_API_KEY`` (or a placeholder: local servers accept anything).
    The SDK's own retries are off; wrap in :class:`~agents.llm.retry.RetryingClient` for those. Costs
    are not known here (``cost_known=False``). ``style`` says which prompts suit the served model."""

    def __init__(self, model: str, base_url: str, api_key: str | None = None, timeout: float = 120.0,
                 style: str = "chat"):
        if style not in ("chat", "completion"):
            raise ValueError(f"style must be 'chat' or 'completion', got {style!r}")
        self.model, self.base_url, self.timeout, self.style = model, base_url, timeout, style
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self._client: Any = None
        self._lock = threading.Lock()

    def _sdk(self) -> Any:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(base_url=self.base_url, api_key=self._api_key, timeout=self.timeout,
                                             max_retries=0)
            return self._client

    def _call(self, messages: list[Message], n: int, temperature: float, seed: int | None, max_tokens: int,
              stop: list[str] | None) -> list[Completion]:
        sdk = self._sdk()
        kwargs: dict[str, Any] = dict(model=self.model, temperature=temperature, max_tokens=max_tokens)
        if n != 1:
            kwargs["n"] = n
        if seed is not None:
            kwargs["seed"] = seed
        if stop:
            kwargs["stop"] = list(stop)
        t0 = time.perf_counter()
        if len(messages) == 1 and messages[0]["role"] == "prompt":
            resp = sdk.completions.create(prompt=messages[0]["content"], **kwargs)
            texts = [(c.text or "", c.finish_reason) for c in resp.choices]
        else:
            resp = sdk.chat.completions.create(messages=as_chat(messages), **kwargs)
            texts = [(c.message.content or "", c.finish_reason) for c in resp.choices]
        latency = time.perf_counter() - t0
        usage = resp.usage
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        k = max(1, len(texts))
        # the prompt is processed once: its tokens go on the first completion, so sums match the server
        return [Completion(text=t, prompt_tokens=prompt_tokens if i == 0 else 0,
                           completion_tokens=completion_tokens // k + (completion_tokens % k if i == 0 else 0),
                           cost_usd=0.0, cost_known=False, model=resp.model or self.model, latency_s=latency,
                           finish_reason=fr) for i, (t, fr) in enumerate(texts)]

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        from hifo.agents.llm.retry import rejects_request

        def one(s: int | None) -> list[Completion]:
            return self._call(messages, 1, temperature, s, max_tokens, stop)

        try:
            first = self._call(messages, n, temperature, seed, max_tokens, stop)
        except Exception as exc:
            if n == 1 or not rejects_request(exc):
                raise
            first = one(seed)  # servers such as llama.cpp's may refuse n>1: sample one at a time
        return fill_to_n(first, n, seed, one)
