"""Model and sandbox busy at the same time (hifo.agents.pipeline): a generation's wall time is close
to the larger of model time and evaluation time, not their sum; replay and resume stay exact."""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from hifo.agents.config import RunConfig
from hifo.agents.graph import resume_run, start_run
from hifo.agents.llm.factory import make_client
from hifo.agents.llm.replay import RecordingClient
from hifo.agents.pipeline import union_length
from hifo.agents.rundb import RunStore
from hifo.sandbox import LocalExecutor


def _fake_model_class():
    """tests/agents/conftest.py's FakeModel, loaded by path (another conftest may own the name)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("agents_conftest", Path(__file__).parent / "conftest.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.FakeModel


FakeModel = _fake_model_class()

DELAY = 0.35  # seconds per model reply and per evaluation: far above the real work on the bin-packing set


class SlowModel(FakeModel):
    """One reply at a time (as one local model), each taking DELAY seconds."""

    def __init__(self, fail_on_call: int | None = None):
        super().__init__()
        self._lock = threading.Lock()
        self.fail_on_call = fail_on_call

    def complete(self, messages, **kw):
        with self._lock:
            if self.fail_on_call is not None and self.calls + 1 == self.fail_on_call:
                raise KeyboardInterrupt("killed mid-propose")
            time.sleep(DELAY)
            return super().complete(messages, **kw)


class DistinctSlowModel(SlowModel):
    """SlowModel whose every offspring reply is a valid heuristic of its own shape (a pure function of
    prompt and seed): the overlap test needs evaluations, not the scripted model's duplicates."""

    def complete(self, messages, **kw):
        out = super().complete(messages, **kw)
        if "one principle per line" in messages[-1]["content"]:
            return out
        key = f"{kw.get('seed')}|{messages[-1]['content']}".encode()
        terms = " - 0.001 * bins" * (1 + int(hashlib.sha256(key).hexdigest(), 16) % 40)
        text = ("{Prefer tight fits.}\n```python\nimport numpy as np\n\ndef priority(item, bins):\n"
                f"    gap = bins - item\n    return -gap{terms}\n```")
        return [type(c)(text, c.prompt_tokens, c.completion_tokens, model=c.model) for c in out]


class SlowExecutor:
    """Runs each job in the real sandbox, one at a time, then waits DELAY seconds more."""

    def __init__(self, inner: LocalExecutor):
        self.inner = inner
        self.pool = ThreadPoolExecutor(1)

    def submit(self, job):
        def run():
            res = self.inner.submit(job).result()
            time.sleep(DELAY)
            return res

        return self.pool.submit(run)

    def cancel(self, fut, reason="cancelled"):
        return fut.cancel()

    def shutdown(self, wait=True, *, cancel_futures=False):
        self.pool.shutdown(wait=wait, cancel_futures=cancel_futures)


COMMON = dict(problem="bpp_online", generations=1, population=3, offspring=6, init_samples=4, hyper_lambda=0,
              seed=3, workers=1, test_set="train", repair=False)


def _records(run_dir):
    """The run's candidates and prompts in the order they were written."""
    store = RunStore(run_dir / "run.sqlite")
    try:
        cands = [(c.id, c.generation, c.operator, c.parents, c.code, c.status, c.fitness, c.error)
                 for c in store.candidates(order="created")]
        prompts = [(p["generation"], p["operator"], p["messages"], p["reply"]) for p in store.prompts()]
        return cands, prompts, store.timings()
    finally:
        store.close()


def test_union_length_counts_overlaps_once():
    assert union_length([]) == 0
    assert union_length([(0, 1), (0.5, 2), (3, 4)]) == pytest.approx(3.0)
    assert union_length([(0, 5), (1, 2)]) == pytest.approx(5.0)


