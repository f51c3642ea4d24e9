"""Any provider litellm knows (``openai/gpt-4o-mini``, ``anthropic/...``, ``ollama_chat/...``, ...).

litellm is imported on the first call: the import takes about 5 s. ``LITELLM_LOCAL_MODEL_COST_MAP`` is
set before it, or litellm would fetch its price map from the network at import time.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from hifo.agents.llm._common import as_chat, fill_to_n
from hifo.agents.llm.base import Completion, Message

_IMPORT_LOCK = threading.Lock()
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # in case someone else imports litellm first


def import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _IMPORT_LOCK:  # concurrent first calls must not race through litellm's import
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
    return litellm


class LiteLLMClient:
    """Chat completions through ``litellm.completion``. Cost comes from litellm's local price map; a model
    it cannot price gets cost 0 with ``cost_known=False``. Parameters a provider does not support are
    dropped (``drop_params``); when ``n>1`` is refused or ignored, the missing samples are made by
    single calls with seed+i. ``extra`` goes to every ``litellm.completion`` call (api_key, ...)."""

    style = "chat"

    def __init__(self, model: str, api_base: str | None = None, timeout: float = 120.0, **extra: Any):
        self.model, self.api_base, self.timeout, self.extra = model, api_base, timeout, extra

    def _call(self, messages: list[Message], n: int, temperature: float, seed: int | None, max_tokens: int,
              stop: list[str] | None) -> list[Completion]:
        litellm = import_litellm()
        kwargs: dict[str, Any] = dict(model=self.model, messages=as_chat(messages), temperature=temperature,
                                      max_tokens=max_tokens, timeout=self.timeout, drop_params=True, num_retries=0,
                                      **self.extra)
        if n != 1:
            kwargs["n"] = n
        if seed is not None:
            kwargs["seed"] = seed
        if stop:
            kwargs["stop"] = list(stop)
        if self.api_base:
            kwargs["api_base"] = self.api_base
        t0 = time.perf_counter()
        resp = litellm.completion(**kwargs)
        latency = time.perf_counter() - t0
        try:
            cost, known = float(litellm.completion_cost(completion_response=resp) or 0.0), True
        except Exception:  # litellm raises a variety of errors for models missing from its price map
            cost, known = 0.0, False
        return _split(resp, cost, known, latency, getattr(resp, "model", None) or self.model)

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
            first = one(seed)  # the provider refused n>1: make the samples one by one
        return fill_to_n(first, n, seed, one)


def _split(resp: Any, cost: float, cost_known: bool, latency: float, model: str) -> list[Completion]:
    """One Completion per choice. The prompt is billed once, so its tokens go on the first completion;
    completion tokens and cost are shared out. Sums over the list equal the provider's totals."""
    choices = list(resp.choices)
    if not choices:
        return []
    usage = getattr(resp, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    k = len(choices)
    out = []
    for i, ch in enumerate(choices):
        share = completion_tokens // k + (completion_tokens % k if i == 0 else 0)
        out.append(Completion(text=ch.message.content or "", prompt_tokens=prompt_tokens if i == 0 else 0,
                              completion_tokens=share, cost_usd=cost / k, model=model, latency_s=latency,
                              finish_reason=getattr(ch, "finish_reason", None), cost_known=cost_known))
    return out
