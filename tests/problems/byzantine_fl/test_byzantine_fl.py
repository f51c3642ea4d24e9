"""hifo.problems.byzantine_fl: the alternating minimisation converges, attackers lose their weight."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.byzantine_fl import FLConfig, RULES, digits, dirichlet_split, make_setup, run_fl


@pytest.fixture(scope="module")
def clean():
    cfg = FLConfig("none", 0.0, seed=0)
    return run_fl(cfg, RULES["fedlaw"]), run_fl(cfg, RULES["fedavg"])


def test_dirichlet_split_partitions_and_is_heterogeneous():
    _, y, _, _ = digits()
    shards = dirichlet_split(y, 20, 0.5, np.random.default_rng(3))
    allidx = np.concatenate(shards)
    assert sorted(allidx.tolist()) == list(range(len(y)))
    # label-skewed: most clients hold a few classes for most of their data
    top2 = [np.sort(np.bincount(y[s], minlength=10))[-2:].sum() / len(s) for s in shards]
    assert np.median(top2) > 0.5


def test_alternating_minimisation_converges_on_an_attack_free_instance(clean):
    law, avg = clean
    cap = 1.0 / 20
    for memory in law.memories:
        J = np.array(memory["objective"])
        # exact u-step + projected gradient w-step on a function linear in w: J never increases
        assert np.all(np.diff(J) <= 1e-12 * J[0]), J
        w = memory["w"]
        assert abs(w.sum() - 1) < 1e-9 and w.min() >= 0 and w.max() <= cap + 1e-12
    # with f = 0 the capped simplex is the single point 1/n: the rule reduces to FedAvg exactly
    assert law.test_acc == avg.test_acc and law.test_acc > 0.9


def test_weights_converge_within_a_round_with_a_looser_cap():
    # f is what sets the cap; on the clean clients with f = 6 the weights move, and converge
    G = np.random.default_rng(0).normal(size=(20, 50)) + np.linspace(0, 3, 20)[:, None]
    memory: dict = {}
    for _ in range(30):
        RULES["fedlaw"](G, 6, memory)
    J = memory["objective"]
    assert abs(J[-1] - J[-2]) <= 1e-9 * J[0]
    # the weight sits on the clients closest to the weighted mean, at the cap 1/(n - f)
    assert np.isclose(memory["w"].max(), 1 / 14) and (memory["w"] < 1e-9).sum() >= 6


def test_attackers_weights_are_driven_down_on_sign_flip():
    cfg = FLConfig("sign_flip", 0.3, seed=0)
    bad = make_setup(cfg).malicious
    law = run_fl(cfg, RULES["fedlaw"])
    assert law.memories[-1]["w"][bad].sum() < 1e-6
    assert law.test_acc > 0.9
    assert run_fl(cfg, RULES["fedavg"]).test_acc < 0.2


def test_a_run_replays_exactly_from_its_aggregates():
    cfg = FLConfig("label_flip", 0.2, seed=2, rounds=8)
    run = run_fl(cfg, RULES["centered_clipping"])
    again = run_fl(cfg, aggregates=run.aggregates)
    assert again.test_acc == run.test_acc and again.train_loss == run.train_loss


def test_steps_are_clipped_into_the_box_of_the_updates():
    cfg = FLConfig("none", 0.0, seed=0, rounds=3)
    huge = run_fl(cfg, lambda G, f, m: np.full(G.shape[1], 1e9))
    top = run_fl(cfg, lambda G, f, m: G.max(axis=0))
    assert all(np.array_equal(a, b) for a, b in zip(huge.aggregates, top.aggregates))