def test_wall_close_to_the_larger_of_model_and_evaluation_time(tmp_path):
    with LocalExecutor(max_workers=1) as inner:
        ex = SlowExecutor(inner)
        try:
            run_dir, _ = start_run(RunConfig(model="fake", kb=str(tmp_path / "kb.sqlite"),
                                             run_dir=str(tmp_path / "run"), **COMMON), client=DistinctSlowModel(), executor=ex)
        finally:
            ex.shutdown()
    timings = _records(run_dir)[2]
    assert [t["generation"] for t in timings] == [0, 1]
    for t in timings:
        m, e, w = t["model_s"], t["eval_s"], t["wall_s"]
        assert t["model_calls"] >= 3 and t["evaluations"] >= 3, t
        assert m >= 3 * DELAY and e >= 3 * DELAY, t
        assert w >= max(m, e) - 1e-3, t
        # one after the other the wall would be m + e; overlapped it is at most the larger plus one step
        assert w < max(m, e) + 2.5 * DELAY, t
        assert w < 0.85 * (m + e), t
        assert t["overlap_s"] > 2 * DELAY, t
        assert t["resumed"] is False
    # shown by `hifo show` and by the main-job benchmark's summary
    from rich.console import Console

    from benchmarks.main_job import summarise
    from hifo.agents.report import show_run

    console = Console(record=True, width=200)
    show_run(run_dir, console=console)
    assert "time per generation" in console.export_text()
    assert summarise(run_dir)["time_per_generation"]["1"]["wall_s"] == timings[1]["wall_s"]


def test_replay_of_an_overlapped_run_writes_the_same_records_in_the_same_order(tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    common = {**COMMON, "repair": True, "hyper_lambda": 2, "generations": 2, "workers": 2}
    model = FakeModel()
    with LocalExecutor(max_workers=2) as ex:
        a, _ = start_run(RunConfig(model="fake", kb=str(tmp_path / "kb1.sqlite"), run_dir=str(tmp_path / "a"),
                                   **common), client=RecordingClient(model, cassette), executor=ex)
        b, _ = start_run(RunConfig(model=f"replay:{cassette}", kb=str(tmp_path / "kb2.sqlite"),
                                   run_dir=str(tmp_path / "b"), **common), client=make_client(f"replay:{cassette}"),
                         executor=ex)
    ra, rb = _records(a), _records(b)
    assert len(ra[0]) > 10
    assert ra[0] == rb[0]
    assert ra[1] == rb[1]


def test_a_run_killed_mid_propose_resumes_to_the_same_records(tmp_path):
    common = {**COMMON, "generations": 2, "hyper_lambda": 2}
    with LocalExecutor(max_workers=2) as ex:
        whole, _ = start_run(RunConfig(model="fake", kb=str(tmp_path / "kb1.sqlite"), run_dir=str(tmp_path / "a"),
                                       **common), client=FakeModel(), executor=ex)
        calls = FakeModel()
        start_run(RunConfig(model="fake", kb=str(tmp_path / "kb0.sqlite"), run_dir=str(tmp_path / "probe"),
                            **{**common, "generations": 0}), client=calls, executor=ex)
        # killed on the second model call of generation 1: part of its batch is recorded, some evaluating
        killer = SlowModel(fail_on_call=calls.calls + 2)
        killer_dir = tmp_path / "b"
        with pytest.raises(KeyboardInterrupt):
            start_run(RunConfig(model="fake", kb=str(tmp_path / "kb2.sqlite"), run_dir=str(killer_dir), **common),
                      client=killer, executor=ex)
        half = _records(killer_dir)[0]
        assert any(c[1] == 1 for c in half), "the kill came before generation 1 recorded anything"
        _, summary = resume_run(killer_dir, client=FakeModel(), executor=ex)
    assert summary["stop_reason"] == "2 generation(s) done"
    ra, rb = _records(whole), _records(killer_dir)
    assert [c[0] for c in ra[0]] == [c[0] for c in rb[0]]  # same ids in the same order
    assert ra[0] == rb[0]
    assert [t["generation"] for t in rb[2]] == [0, 1, 2]
