"""The model-client protocol shared by every backend.

``complete(messages, n, temperature, seed)`` returns ``n`` :class:`Completion` objects with
token usage and cost. ``messages`` is a list of ``{"role": ..., "content": ...}`` dicts; a
*completion-style* request (for base models such as the embedded Gemma 3 270M) is a single
message with role ``"prompt"`` whose content is continued verbatim.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, str]


class LLMError(RuntimeError):
    """A model call failed after its retries."""


class ModelUnavailable(LLMError):
    """Every model call of a generation failed: the run cannot make progress and stops, naming the
    provider's error (a missing key, an unreachable server), instead of evolving nothing."""


class BudgetExceeded(RuntimeError):
    """The run's call/cost/token budget is spent; the run should stop cleanly."""


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    model: str = ""
    cached: bool = False
    latency_s: float = 0.0
    finish_reason: str | None = None
    # False when the backend could not price the call (unknown model, self-hosted endpoint): cost_usd
    # is then 0 and a cost budget cannot be enforced for it.
    cost_known: bool = True
    # the embedded model only (None elsewhere): seconds of prompt evaluation and of token generation,
    # and how many prompt tokens were evaluated (the rest came from llama.cpp's reused prefix)
    prompt_eval_s: float | None = None
    decode_s: float | None = None
    prompt_evaluated_tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Completion":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass
class Usage:
    calls: int = 0
    completions: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class LLMClient(Protocol):
    model: str
    style: str  # "chat" or "completion": which prompt style suits this model

    def complete(
        self,
        messages: list[Message],
        n: int = 1,
        temperature: float = 1.0,
        seed: int | None = None,
        max_tokens: int = 512,
        stop: list[str] | None = None,
    ) -> list[Completion]: ...
