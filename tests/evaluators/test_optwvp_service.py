"""hifo.evaluators.optwvp_service: stored routes and LP optima, measured baselines, trusted checks."""

from __future__ import annotations

from functools import partial
import inspect

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.optwvp_service import OPTWVPService
from hifo.problems.optwvp import optimal_service_fast, optimal_service_lp
from evalkit import compile_entry, run_set


@pytest.fixture(scope="module")
def ev():
    return OPTWVPService()


compiled = partial(compile_entry, entry="allocate_service")


def evaluate(ev, heuristic, instance_set):
    return run_set(ev, heuristic, instance_set)[1]


def sto(profit_rate, travel, tw_open, tw_close, horizon):
    """The paper's STO rule written against the slot's signature (what the agent may find)."""
    k = len(profit_rate)
    d = np.zeros(k)
    latest = np.append(tw_close, horizon)
    for i in np.argsort(-profit_rate, kind="stable"):
        s, start = 0.0, np.zeros(k)
        for j in range(k):
            s = max(s + travel[j] + (d[j - 1] if j else 0.0), tw_open[j])
            start[j] = s
        room, reach = tw_close[i] - tw_open[i], start[i]
        for m in range(i + 1, k + 1):
            reach += travel[m] + (d[m - 1] if m - 1 > i else 0.0)
            room = min(room, latest[m] - reach)
        d[i] = max(0.0, room)
    return d


def test_declaration(ev):
    assert ev.name == "optwvp_service" and ev.direction == "minimize"
    params = list(inspect.signature(compiled(ev.baseline_source())).parameters)
    assert params == ["profit_rate", "travel", "tw_open", "tw_close", "horizon"]


def test_stored_lp_optima_match_both_solvers(ev):
    train, test = ev.load_instances("train"), ev.load_instances("test_published")
    assert len(train) == 32 and len(test) == 100
    for task in train[:12]:
        assert optimal_service_lp(task.instance, task.route)[1] == pytest.approx(task.lp_optimum, rel=1e-7)
        assert optimal_service_fast(task.instance, task.route)[1] == pytest.approx(task.lp_optimum, rel=1e-7)


@pytest.mark.parametrize("baseline, instance_set", [  # "test" is a secret draw: its figure is test_published's
    (b, s) for b, figs in OPTWVPService.reference_figures.items() for s in figs if s != "test"])
def test_baselines_reach_their_reference_figures(ev, baseline, instance_set):
    got = evaluate(ev, compiled(ev.baselines[baseline]), instance_set)
    for metric, value in ev.reference_figures[baseline][instance_set].items():
        assert got[metric] == pytest.approx(value, abs=0.01), (baseline, instance_set, metric)
    assert got["gap_percent"] > 0.5


def test_the_test_figures_are_the_published_ones(ev):
    for figs in OPTWVPService.reference_figures.values():
        assert figs.get("test") == figs.get("test_published")
    public = OPTWVPService()
    public.public_seeds = True  # the published seeds, as before the test set was drawn from a secret
    assert [(t.name, t.route, t.lp_optimum) for t in public.load_instances("test")] == \
        [(t.name, t.route, t.lp_optimum) for t in ev.load_instances("test_published")]


def test_the_test_set_is_drawn_from_a_secret_with_exact_optima(monkeypatch):
    """Two instances of the draw (the whole set costs about 25-30 s of CPU): per object, secret, each with the
    MILP-optimal and the greedy route and their LP optima computed at draw time, which STO matches."""
    from hifo.evaluators import optwvp_route
    from hifo.problems.optwvp import construct_route, density_scorer

    small = {"test": [("optwvp20_seed2000", 20, 2000), ("optwvp50_seed2100", 50, 2100)]}
    monkeypatch.setattr(optwvp_route, "instance_specs", lambda: small)
    a, b = OPTWVPService(), OPTWVPService()
    ta, tb = a.load_instances("test"), b.load_instances("test")
    assert [t.name for t in ta] == ["optwvp20_secret0/route0", "optwvp20_secret0/route1",
                                    "optwvp50_secret1/route0", "optwvp50_secret1/route1"]
    assert not np.array_equal(ta[0].instance.profit, tb[0].instance.profit)
    assert a.load_instances("test")[0] is ta[0]  # drawn once per object
    for best, greedy in (ta[:2], ta[2:]):
        assert best.instance is greedy.instance
        assert greedy.route == tuple(construct_route(greedy.instance, density_scorer)[0])
        assert best.lp_optimum >= greedy.lp_optimum - 1e-6  # the first route is the MILP optimum
    for task in ta:
        assert optimal_service_fast(task.instance, task.route)[1] == pytest.approx(task.lp_optimum, rel=1e-7)
    assert evaluate(a, sto, "test")["gap_percent"] == pytest.approx(0.0, abs=1e-6)


def test_the_optimal_rule_closes_the_gap(ev):
    got = evaluate(ev, sto, "train")
    assert got["gap_percent"] == pytest.approx(0.0, abs=1e-6)


def test_score_rejects_infeasible_service_times(ev):
    task = max(ev.load_instances("train"), key=lambda t: len(t.route))
    inst, route = task.instance, np.asarray(task.route)
    d = np.asarray(ev.solve(sto, task))
    width = inst.max_service[route]
    for bad in (
        d[:-1],                        # one short
        np.append(d, 0.0),             # one too many
        d - 1.0,                       # negative
        np.where(np.arange(len(d)) == 0, width[0] + 1.0, d),  # beyond a window's width
        d + 0.5 * width,               # later customers start after their windows close
        np.full(len(d), np.nan),
    ):
        with pytest.raises(InfeasibleSolution, match=task.name):
            ev.score(task, list(bad))
    # stretching only the last service past the horizon
    last = d.copy()
    last[-1] += inst.horizon
    with pytest.raises(InfeasibleSolution):
        ev.score(task, list(last))
    with pytest.raises(InfeasibleSolution):
        ev.score(task, "lots")
    # zero service is feasible and earns nothing
    assert ev.score(task, [0.0] * len(d))["gap_percent"] == pytest.approx(100.0)
