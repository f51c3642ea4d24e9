"""End-to-end searches with the scripted model: graph, sandbox, run store, knowledge base."""

import json
import math

import pytest

from hifo.agents.config import RunConfig
from hifo.agents.graph import RunError, start_run
from hifo.agents.rundb import RunStore
from hifo.knowledge_base import KnowledgeBase
from hifo.sandbox import LocalExecutor


def _cfg(tmp_path, name="run", **kw):
    base = dict(problem="bpp_online", model="fake", generations=2, population=3, offspring=4, hyper_lambda=2,
                seed=7, init_samples=8, kb=str(tmp_path / "kb.sqlite"), run_dir=str(tmp_path / name), workers=2, test_set="train")
    base.update(kw)
    return RunConfig(**base)


def test_search_end_to_end(tmp_path, fake_model):
    with LocalExecutor(max_workers=2) as ex:
        run_dir, summary = start_run(_cfg(tmp_path), client=fake_model, executor=ex)
    assert summary["stop_reason"] == "2 generation(s) done"
    # Best Fit is among the baselines; the search can only keep or improve on it (mu+lambda)
    assert summary["best"]["objective"] <= summary["baselines"]["best_fit"] + 1e-12
    assert (run_dir / "best.py").read_text().count("def priority") == 1
    store = RunStore(run_dir / "run.sqlite")
    try:
        cands = store.candidates()
        statuses = {c.status for c in cands}
        assert "pending" not in statuses and "evaluated" in statuses
        failed = [c for c in cands if c.status == "evaluated" and not c.feasible]
        assert failed and all(c.error for c in failed)  # NaN / exception candidates failed with a reason
        assert any("finite" in c.error for c in failed)  # the NaN heuristic, caught with its reason
        assert [c for c in cands if c.status == "invalid"]  # "I cannot write code today."
        assert [f["generation"] for f in store.foresight()] == [0, 1, 2]
        assert all("stagnation" in f["numbers"] for f in store.foresight())
        ops = {c.operator for c in cands}
        assert "i1" in ops and ops & {"e1", "e2", "m1", "m2", "m3"}
        # later prompts carry recalled principles, and candidates record which
        later = store.prompts(2)
        assert later and any(p["principle_ids"] for p in later)
        assert any("Design principles that helped" in p["messages"][-1]["content"] for p in later
                   if p["operator"] != "distill")
    finally:
        store.close()
    kb = KnowledgeBase(tmp_path / "kb.sqlite")
    principles = kb.list()
    assert principles, "distill wrote nothing"
    sources = {p.source for p in principles}
    assert "model" in sources
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1]["kind"] == "finished"


def test_principles_are_credited_and_recalled_across_problems(tmp_path, fake_model, make_fake_model):
    with LocalExecutor(max_workers=2) as ex:
        start_run(_cfg(tmp_path, "bpp"), client=fake_model, executor=ex)
    kb = KnowledgeBase(tmp_path / "kb.sqlite")
    assert any(p.uses > 0 for p in kb.list()), "no principle was credited"
    bpp_ids = {p.id for p in kb.list(problem="bpp_online")}
    tsp_reply = ("```python\nimport numpy as np\ndef select_next_node(current_node, destination_node, unvisited_nodes,"
                 " distance_matrix):\n    d = distance_matrix[current_node, unvisited_nodes]\n"
                 "    return int(unvisited_nodes[np.argmin(d * 1.0)])\n```")
    with LocalExecutor(max_workers=2) as ex:
        run_dir, _ = start_run(_cfg(tmp_path, "tsp", problem="tsp_construct", generations=1, population=2,
                                    offspring=2, hyper_lambda=0), client=make_fake_model([tsp_reply]), executor=ex)
    store = RunStore(run_dir / "run.sqlite")
    try:
        recalled = {pid for p in store.prompts() for pid in p["principle_ids"]}
        assert recalled & bpp_ids, "the TSP run did not recall principles learned on bin packing"
        first = next(p for p in store.prompts(0) if p["principle_ids"])
        shown = first["messages"][-1]["content"]
        assert any(kb.get(pid).text in shown for pid in set(first["principle_ids"]) & bpp_ids)
    finally:
        store.close()


def test_existing_run_dir_is_refused(tmp_path, fake_model):
    with LocalExecutor(max_workers=2) as ex:
        start_run(_cfg(tmp_path, generations=0), client=fake_model, executor=ex)
        with pytest.raises(RunError, match="already holds a run"):
            start_run(_cfg(tmp_path, generations=0), client=fake_model, executor=ex)


def test_evaluation_budget_stops_cleanly(tmp_path, fake_model):
    with LocalExecutor(max_workers=2) as ex:
        run_dir, summary = start_run(_cfg(tmp_path, max_evaluations=6, generations=5), client=fake_model, executor=ex)
    assert "evaluation budget" in summary["stop_reason"]
    store = RunStore(run_dir / "run.sqlite")
    assert store.count_evaluated() == 6
    store.close()
    assert math.isfinite(summary["best"]["objective"])


def test_each_prompt_gets_its_own_principles_a_control_arm_and_the_regime(tmp_path, fake_model):
    with LocalExecutor(max_workers=2) as ex:
        start_run(_cfg(tmp_path, "warm", recall_k=2), client=fake_model, executor=ex)
        run_dir, summary = start_run(_cfg(tmp_path, "run2", recall_k=2), client=fake_model, executor=ex)
    store = RunStore(run_dir / "run.sqlite")
    try:
        prompts = [p for p in store.prompts() if p["operator"] != "distill"]
        subsets = [tuple(p["principle_ids"]) for p in prompts]
        assert any(not s for s in subsets), "no control prompt"
        assert all(len(s) <= 2 for s in subsets)
        assert len({s for s in subsets if s}) >= 2, "every prompt got the same principles"
        regimes = {f["generation"]: f["regime"] for f in store.foresight()}
        from hifo.agents.foresight import regime_instruction
        for p in prompts:
            text = p["messages"][-1]["content"]
            assert regime_instruction(regimes[p["generation"]], p["operator"]) in text
        # credit is centred per generation and recorded with the control arm's mean
        arms = [store.marker(f"credited:{g}") for g in range(3)]
        assert sum(a["control_n"] for a in arms) >= 1 and sum(a["principled_n"] for a in arms) >= 1
    finally:
        store.close()
    kb = KnowledgeBase(tmp_path / "kb.sqlite")
    used = [p for p in kb.list(status=None) if p.credit_n]
    assert used and len({round(p.credit_sum, 9) for p in used}) > 1
    assert summary["principles_retired"] <= len(used) // 2
