"""Budgets end to end through `hifo run`: whichever is spent first stops the run promptly, keeps every
completed evaluation and still writes the report (saying what it skipped)."""

import json
import re
import time

from typer.testing import CliRunner

from hifo.agents.cli import app
from hifo.agents.llm.base import Completion
from hifo.agents.rundb import RunStore

runner = CliRunner()
SPIN = "```python\ndef priority(item, bins):\n    while True:\n        pass\n```"  # runs until killed


class PricedModel:
    """The scripted chat model of the agent tests, at ``price`` USD per completion, optionally slow."""

    style, model = "chat", "priced"

    def __init__(self, inner, price=0.0, delay_s=0.0, reply=None):
        self.inner, self.price, self.delay_s, self.reply = inner, price, delay_s, reply
        self.calls = 0

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.calls += 1
        t0 = time.perf_counter()
        time.sleep(self.delay_s)
        out = self.inner.complete(messages, n=n, temperature=temperature, seed=seed, max_tokens=max_tokens, stop=stop)
        latency = time.perf_counter() - t0  # as the real clients time their calls
        return [Completion(self.reply or c.text, c.prompt_tokens, c.completion_tokens, cost_usd=self.price,
                           model=self.model, latency_s=latency) for c in out]


def _run(tmp_path, *flags):
    args = ["run", "-p", "bpp_online", "--model", "fake/priced", "-g", "3", "-n", "3", "--offspring", "3",
            "--seed", "2", "--kb", str(tmp_path / "kb.sqlite"), "--run-dir", str(tmp_path / "run"), "--test-set", "or3",
            "--workers", "2", "--no-check", *flags]  # counts the run's own calls: no pre-flight call
    t0 = time.perf_counter()
    res = runner.invoke(app, args)
    elapsed = time.perf_counter() - t0
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    store = RunStore(tmp_path / "run" / "run.sqlite")
    try:
        cands = store.candidates()
    finally:
        store.close()
    return res, summary, cands, elapsed


def test_max_calls_stops_mid_generation_and_the_report_is_written(tmp_path, fake_model, fake_backend):
    model = fake_backend(PricedModel(fake_model))
    res, summary, cands, _ = _run(tmp_path, "--max-calls", "2")
    assert model.calls == 2 and summary["model_usage"]["calls"] == 2
    assert "max_calls=2" in summary["stop_reason"] and "max_calls=2" in res.output
    # stopped inside generation 0 (3 initial prompts, 2 allowed); what the 2 replies gave was evaluated
    assert summary["generations"] == 1
    assert {c.generation for c in cands} == {0} and not [c for c in cands if c.status == "pending"]
    offspring = [c for c in cands if c.operator != "baseline"]
    assert len(offspring) == 2
    assert summary["best"]["test"]["set"] == "or3" and summary["best"]["test"]["objective"] is not None


def test_max_cost_stops_the_run_when_spent(tmp_path, fake_model, fake_backend):
    model = fake_backend(PricedModel(fake_model, price=0.01))
    res, summary, cands, _ = _run(tmp_path, "--max-cost", "0.025")
    # the cost of a call is known only after it: the 3 concurrent initial calls all ran, nothing after
    assert model.calls == 3 and abs(summary["model_usage"]["cost_usd"] - 0.03) < 1e-9
    assert "max_cost_usd=0.025" in summary["stop_reason"]
    assert summary["generations"] == 1 and {c.generation for c in cands} == {0}
    assert not [c for c in cands if c.status == "pending"]
    assert summary["best"]["test"]["objective"] is not None
    assert "done" in res.output and "results:" in res.output


def test_max_wall_cancels_running_evaluations_and_keeps_time_for_the_test_set(tmp_path, fake_model, fake_backend):
    # every offspring spins until the sandbox kills it (30 s); the budget is 4 s
    fake_backend(PricedModel(fake_model, reply=SPIN))
    res, summary, cands, elapsed = _run(tmp_path, "--max-wall", "4")
    assert elapsed < 20, elapsed  # far less than one spinning candidate's own 30 s limit
    assert summary["stop_reason"].startswith("wall-time budget (4 s) spent")
    cancelled = [c for c in cands if c.operator != "baseline" and c.status != "duplicate"]
    assert cancelled and all(c.status == "invalid" and "not evaluated: wall-time budget" in c.error
                             for c in cancelled)
    # the baselines finished before the deadline: kept, and the report's best is one of them
    base = [c for c in cands if c.operator == "baseline"]
    assert base and all(c.status == "evaluated" for c in base)
    assert summary["best"]["id"] in {c.id for c in base}
    # the last second (a quarter of the budget) was kept for the test set: its evaluation started (on a loaded
    # machine it may still be cut off, and then says so)
    test = summary["best"]["test"]
    assert test.get("objective") is not None or "during the test-set evaluation" in test["skipped"], test
    assert "not evaluated" in res.output


def test_max_wall_stops_waiting_for_slow_model_calls(tmp_path, fake_model, fake_backend):
    fake_backend(PricedModel(fake_model, delay_s=15.0))
    res, summary, cands, elapsed = _run(tmp_path, "--max-wall", "2")
    assert elapsed < 12, elapsed  # did not wait for the 15 s replies
    assert summary["stop_reason"].startswith("wall-time budget (2 s) spent")
    assert not [c for c in cands if c.operator != "baseline"]  # no reply arrived in time
    assert not [c for c in cands if c.status == "pending"]
    assert (tmp_path / "run" / "summary.json").exists() and "results:" in res.output


def test_max_wall_keeps_time_for_the_test_set(tmp_path, fake_model, fake_backend):
    """Slow model calls would eat the whole budget; the search stops early enough that the best candidate is
    still scored on the held-out set (the reserve: 3x a baseline's train evaluation + 2 s, at most a quarter)."""
    fake_backend(PricedModel(fake_model, delay_s=2.0))
    res, summary, cands, elapsed = _run(tmp_path, "--max-wall", "24")
    assert "kept for the test set" in summary["stop_reason"], summary["stop_reason"]
    # the reserve counts a model call that may still be in flight at the search's deadline (2 s here): without it
    # a fresh clone's run once left the test set 0.7 s of a 3 s reserve
    kept = float(re.search(r"the last (\d+) s kept", summary["stop_reason"]).group(1))
    assert kept >= 4, summary["stop_reason"]
    assert summary["best"]["test"]["set"] == "or3" and summary["best"]["test"].get("objective") is not None, summary["best"]
    assert elapsed < 24 + 8, elapsed
