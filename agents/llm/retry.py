"""Retries with exponential backoff and full jitter for transient failures; every failure that leaves
this wrapper is an :class:`LLMError` with a readable reason.

Errors are classified without importing any SDK: by HTTP status (``exc.status_code`` or
``exc.response.status_code``) when there is one, else by the exception's class names, so the same code
serves litellm, the openai SDK and httpx.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Callable

from hifo.agents.llm._common import Wrapper
from hifo.agents.llm.base import BudgetExceeded, Completion, LLMClient, LLMError, Message

_TRANSIENT_STATUS = {408, 409, 425, 429}
_TRANSIENT_NAMES = ("Timeout", "TimedOut", "RateLimit", "APIConnectionError", "ConnectError", "ConnectionError",
                    "ServiceUnavailable", "InternalServerError", "BadGateway", "Overloaded", "RemoteProtocolError")


def status_of(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def is_transient(exc: BaseException) -> bool:
    """Worth another try: timeouts, rate limits, 5xx, dropped connections. Not: auth and other 4xx.
    An HTTP status, when the error carries one, decides; otherwise the class names do."""
    status = status_of(exc)
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    names = [k.__name__ for k in type(exc).__mro__]
    if any(p in n for n in names for p in _TRANSIENT_NAMES):
        return True
    return isinstance(exc, (TimeoutError, ConnectionError))


def rejects_request(exc: BaseException) -> bool:
    """The server refused the request's parameters (HTTP 400/422, litellm's UnsupportedParamsError):
    for n>1 the backends then fall back to one sample per call."""
    names = [k.__name__ for k in type(exc).__mro__]
    return status_of(exc) in (400, 422) or any("UnsupportedParams" in n for n in names)


def _reason(exc: BaseException) -> str:
    status = status_of(exc)
    msg = " ".join(str(exc).split())[:400] or "(no message)"
    return f"{type(exc).__name__}{f' (HTTP {status})' if status else ''}: {msg}"


class RetryingClient(Wrapper):
    """``max_tries`` attempts in all; the wait before try k+1 is uniform in [0, min(max_delay_s,
    base_delay_s * 2**k)] ("full jitter", so many workers hitting one rate limit spread out).

    timeout_s bounds one attempt: the call runs in a daemon thread and an attempt that has not
    returned in time counts as a transient timeout (the stuck thread is abandoned, not killed; the SDK's
    own request timeout should normally fire first)."""

    def __init__(self, inner: LLMClient, max_tries: int = 4, base_delay_s: float = 1.0, max_delay_s: float = 30.0,
                 timeout_s: float | None = None, sleep: Callable[[float], None] = time.sleep,
                 rng: random.Random | None = None):
        super().__init__(inner)
        if max_tries < 1:
            raise ValueError("max_tries must be at least 1")
        self.max_tries, self.base_delay_s, self.max_delay_s = max_tries, base_delay_s, max_delay_s
        self.timeout_s, self._sleep, self._rng = timeout_s, sleep, rng or random.Random()
        self.retries = 0

    def _attempt(self, kwargs: dict) -> list[Completion]:
        if self.timeout_s is None:
            return self.inner.complete(**kwargs)
        box: dict = {}

        def run() -> None:
            try:
                box["out"] = self.inner.complete(**kwargs)
            except BaseException as exc:  # handed to the waiting thread below
                box["exc"] = exc

        worker = threading.Thread(target=run, name="llm-call", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        if worker.is_alive():
            raise TimeoutError(f"no reply within {self.timeout_s:g} s")
        if "exc" in box:
            raise box["exc"]
        return box["out"]

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        kwargs = dict(messages=messages, n=n, temperature=temperature, seed=seed, max_tokens=max_tokens, stop=stop)
        for attempt in range(self.max_tries):
            try:
                return self._attempt(kwargs)
            except (LLMError, BudgetExceeded):
                raise  # already final (a replay error, a nested wrapper, a spent budget)
            except Exception as exc:
                if not is_transient(exc):
                    raise LLMError(f"{self.model}: {_reason(exc)} (not retried)") from exc
                if attempt + 1 == self.max_tries:
                    raise LLMError(f"{self.model}: gave up after {self.max_tries} tries: {_reason(exc)}") from exc
                self.retries += 1
                self._sleep(self._rng.uniform(0.0, min(self.max_delay_s, self.base_delay_s * 2 ** attempt)))
        raise AssertionError("unreachable")
