"""The small CPU tasks: data, determinism, the LM's entropy floor, parameter round trips."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hifo.problems.optimizers import (
    COSMOS,
    InvalidUpdate,
    Muon,
    RuleOptimizer,
    TrainingRun,
    build_model,
    evaluate,
    held_out_metrics,
    load_lists,
    load_split,
    markov_entropy_rate,
    markov_transitions,
    split_params,
    state_to_lists,
    train,
)
from hifo.problems.optimizers._data import markov_stream


def test_digits_splits_are_disjoint_and_fixed():
    tr, va = load_split("digits_mlp", "train"), load_split("digits_mlp", "val")
    assert len(tr) == 1297 and len(va) == 500 and tr.inputs.shape[1] == 64
    assert 0.0 <= tr.inputs.min() and tr.inputs.max() <= 1.0
    rows = {r.tobytes() for r in tr.inputs}
    assert sum(r.tobytes() in rows for r in va.inputs) < 10  # digits has a few duplicate images


def test_markov_entropy_rate_is_the_empirical_per_token_loss():
    P = markov_transitions()
    s = markov_stream(P, 200_000, seed=11)
    empirical = -np.mean(np.log(P[s[:-2], s[1:-1], s[2:]]))
    assert empirical == pytest.approx(markov_entropy_rate(P), abs=0.01)
    assert markov_entropy_rate(P) < np.log(P.shape[0]) - 0.5  # well below uniform: learnable


def test_models_split_matrices_like_muon_prescribes():
    hidden, rest = split_params(build_model("markov_lm", 0))
    assert set(hidden) == {"qkv.weight", "proj.weight", "fc1.weight", "fc2.weight"}
    assert {"tok.weight", "pos.weight", "head.weight"} <= set(rest)
    hidden, _ = split_params(build_model("digits_cnn", 0))
    assert set(hidden) == {"conv1.weight", "conv2.weight"}


def test_training_is_deterministic_given_the_seed():
    split = load_split("digits_cnn", "train")
    runs = []
    for _ in range(2):
        model = build_model("digits_cnn", 3)
        runs.append(train("digits_cnn", model, torch.optim.SGD(model.parameters(), lr=0.05), split, 5, 32, seed=3))
    assert runs[0] == runs[1]


def test_parameters_round_trip_and_forgeries_are_refused():
    model = build_model("digits_mlp", 1)
    values = state_to_lists(model)
    assert held_out_metrics("digits_mlp", values)["val_loss"] == pytest.approx(
        evaluate("digits_mlp", model, load_split("digits_mlp", "val"))["loss"])
    bad_shape = dict(values, **{"layers.0.weight": values["layers.0.weight"][:-1]})
    bad_value = dict(values, **{"layers.0.bias": [float("nan")] * 64})
    missing = {k: v for k, v in values.items() if k != "layers.2.bias"}
    extra = dict(values, sneaky=[0.0])
    for forged in (bad_shape, bad_value, missing, extra, [1, 2, 3]):
        with pytest.raises(ValueError):
            load_lists(build_model("digits_mlp", 0), forged)


def test_rule_optimizer_checks_what_the_rule_returns():
    model = build_model("digits_mlp", 0)
    hidden, rest = split_params(model)
    split = load_split("digits_mlp", "train")
    for rule, message in ((lambda g, m, w, s, t, T: g[:3], "shape"),
                          (lambda g, m, w, s, t, T: g * np.nan, "NaN"),
                          (lambda g, m, w, s, t, T: "fast", "numeric")):
        with pytest.raises(InvalidUpdate, match=message):
            train("digits_mlp", model, RuleOptimizer(rule, hidden, rest, 3), split, 3, 16, 0)
    seen = []
    rule = lambda g, m, w, s, t, T: seen.append((t, T, g.shape, m.shape, w.shape)) or 0.01 * m  # noqa: E731
    train("digits_mlp", model, RuleOptimizer(rule, hidden, rest, 4), split, 4, 16, 0)
    assert seen[0] == (1, 4, (64, 64), (64, 64), (64, 64)) and seen[-1][0] == 4


def test_training_run_carries_no_validation_data():
    run = TrainingRun.make("markov_lm", 0, 3, 4, 5.0)
    assert run.train is load_split("markov_lm", "train")
    assert not any(v is load_split("markov_lm", "val") for v in vars(run).values())


@pytest.mark.slow
def test_transformer_learns_the_second_order_structure():
    # Bigram statistics alone give ~2.62 nats on this corpus; the entropy rate is ~1.61.
    floor = markov_entropy_rate(markov_transitions())
    results = {}
    for name in ("muon", "cosmos"):
        model = build_model("markov_lm", 0)
        hidden, rest = split_params(model)
        groups = [dict(params=list(hidden.values())), dict(params=list(rest.values()))]
        if name == "muon":
            opt = Muon([dict(groups[0], use_muon=True, lr=0.05), dict(groups[1], use_muon=False, lr=1e-2)])
        else:
            # lr 0.1 x the reference lr_ratio 0.1: per-entry step RMS 1e-2
            opt = COSMOS([dict(groups[0], lr=0.1, rank=8), dict(groups[1], use_cosmos=False, lr=1e-2)])
        train("markov_lm", model, opt, load_split("markov_lm", "train"), 300, 16, seed=0)
        results[name] = evaluate("markov_lm", model, load_split("markov_lm", "val"))["loss"]
        assert floor - 0.05 < results[name] < 2.3, (name, results[name])
