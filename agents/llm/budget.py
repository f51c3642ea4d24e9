"""Usage accounting and a call/cost/token budget that stops a run cleanly with :class:`BudgetExceeded`."""

from __future__ import annotations

import logging
import threading

from hifo.agents.llm._common import Wrapper
from hifo.agents.llm.base import BudgetExceeded, Completion, LLMClient, Message, Usage

log = logging.getLogger(__name__)


class BudgetedClient(Wrapper):
    """Counts every call in ``usage`` and refuses calls once a limit is reached.

    * ``max_calls`` is checked *before* a call: the call that would be number max_calls+1 is never
      made. Calls in flight on other threads are reserved, so concurrent workers cannot overshoot.
    * ``max_cost_usd`` and ``max_tokens`` can only be known afterwards: a call is refused once the
      amount already spent has reached the limit (the last call may go past it).
    * Cache hits (every completion ``cached``) are free: they are counted in ``usage.cache_hits`` only,
      and are admitted even when the budget is spent (asked of the inner chain via ``is_cached``).
    * Completions the backend could not price are counted in ``usage.extra["unpriced_completions"]``;
      with a cost limit set, a warning says that limit cannot see them.
    """

    def __init__(self, inner: LLMClient, max_calls: int | None = None, max_cost_usd: float | None = None,
                 max_tokens: int | None = None):
        super().__init__(inner)
        for name, v in (("max_calls", max_calls), ("max_cost_usd", max_cost_usd), ("max_tokens", max_tokens)):
            if v is not None and v < 0:
                raise ValueError(f"{name} must be >= 0, got {v}")
        self.max_calls, self.max_cost_usd, self.max_tokens = max_calls, max_cost_usd, max_tokens
        self.usage = Usage()
        self._in_flight = 0
        self._lock = threading.Lock()
        self._warned_unpriced = False

    def _refusal(self) -> str | None:
        u = self.usage
        if self.max_calls is not None and u.calls + self._in_flight >= self.max_calls:
            return f"max_calls={self.max_calls} reached ({u.calls} made, {self._in_flight} in flight)"
        if self.max_cost_usd is not None and u.cost_usd >= self.max_cost_usd:
            return f"max_cost_usd={self.max_cost_usd:g} reached (spent ${u.cost_usd:.4f})"
        if self.max_tokens is not None and u.prompt_tokens + u.completion_tokens >= self.max_tokens:
            return f"max_tokens={self.max_tokens} reached ({u.prompt_tokens + u.completion_tokens} used)"
        return None

    def remaining_calls(self) -> int | None:
        with self._lock:
            return None if self.max_calls is None else max(0, self.max_calls - self.usage.calls - self._in_flight)

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        args = (messages, n, temperature, seed, max_tokens, stop)
        with self._lock:
            reason = self._refusal()
            if reason is None:
                self._in_flight += 1
        if reason is not None and not self.is_cached(*args):
            raise BudgetExceeded(reason)
        try:
            out = self.inner.complete(messages, n=n, temperature=temperature, seed=seed, max_tokens=max_tokens,
                                      stop=stop)
        finally:
            if reason is None:
                with self._lock:
                    self._in_flight -= 1
        self._account(out)
        return out

    def _account(self, out: list[Completion]) -> None:
        with self._lock:
            u = self.usage
            if out and all(c.cached for c in out):
                u.cache_hits += 1
                return
            u.calls += 1
            fresh = [c for c in out if not c.cached]
            u.completions += len(fresh)
            u.prompt_tokens += sum(c.prompt_tokens for c in fresh)
            u.completion_tokens += sum(c.completion_tokens for c in fresh)
            u.cost_usd += sum(c.cost_usd for c in fresh)
            unpriced = sum(1 for c in fresh if not c.cost_known)
            if unpriced:
                u.extra["unpriced_completions"] = u.extra.get("unpriced_completions", 0) + unpriced
                if self.max_cost_usd is not None and not self._warned_unpriced:
                    self._warned_unpriced = True
                    log.warning("model %s has no known price: max_cost_usd=%g cannot limit its calls",
                                self.model, self.max_cost_usd)
