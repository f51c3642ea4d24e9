"""Retries: transient failures are retried with growing, jittered waits; permanent ones are not."""

import random
import time

import pytest
from llm_helpers import prompt

from hifo.agents.llm.base import Completion, LLMError
from hifo.agents.llm.retry import RetryingClient, is_transient, rejects_request


class HTTPError(Exception):
    def __init__(self, status, msg="boom"):
        super().__init__(msg)
        self.status_code = status


class RateLimitError(Exception):
    pass


class AuthenticationError(Exception):
    status_code = 401


class Response:
    status_code = 502


class WrappedError(Exception):  # httpx-style: the status lives on .response
    response = Response()


class Flaky:
    """Fails with the given errors in turn, then answers."""

    model, style = "flaky", "chat"

    def __init__(self, *errors):
        self.errors, self.calls = list(errors), 0

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return [Completion("done", model=self.model)]


def _client(inner, **kw):
    waits = []
    return RetryingClient(inner, sleep=waits.append, rng=random.Random(0), **kw), waits


def test_transient_errors_are_retried_then_succeed():
    inner = Flaky(HTTPError(503), TimeoutError("slow"), RateLimitError("429 slow down"), ConnectionResetError())
    client, waits = _client(inner, max_tries=5, base_delay_s=1.0, max_delay_s=3.0)
    assert client.complete(prompt("p"))[0].text == "done"
    assert inner.calls == 5 and client.retries == 4
    caps = [1.0, 2.0, 3.0, 3.0]  # exponential, capped at max_delay_s
    assert len(waits) == 4 and all(0.0 <= w <= c for w, c in zip(waits, caps))


def test_auth_and_other_client_errors_are_not_retried():
    for exc in (AuthenticationError("bad key"), HTTPError(400, "bad request"), HTTPError(404)):
        inner = Flaky(exc)
        client, waits = _client(inner)
        with pytest.raises(LLMError, match="not retried") as info:
            client.complete(prompt("p"))
        assert inner.calls == 1 and waits == [] and info.value.__cause__ is exc
    assert str(info.value) == "flaky: HTTPError (HTTP 404): boom (not retried)"


def test_gives_up_with_a_readable_reason():
    inner = Flaky(*[HTTPError(500, "upstream\n  exploded")] * 3)
    client, waits = _client(inner, max_tries=3)
    with pytest.raises(LLMError) as info:
        client.complete(prompt("p"))
    assert str(info.value) == "flaky: gave up after 3 tries: HTTPError (HTTP 500): upstream exploded"
    assert inner.calls == 3 and len(waits) == 2


def test_a_call_that_hangs_times_out_and_is_retried():
    class Hangs(Flaky):
        def complete(self, *a, **k):
            self.calls += 1
            if self.calls == 1:
                time.sleep(2)
            return [Completion("late but fine")]

    inner = Hangs()
    client, _ = _client(inner, timeout_s=0.2)
    t0 = time.perf_counter()
    assert client.complete(prompt("p"))[0].text == "late but fine"
    assert inner.calls == 2 and time.perf_counter() - t0 < 1.5


def test_classification():
    assert is_transient(WrappedError()) and is_transient(HTTPError(429)) and is_transient(HTTPError(408))
    assert not is_transient(ValueError("x")) and not is_transient(AuthenticationError())
    auth_via_proxy = type("APIConnectionError", (Exception,), {"status_code": 401})()
    assert not is_transient(auth_via_proxy)  # a status, when present, outranks the class name
    assert rejects_request(HTTPError(400)) and not rejects_request(HTTPError(401))
