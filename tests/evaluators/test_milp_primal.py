"""hifo.evaluators.milp_primal: baselines score within their bands; the parent rejects forgeries."""

from __future__ import annotations

from functools import partial
import json
import time

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.milp_primal import HEURISTIC_CPU_S, HeuristicOverBudget, MILPPrimal, fingerprint
from evalkit import assert_figure, compile_entry


@pytest.fixture(scope="module")
def ev():
    return MILPPrimal()


compiled = partial(compile_entry, entry="primal_heuristic")


@pytest.fixture(scope="module")
def baseline_runs(ev):
    out = {}
    for name in ("lp_fix_integral", "lp_hint_only"):
        h = compiled(ev.baselines[name])
        start = time.process_time()
        sols = [json.loads(json.dumps(ev.solve(h, inst))) for inst in ev.load_instances("train")]
        out[name] = (sols, time.process_time() - start)
    return out


def test_declaration(ev):
    assert ev.name == "milp_primal" and ev.direction == "minimize"
    assert ev.primary_metric == "primal_integral" and set(ev.instance_sets) == {"train", "test", "test_published"}
    assert ev.secret_sets == ("test",)
    assert "def primal_heuristic(" in ev.baseline_source()
    insts = ev.load_instances("train")
    assert {i["milp"].family for i in insts} == {"setcover", "cauctions", "indset", "intcover", "gisp",
                                                      "fcmnf"}
    assert any((~i["milp"].is_int).any() for i in insts)  # a family with continuous variables


def test_baselines_score_their_stored_figures_exactly(ev, baseline_runs):
    """The budget is HiGHS work ticks: the stored figures are reproduced to their rounding on any machine."""
    insts = ev.load_instances("train")
    assert ev.fitness_rtol == 0.0 and not ev.load_dependent
    for name, (sols, cpu) in baseline_runs.items():
        per = [ev.score(i, s) for i, s in zip(insts, sols)]
        agg = ev.aggregate(per)
        assert_figure(ev, agg["primal_integral"], ev.reference_figures[name]["train"]["primal_integral"],
                      "primal_integral", name)
        assert all(0.0 <= m["primal_gap"] <= 1.0 for m in per)
        assert all(0.0 <= m["primal_integral"] <= 1.0 for m in per)
        assert all(t >= 0 for s in sols for t, _ in s["trajectory"])  # ticks (the first incumbent may come late)
    fixed = [s["n_fixed"] for s in baseline_runs["lp_fix_integral"][0]]
    assert sum(fixed) > 0 and all(s["n_fixed"] == 0 for s in baseline_runs["lp_hint_only"][0])


def test_score_rejects_forged_solutions(ev, baseline_runs):
    inst = ev.load_instances("train")[0]  # set cover
    good = baseline_runs["lp_fix_integral"][0][0]
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, {**good, "x": [0.0] * inst["milp"].n_vars})  # uncovered rows
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, {**good, "x": [0.5] * inst["milp"].n_vars})  # fractional
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, {**good, "x": good["x"][:-1]})
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, {"x": None})
    # a forged trajectory claiming a perfect early solution cannot beat the verified point
    honest = ev.score(inst, good)
    forged = ev.score(inst, {**good, "trajectory": [[0.0, -1e9]]})
    assert forged["primal_gap"] == honest["primal_gap"]
    assert forged["primal_integral"] == pytest.approx(honest["primal_gap"])


def _burner(seconds):
    def slow(x_lp, reduced_cost, c, A, row_lo, row_hi, lb, ub, is_int):
        end = time.process_time() + seconds  # CPU time: burn it
        while time.process_time() < end:
            pass
        return np.round(x_lp), np.zeros_like(x_lp)
    return slow


def test_heuristic_time_beyond_the_free_allowance_is_charged_and_capped(ev):
    inst = min(ev.load_instances("train"), key=lambda i: i["milp"].n_vars)  # the small general-integer cover
    fast = ev.solve(_burner(0.0), inst)
    assert fast["trajectory"][0][0] < 5  # no charge: HiGHS starts at tick 0 (plus its own first ticks)
    slow = ev.solve(_burner(0.3), inst)  # 0.25 s beyond the free 0.05 s, charged at the calibrated rate
    charge = 0.25 * inst["work_per_cpu_s"]
    assert all(t >= charge for t, _ in slow["trajectory"])
    with pytest.raises(HeuristicOverBudget, match="allowance is 1 s"):
        ev.solve(_burner(HEURISTIC_CPU_S + 0.05), inst)


