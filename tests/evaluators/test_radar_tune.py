"""hifo.evaluators.radar_tune: settings checks, measured baseline figures, trusted checks."""

from __future__ import annotations

from functools import partial
import inspect
import json
import pickle

import pytest

import torch  # noqa: F401  (a hard dependency)

from hifo.evaluators.base import InfeasibleSolution  # noqa: E402
from hifo.evaluators.radar_tune import (  # noqa: E402
    REFS_PATH,
    TSPLIB_NAMES,
    InvalidSettings,
    RadarTune,
    parse_settings,
    random_set_specs,
)
from evalkit import compile_entry, run_set  # noqa: E402


@pytest.fixture(scope="module")
def ev():
    return RadarTune()


compiled = partial(compile_entry, entry="radar_settings")


evaluate = run_set


def test_declaration(ev):
    assert ev.name == "radar_tune" and ev.direction == "minimize" and ev.primary_metric == "gap_percent"
    assert list(inspect.signature(compiled(ev.baseline_source())).parameters) == ["n", "cost_matrix"]
    assert ev.limits.memory_mb >= 8192  # torch needs address space


def test_instance_sets(ev):
    train, test, tsplib = (ev.load_instances(s) for s in ("train", "test_published", "tsplib"))
    assert [t.instance.n for t in train] == [20] * 16 and {t.model for t in train} == {"radar_atsp20_radar"}
    assert [t.instance.n for t in test] == [20] * 32 + [50] * 16
    assert [t.name for t in tsplib] == list(TSPLIB_NAMES)
    assert pickle.loads(pickle.dumps(train[0])).model == "radar_atsp20_radar"
    assert random_set_specs("train")[0] == ("tmat20_seed8000", 20, 8000, "radar_atsp20_radar")
    with pytest.raises(KeyError, match="known"):
        ev.load_instances("nope")


@pytest.mark.parametrize("settings, reason", [
    ([], "must return a dict"),
    ({"beam": 3}, "unknown setting"),
    ({"sinkhorn_iters": 0}, "outside"),
    ({"sinkhorn_iters": 2.5}, "integer"),
    ({"temperature": float("nan")}, "finite"),
    ({"temperature": True}, "finite"),
    ({"logit_clipping": 1000.0}, "outside"),
    ({"start_nodes": [0, 0]}, "distinct"),
    ({"start_nodes": [20]}, "distinct"),
    ({"start_nodes": []}, "non-empty"),
    ({"start_nodes": [0.5]}, "integer"),
    ({"augmentations": 3}, "budget"),
    ({"augmentations": 0}, ">= 1"),
    ({"sampling": "yes"}, "True or False"),
])
def test_settings_are_checked(settings, reason):
    with pytest.raises(InvalidSettings, match=reason):
        parse_settings(settings, 20)


def test_settings_defaults_and_budget():
    out = parse_settings({}, 20)
    assert out == {"start_nodes": tuple(range(20)), "augmentations": 1, "sampling": False}
    assert parse_settings({"start_nodes": [3, 4], "augmentations": 20}, 20)["augmentations"] == 20


def test_baseline_train_figures_are_measured(ev):
    for name in ("pomo_greedy", "pomo_aug2"):
        per, agg = evaluate(ev, compiled(ev.baselines[name]), "train")
        assert round(agg["gap_percent"], 2) == ev.reference_figures[name]["train"]["gap_percent"], name
        assert all(m["gap_percent"] >= -1e-9 for m in per)
    assert ev.reference_figures["pomo_aug2"]["train"]["gap_percent"] <= \
        ev.reference_figures["pomo_greedy"]["train"]["gap_percent"]


@pytest.mark.slow
def test_baseline_test_and_tsplib_figures_are_measured(ev):
    heuristic = compiled(ev.baselines["pomo_greedy"])
    for instance_set in ("test_published", "tsplib"):
        _, agg = evaluate(ev, heuristic, instance_set)
        assert round(agg["gap_percent"], 2) == ev.reference_figures["pomo_greedy"][instance_set]["gap_percent"]


def test_the_test_figures_are_the_published_ones(ev):
    for figs in RadarTune.reference_figures.values():
        assert figs["test"] == figs["test_published"]
    public = RadarTune()
    public.public_seeds = True  # the published seeds, as before the test set was drawn from a secret
    assert [(t.name, t.seed, t.instance.best_known) for t in public.load_instances("test")] == \
        [(t.name, t.seed, t.instance.best_known) for t in ev.load_instances("test_published")]


def test_the_test_set_is_drawn_from_a_secret_with_lkh_references(monkeypatch):
    """Three instances of the draw (the whole set costs about 4 s of CPU): per object, secret (instance and sampling
    seed), each with its LKH-3 length computed at draw time, the same on a second draw from the same key; on two
    published instances (n = 20 and 50) the same computation gives the stored lengths."""
    import numpy as np

    from hifo.evaluators import radar_tune
    from hifo.problems.routing import TMAT_SCALE, lkh_tour, tour_length

    small = {"test": ((20, 2, 8100, "radar_atsp20_radar"), (50, 1, 8200, "radar_atsp50_radar"))}
    monkeypatch.setattr(radar_tune, "RANDOM_SETS", small)
    a, b = RadarTune(), RadarTune()
    ta, tb = a.load_instances("test"), b.load_instances("test")
    assert [(t.name, t.model) for t in ta] == [("tmat20_secret0", "radar_atsp20_radar"),
                                              ("tmat20_secret1", "radar_atsp20_radar"),
                                              ("tmat50_secret2", "radar_atsp50_radar")]
    assert not np.array_equal(ta[0].instance.distance_matrix, tb[0].instance.distance_matrix)
    assert ta[0].seed != tb[0].seed and a.load_instances("test")[0] is ta[0]
    again = RadarTune()
    again.use_secret_key(a.__dict__["_secret_key"])
    assert [t.instance.best_known for t in again.load_instances("test")] == [t.instance.best_known for t in ta]
    per, _ = evaluate(a, compiled(a.baselines["pomo_aug2"]), "test")
    assert all(m["gap_percent"] >= -1e-9 for m in per)  # LKH's tour is at least as short as the model's
    for task in RadarTune().load_instances("test_published")[31:33]:  # the draw's reference gives the stored lengths
        d = task.instance.distance_matrix
        assert tour_length(lkh_tour(d, runs=10, scale=TMAT_SCALE), d) == task.instance.best_known


def test_lkh_reference_tour_scores_zero_and_forgeries_fail(ev):
    task = ev.load_instances("train")[0]
    ref = json.loads(REFS_PATH.read_text())["tmat"][task.name]
    assert ev.score(task, ref["tour"])["gap_percent"] == 0.0
    for bad, reason in ((ref["tour"][:-1], "all 20 nodes"), (ref["tour"][:-1] + ref["tour"][:1], "appears 2 times"),
                        ({"length": 0.0}, "all 20 nodes")):
        with pytest.raises(InfeasibleSolution, match=reason):
            ev.score(task, bad)


def test_solve_rejects_bad_settings(ev):
    task = ev.load_instances("train")[0]
    with pytest.raises(InvalidSettings, match="budget"):
        ev.solve(compiled("def radar_settings(n, c):\n    return {'augmentations': 3}\n"), task)
