"""hifo.problems.byzantine_fl: the paper's learnable weights, the attacks, the probe round, the replay."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.byzantine_fl import (FLConfig, RULES, client_round, digits, dirichlet_split, make_setup, run_fl,
                                        softmax_loss_grad)


def test_dirichlet_split_partitions_and_is_heterogeneous():
    _, y, _, _ = digits()
    shards = dirichlet_split(y, 20, 0.5, np.random.default_rng(3))
    allidx = np.concatenate(shards)
    assert sorted(allidx.tolist()) == list(range(len(y)))
    # label-skewed: most clients hold a few classes for most of their data
    top2 = [np.sort(np.bincount(y[s], minlength=10))[-2:].sum() / len(s) for s in shards]
    assert np.median(top2) > 0.5


@pytest.mark.parametrize("attack", ["alie", "ipm", "min_max", "min_sum", "sign_flip"])
def test_every_attacker_sends_its_own_vector(attack):
    setup = make_setup(FLConfig(attack, 0.3, seed=5))
    G, losses = client_round(setup, np.zeros(setup.dim), 0)
    bad = G[setup.malicious]
    assert len(bad) == 6 and len(np.unique(bad, axis=0)) == 6
    # every attacker reports the smallest honest loss (a loss that buys weight)
    assert np.all(losses[setup.malicious] == losses[~setup.malicious].min())


@pytest.mark.parametrize("attack", ["min_max", "min_sum"])
def test_adaptive_attacks_stay_inside_the_honest_spread(attack):
    # Shejwalkar & Houmansadr's constraint: min-max rows no farther from any honest update than the largest honest
    # pairwise distance; min-sum rows' summed squared distances no larger than the largest honest one
    setup = make_setup(FLConfig(attack, 0.2, seed=7))
    G, _ = client_round(setup, np.zeros(setup.dim), 3)
    honest, bad = G[~setup.malicious], G[setup.malicious]
    hh = ((honest[:, None] - honest[None]) ** 2).sum(axis=2)
    bh = ((bad[:, None] - honest[None]) ** 2).sum(axis=2)
    if attack == "min_max":
        assert np.sqrt(bh.max()) <= np.sqrt(hh.max()) * (1 + 1e-9)
    else:
        assert bh.sum(axis=1).max() <= hh.sum(axis=1).max() * (1 + 1e-9)
    # and they move away from the honest mean (the attack is not a no-op)
    assert np.linalg.norm(bad.mean(axis=0) - honest.mean(axis=0)) > 0.1 * np.linalg.norm(honest.std(axis=0))


def test_the_weight_gradient_is_the_look_ahead_objective_s_gradient():
    """The paper's w-step descends F(w) = sum_i w_i f_i(theta - alpha G^T w) (Algorithm 2): with one local step,
    a client's pseudo-gradient is its exact loss gradient, so the rule's weight gradient at w must equal the
    finite-difference gradient of F (attack-free, so every loss and gradient is the client's own)."""
    cfg = FLConfig("none", 0.0, seed=1, local_steps=1)
    setup = make_setup(cfg)
    rng = np.random.default_rng(0)
    theta = 0.05 * rng.standard_normal(setup.dim)
    G, losses = client_round(setup, theta, 0)
    w = rng.dirichlet(np.ones(20))
    memory = {"w": w.copy()}
    # f = 0: support of all 20 and a clipping radius of the largest norm, so no row is clipped in this check
    probe = RULES["learnable_weights"](G, losses, 0, memory)["probe"]
    assert np.allclose(probe, G.T @ w)  # the tentative model theta - alpha G^T w
    Gp, lp = client_round(setup, theta + probe, 0, phase=1)
    memory["probe"] = {"step": probe, "updates": Gp, "losses": lp}
    RULES["learnable_weights"](G, losses, 0, memory)
    grad = memory["weight_gradient"]

    def F(v):
        th = theta + G.T @ v
        return sum(v[i] * softmax_loss_grad(th, setup.X[s], setup.y[s])[0] for i, s in enumerate(setup.shards))

    eps = 1e-6
    fd = np.array([(F(w + eps * e) - F(w - eps * e)) / (2 * eps) for e in np.eye(20)])
    assert np.allclose(grad, fd, rtol=1e-4, atol=1e-6), np.abs(grad - fd).max()


def test_attackers_weights_go_to_the_lower_bound_on_sign_flip():
    """The paper's claim: the learned weights suppress malicious clients (to 0, off the sparse support) while
    the honest clients keep all the weight; here on sign flip at 30 %, where FedAvg collapses."""
    cfg = FLConfig("sign_flip", 0.3, seed=0)
    bad = make_setup(cfg).malicious
    law = run_fl(cfg, RULES["learnable_weights"])
    for memory in law.memories:
        w = memory["w"]
        # every round on the sparse unit-capped simplex: sum 1, 0 <= w <= t, at most n - f non-zeros
        assert abs(w.sum() - 1) < 1e-9 and w.min() >= 0 and w.max() <= 1 / (14 - 1) + 1e-12
        assert np.count_nonzero(w) <= 14
    assert all(m["w"][bad].sum() == 0.0 for m in law.memories[2:])
    assert law.test_acc > 0.9 and run_fl(cfg, RULES["fedavg"]).test_acc < 0.2


def test_a_rule_may_probe_once_per_round_and_the_probe_never_moves_the_model():
    cfg = FLConfig("label_flip", 0.2, seed=2, rounds=6)
    law = run_fl(cfg, RULES["learnable_weights"])
    again = run_fl(cfg, aggregates=law.aggregates)
    assert again.test_acc == law.test_acc and again.train_loss == law.train_loss
    with pytest.raises(ValueError, match="one probe per round"):
        run_fl(cfg, lambda G, loss, f, m: {"probe": G.mean(axis=0)})


def test_a_run_replays_exactly_from_its_aggregates():
    cfg = FLConfig("min_sum", 0.2, seed=2, rounds=8)
    run = run_fl(cfg, RULES["centered_clipping"])
    again = run_fl(cfg, aggregates=run.aggregates)
    assert again.test_acc == run.test_acc and again.train_loss == run.train_loss


def test_steps_are_clipped_into_the_box_of_the_updates():
    cfg = FLConfig("none", 0.0, seed=0, rounds=3)
    huge = run_fl(cfg, lambda G, loss, f, m: np.full(G.shape[1], 1e9))
    top = run_fl(cfg, lambda G, loss, f, m: G.max(axis=0))
    assert all(np.array_equal(a, b) for a, b in zip(huge.aggregates, top.aggregates))


@pytest.mark.parametrize("name", ["multi_krum", "bulyan", "geometric_median"])
def test_robust_baselines_ignore_a_far_outlier(name):
    G = np.random.default_rng(0).normal(size=(20, 30))
    far = G.copy()
    far[:4] = 1e6
    out = RULES[name](far, np.zeros(20), 4, {})
    # inside the coordinate range of the 16 honest rows (the mean moves by 2e5)
    assert np.all(out >= G[4:].min(axis=0)) and np.all(out <= G[4:].max(axis=0))