def test_work_budget_gives_identical_trajectories(ev):
    """Two runs, the second beside a CPU hog: the same ticks, the same objectives (the wall clock differs)."""
    import subprocess
    import sys

    inst = min(ev.load_instances("train"), key=lambda i: i["milp"].n_vars)
    h = compiled(ev.baselines["lp_hint_only"])
    first = ev.solve(h, inst)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        second = ev.solve(h, inst)
    finally:
        hog.kill()
    assert first == second


def test_stored_references_match_generators(ev):
    from hifo.evaluators.milp_primal import best_known
    refs = best_known()
    for s in ("train", "test_published"):  # the published sets ("test" is a draw)
        for inst in ev.load_instances(s):
            assert refs[inst["milp"].name]["fingerprint"] == fingerprint(inst["milp"])
            assert refs[inst["milp"].name]["bound"] <= inst["best_known"] + 1e-6


def test_the_test_set_is_a_secret_draw_with_rule_budgets_and_test_published_is_the_published_one(ev):
    """issue 28: "test" is drawn per evaluator object (the same generators and sizes, secret seeds); each drawn
    instance's budget is its family's median published budget; the published set stays as test_published, and as
    "test" with public_seeds, with the stored budgets and references."""
    import statistics

    from hifo.evaluators._milp_sets import family_budgets

    published = ev.load_instances("test_published")
    public = MILPPrimal()
    public.public_seeds = True
    assert [i["milp"].name for i in public.load_instances("test")] == [i["milp"].name for i in published]
    assert all(i["best_known"] is not None for i in published)
    drawn = ev.load_instances("test")
    assert [i["milp"].family for i in drawn] == [i["milp"].family for i in published]
    assert all("secret" in i["milp"].name and str(i["milp"].name).count("_s") == 1 for i in drawn)  # no seed named
    assert {fingerprint(i["milp"]) for i in drawn}.isdisjoint(fingerprint(i["milp"]) for i in published)
    assert [fingerprint(i["milp"]) for i in ev.load_instances("test")] == [fingerprint(i["milp"]) for i in drawn]
    other = MILPPrimal().load_instances("test")  # another object, another key, another draw
    assert all(fingerprint(a["milp"]) != fingerprint(b["milp"]) for a, b in zip(drawn, other))
    for family in {i["milp"].family for i in published}:  # the rule: the family's median published budget
        median = statistics.median(i["work_limit"] for i in published if i["milp"].family == family)
        assert family_budgets()[family] == median
        assert {(i["work_limit"], i["work_per_cpu_s"], i["reference_work"]) for i in drawn
                if i["milp"].family == family} == {(median, median / 2.0, 6 * median)}
    assert all(i["best_known"] is None for i in drawn)  # computed at the first score (best_known_of)
    for a, b in zip(drawn, published):  # the published sizes (set cover's and the auctions' variables are fixed)
        if a["milp"].family in ("setcover", "cauctions", "indset"):
            assert a["milp"].n_vars == b["milp"].n_vars


def test_a_drawn_instance_s_reference_is_highs_on_the_work_clock_computed_once(ev):
    """The reference of a drawn instance: HiGHS alone for ``reference_work`` ticks, the same number on every run
    (a deterministic clock), cached per instance data; a solution better than it counts as gap 0."""
    from hifo.evaluators import _milp_sets

    instance = dict(min(ev.load_instances("test"), key=lambda i: i["milp"].n_vars), reference_work=8.0)  # short
    first = _milp_sets.best_known_of(instance)
    assert first == _milp_sets.reference_objective(instance["milp"], 8.0)  # a fresh solve: the same number
    calls = []
    real = _milp_sets.reference_objective
    try:
        _milp_sets.reference_objective = lambda *a: calls.append(a) or real(*a)
        assert _milp_sets.best_known_of(instance) == first and not calls  # cached
    finally:
        _milp_sets.reference_objective = real
    from hifo.problems.milp import check_solution, primal_gap

    h = compiled(ev.baselines["lp_hint_only"])
    solution = json.loads(json.dumps(ev.solve(h, instance)))
    obj = instance["milp"].objective(check_solution(instance["milp"], solution["x"]))
    assert ev.score(instance, solution)["primal_gap"] == primal_gap(obj, min(obj, first))
