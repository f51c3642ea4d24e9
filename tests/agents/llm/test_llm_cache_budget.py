"""The response cache and the budget, alone and together."""

import threading
import time

import pytest
from llm_helpers import chat, prompt

from hifo.agents.llm.base import BudgetExceeded
from hifo.agents.llm.budget import BudgetedClient
from hifo.agents.llm.cache import CachedClient
from hifo.agents.llm.replay import ScriptedClient


def test_seeded_requests_hit_the_cache_unseeded_never_do(tmp_path):
    inner = ScriptedClient(["first", "second", "third", "fourth"], cost_per_completion=0.5)
    cache = CachedClient(inner, tmp_path / "c.sqlite")
    a = cache.complete(prompt("p"), seed=1)[0]
    b = cache.complete(prompt("p"), seed=1)[0]
    assert (a.text, a.cached, b.text, b.cached, b.cost_usd) == ("first", False, "first", True, 0.0)
    assert b.prompt_tokens == a.prompt_tokens and b.completion_tokens == a.completion_tokens
    assert cache.complete(prompt("p"), seed=2)[0].text == "second"  # another seed: another draw
    u1, u2 = cache.complete(prompt("p")), cache.complete(prompt("p"))
    assert [u1[0].text, u2[0].text] == ["third", "fourth"] and not u2[0].cached
    assert len(inner.calls) == 4
    assert cache.stats() == {"hits": 1, "misses": 2, "skipped": 2, "entries": 2}
    assert cache.is_cached(prompt("p"), seed=1) and not cache.is_cached(prompt("p"))
    cache.close()


def test_cache_persists_and_is_keyed_by_model(tmp_path):
    path = tmp_path / "c.sqlite"
    CachedClient(ScriptedClient(["kept"]), path).complete(chat("q"), n=2, seed=9)
    again = CachedClient(ScriptedClient(["new"]), path)
    assert [c.text for c in again.complete(chat("q"), n=2, seed=9)] == ["kept", "kept"]
    other = CachedClient(ScriptedClient(["other"], model="another-model"), path)
    assert other.complete(chat("q"), n=2, seed=9)[0].text == "other"
    assert (tmp_path / "c.sqlite-wal").exists()  # WAL mode: readers do not block the writer


def test_budget_stops_before_the_call_that_would_exceed_max_calls():
    inner = ScriptedClient(["x"])
    client = BudgetedClient(inner, max_calls=3)
    for i in range(3):
        client.complete(prompt(f"p{i}"), n=2)
    with pytest.raises(BudgetExceeded, match="max_calls=3"):
        client.complete(prompt("p3"))
    assert len(inner.calls) == 3
    u = client.usage
    assert (u.calls, u.completions, u.cache_hits) == (3, 6, 0)
    assert client.remaining_calls() == 0


def test_budget_stops_once_cost_or_tokens_are_spent():
    costly = BudgetedClient(ScriptedClient(["a b"], cost_per_completion=0.4), max_cost_usd=1.0)
    costly.complete(prompt("p"))
    costly.complete(prompt("p"), n=2)  # spent 1.2: the call that crossed the line completes
    with pytest.raises(BudgetExceeded, match="max_cost_usd"):
        costly.complete(prompt("p"))
    assert costly.usage.cost_usd == pytest.approx(1.2)
    wordy = BudgetedClient(ScriptedClient(["a b c"]), max_tokens=8)
    wordy.complete(prompt("one two"))  # 2 + 3 tokens
    wordy.complete(prompt("one two"))  # 10 tokens
    with pytest.raises(BudgetExceeded, match="max_tokens"):
        wordy.complete(prompt("one two"))


def test_cache_hits_are_free_even_when_the_budget_is_spent(tmp_path):
    inner = ScriptedClient(["x", "y"], cost_per_completion=1.0)
    client = BudgetedClient(CachedClient(inner, tmp_path / "c.sqlite"), max_calls=1, max_cost_usd=1.0)
    client.complete(prompt("p"), seed=5)
    for _ in range(3):
        assert client.complete(prompt("p"), seed=5)[0].cached
    with pytest.raises(BudgetExceeded):
        client.complete(prompt("p"), seed=6)
    u = client.usage
    assert (u.calls, u.cache_hits, u.cost_usd, len(inner.calls)) == (1, 3, 1.0, 1)


def test_concurrent_callers_cannot_overshoot_max_calls():
    def slow(p, i):
        time.sleep(0.05)
        return "ok"

    inner = ScriptedClient(slow)
    client = BudgetedClient(inner, max_calls=5)
    refused = []

    def worker(k):
        try:
            client.complete(prompt(f"p{k}"))
        except BudgetExceeded:
            refused.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(inner.calls) == 5 and len(refused) == 7 and client.usage.calls == 5


def test_unpriced_completions_are_counted_and_warned_about(caplog):
    class Unpriced(ScriptedClient):
        def complete(self, *a, **k):
            out = super().complete(*a, **k)
            for c in out:
                c.cost_known = False
            return out

    client = BudgetedClient(Unpriced(["x"]), max_cost_usd=1.0)
    client.complete(prompt("p"), n=2)
    client.complete(prompt("p"))
    assert client.usage.extra["unpriced_completions"] == 3
    assert sum("no known price" in r.message for r in caplog.records) == 1


def test_budget_rejects_negative_limits():
    with pytest.raises(ValueError):
        BudgetedClient(ScriptedClient(["x"]), max_calls=-1)
