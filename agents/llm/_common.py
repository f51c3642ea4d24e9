"""Helpers shared by the backends and the wrappers: request keys, prompt flattening, wrapper base."""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Callable

from hifo.agents.llm.base import Completion, LLMClient, Message


def canonical_request(messages: list[Message], n: int, temperature: float, seed: int | None,
                      max_tokens: int, stop: list[str] | None) -> dict[str, Any]:
    """The request as plain JSON data; equal requests give equal dicts (1 and 1.0, [] and None agree)."""
    # a message's "grammar" (a GBNF text constraining the embedded model's reply) is part of the request
    return {"messages": [{"role": str(m["role"]), "content": str(m["content"]),
                          **({"grammar": str(m["grammar"])} if m.get("grammar") else {})} for m in messages],
            "n": int(n), "temperature": float(temperature), "seed": None if seed is None else int(seed),
            "max_tokens": int(max_tokens), "stop": list(stop) if stop else None}


def request_key(request: dict[str, Any], model: str | None = None) -> str:
    """sha256 of the canonical JSON of a request (and the model name, when given: the cache key)."""
    data = dict(request) if model is None else {**request, "model": model}
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def flatten_messages(messages: list[Message]) -> str:
    """One plain-text prompt for a base model: a "prompt" message verbatim, chat turns as a transcript
    that ends with an open ``Assistant:`` line so the model continues as the assistant."""
    if len(messages) == 1 and messages[0]["role"] == "prompt":
        return messages[0]["content"]
    parts = []
    for m in messages:
        role = m["role"]
        if role in ("system", "prompt"):
            parts.append(m["content"])
        else:
            parts.append(f"{role.capitalize()}: {m['content']}")
    if not messages or messages[-1]["role"] != "assistant":
        parts.append("Assistant:")
    return "\n\n".join(parts)


def as_chat(messages: list[Message]) -> list[Message]:
    """Chat messages for a chat API: a completion-style "prompt" message becomes a user turn."""
    return [{"role": "user" if m["role"] == "prompt" else m["role"], "content": m["content"]} for m in messages]


def fill_to_n(first: list[Completion], n: int, seed: int | None,
              one_more: Callable[[int | None], list[Completion]]) -> list[Completion]:
    """Top up a reply that came back with fewer than ``n`` choices (a provider that ignores or drops
    ``n``) by single-sample calls; sample i gets seed+i so the extra samples differ from each other."""
    out = list(first)
    while len(out) < n:
        got = one_more(None if seed is None else seed + len(out))
        if not got:
            break
        out.extend(got[: n - len(out)])
    return out


class Wrapper:
    """Base of the wrapping clients: forwards the identity of the backend and the optional hooks."""

    def __init__(self, inner: LLMClient):
        self.inner = inner

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def style(self) -> str:
        return self.inner.style

    def is_cached(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                  max_tokens: int = 512, stop: list[str] | None = None) -> bool:
        """Would this request be answered without a model call? (Lets the budget admit cache hits.)"""
        probe = getattr(self.inner, "is_cached", None)
        return bool(probe and probe(messages, n, temperature, seed, max_tokens, stop))

    def close(self) -> None:
        closer = getattr(self.inner, "close", None)
        if closer:
            closer()


class DefaultSeedClient(Wrapper):
    """Gives a seed to requests that come without one: the k-th unseeded call gets ``seed + k``.

    So a single-threaded run launched with ``--seed`` is reproducible (and cacheable) even where the
    caller did not pass seeds; calls that carry their own seed are left alone."""

    def __init__(self, inner: LLMClient, seed: int):
        super().__init__(inner)
        self.seed = int(seed)
        self._count = 0
        self._lock = threading.Lock()

    def _fill(self, seed: int | None, advance: bool) -> int:
        if seed is not None:
            return seed
        with self._lock:
            k = self._count
            if advance:
                self._count += 1
        return self.seed + k * 1_000_003  # far apart: sample i of call k uses seed+i

    def is_cached(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                  max_tokens: int = 512, stop: list[str] | None = None) -> bool:
        return super().is_cached(messages, n, temperature, self._fill(seed, False), max_tokens, stop)

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        return self.inner.complete(messages, n=n, temperature=temperature, seed=self._fill(seed, True),
                                   max_tokens=max_tokens, stop=stop)
