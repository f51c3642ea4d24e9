"""hifo.evaluators.hnsw_delete: baselines reach their figures; the parent's replay catches forgeries."""

from __future__ import annotations

from functools import partial
import json

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.hnsw_delete import HNSWDelete
from hifo.problems.hnsw import RULES
from evalkit import compile_entry, run_instance


@pytest.fixture(scope="module")
def ev():
    return HNSWDelete()


compiled = partial(compile_entry, entry="repair")


run = run_instance


def test_declaration(ev):
    assert ev.name == "hnsw_delete" and ev.direction == "maximize" and ev.primary_metric == "recall"
    assert set(ev.baselines) == {"local_reconnect", "no_patch", "spatch", "spatch_random"}
    from hifo.evaluators.registry import get_evaluator
    assert isinstance(get_evaluator("hnsw_delete"), HNSWDelete)


def test_train_reference_figures(ev):
    inst = ev.load_instances("train")
    for name, figures in ev.reference_figures.items():
        agg = ev.aggregate([run(ev, compiled(ev.baselines[name]), i) for i in inst])
        assert agg["recall"] == pytest.approx(figures["train"]["recall"], abs=1e-9), name
        assert agg["edges"] == figures["train"]["edges"], name
    assert ev.reference_figures["no_patch"]["train"]["recall"] < ev.reference_figures["spatch"]["train"]["recall"]


@pytest.mark.parametrize("name", ["local_reconnect", "no_patch", "spatch", "spatch_random"])
def test_baseline_sources_are_the_library_rules(ev, name):
    inst = ev.load_instances("train")[0]
    assert ev.solve(compiled(ev.baselines[name]), inst) == ev.solve(RULES[name], inst)


def test_forged_edges_are_refused(ev):
    inst = ev.load_instances("train")[0]
    sol = ev.solve(compiled(ev.baselines["spatch"]), inst)
    # an edge to a node that was never a neighbour of the deleted node
    forged = json.loads(json.dumps(sol))
    p, layer, edges = next(d for d in forged["decisions"] if d[2])
    far = next(v for v in range(len(inst.X)) if v not in {e for pair in edges for e in pair} and v != p)
    edges[0] = [edges[0][0], far]
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, forged)
    # more edges than the free slots allow
    greedy = json.loads(json.dumps(sol))
    d = next(d for d in greedy["decisions"] if d[2])
    d[2] = d[2] + d[2]
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, greedy)
    # a decision for a node that was not deleted
    extra = json.loads(json.dumps(sol))
    extra["decisions"].append([int(np.setdiff1d(np.arange(len(inst.X)), inst.order)[0]), 0, []])
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, extra)
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, {"graph": []})


def test_slot_sees_only_arrays_and_bad_returns_fail(ev):
    inst = ev.load_instances("train")[0]
    seen = set()

    def spy(**kw):
        seen.update(type(v).__name__ for v in kw.values())
        return [[] for _ in range(len(kw["d_p"]))]

    ev.solve(spy, inst)
    assert seen <= {"ndarray", "int"}
    with pytest.raises(ValueError):
        ev.solve(lambda **kw: [[-1]] * len(kw["d_p"]), inst)
    with pytest.raises(ValueError):
        ev.solve(lambda **kw: [], inst)


@pytest.mark.slow
def test_test_set_figures(ev):
    inst = ev.load_instances("test")
    for name, figures in ev.reference_figures.items():
        agg = ev.aggregate([run(ev, compiled(ev.baselines[name]), i) for i in inst])
        assert agg["recall"] == pytest.approx(figures["test"]["recall"], abs=1e-9), name


@pytest.mark.slow
def test_through_the_sandbox(ev):
    from hifo.agents.evaluation import CandidateEvaluator
    from hifo.sandbox import LocalExecutor

    with LocalExecutor(max_workers=1) as executor:
        score = CandidateEvaluator(ev, "train", executor).evaluate(ev.baselines["spatch"])
    assert score.feasible, score.error
    assert score.objective == pytest.approx(ev.reference_figures["spatch"]["train"]["recall"])
