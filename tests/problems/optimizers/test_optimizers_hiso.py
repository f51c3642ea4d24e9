"""HiSo / DeComFL: scalar-only messages, agreement with a centralised ZO step, every party in
sync, and the Hessian-informed estimator's expectation and conditioning claim."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.optimizers import (
    Client,
    Server,
    ZOConfig,
    centralized_zo_round,
    least_squares_problem,
    reconstruct_gradient,
    directional_derivatives,
    run_federated,
)


def federation(dim, cfg, clients=4, per_round=2, seed=0):
    problem = least_squares_problem(n=64, dim=dim, seed=seed)
    parts = np.array_split(np.arange(64), clients)
    cl = [Client(f"c{i}", problem.loss, (lambda rows: lambda g: rows[g.choice(len(rows), 8, replace=False)])(rows),
                 np.zeros(dim), cfg, seed=i) for i, rows in enumerate(parts)]
    return problem, Server(cl, np.zeros(dim), cfg, per_round, seed=seed)


@pytest.mark.parametrize("hessian_smooth", [None, 0.9])
def test_only_scalars_travel_whatever_the_model_size(hessian_smooth):
    cfg = ZOConfig(lr=0.01, num_pert=3, local_steps=2, hessian_smooth=hessian_smooth)
    sizes = {}
    for dim in (8, 512):
        _, server = federation(dim, cfg)
        for _ in range(5):
            server.run_round()
        msgs = server.channel.messages
        uploads = [m for m in msgs if m.receiver == "server"]
        assert uploads and all(m.scalars.shape == (2, 3) and not m.seeds for m in uploads)
        downloads = [m for m in msgs if m.sender == "server"]
        for m in downloads:  # seeds (+ averaged scalars of missed rounds), never a vector of size dim
            assert m.scalars.size % (cfg.local_steps * cfg.num_pert) == 0
            assert len(m.seeds) == (m.scalars.size // cfg.num_pert if m.scalars.size else cfg.local_steps)
        sizes[dim] = [m.nbytes for m in msgs]
    assert sizes[8] == sizes[512]
    assert max(sizes[512]) < 512 * 8  # a model-sized vector of float64 would be 4096 bytes


@pytest.mark.parametrize("difference", ["forward", "central"])
def test_one_client_equals_the_centralised_zo_step(difference):
    problem = least_squares_problem(n=64, dim=10, seed=3)
    cfg = ZOConfig(lr=0.02, num_pert=2, local_steps=3, hessian_smooth=0.9, difference=difference)
    full = lambda x, batch: problem.loss(x)  # noqa: E731 - full-batch loss, so batches agree
    client = Client("only", full, lambda g: None, np.zeros(10), cfg, seed=0)
    server = Server([client], np.zeros(10), cfg, clients_per_round=1, seed=5)
    x, h = np.zeros(10), np.ones(10)
    for _ in range(6):
        server.run_round()
        x, h = centralized_zo_round(full, x, h, server.history_seeds[-1], cfg)
        np.testing.assert_allclose(server.x, x, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(server.h, h, rtol=1e-10, atol=1e-12)


def test_every_party_rebuilds_the_same_model():
    cfg = ZOConfig(lr=0.02, num_pert=2, local_steps=2, hessian_smooth=0.95)
    problem, server = federation(12, cfg, clients=5, per_round=2)
    for _ in range(8):
        server.run_round()
    server.sync_all()
    for client in server.clients:
        np.testing.assert_allclose(client.x, server.x, rtol=0, atol=1e-13)
        np.testing.assert_allclose(client.h, server.h, rtol=0, atol=1e-13)
    assert problem.loss(server.x) < problem.loss(np.zeros(12))


def test_decomfl_keeps_identity_curvature_and_hiso_learns_it():
    for smooth, identity in ((None, True), (0.9, False)):
        _, server = federation(6, ZOConfig(lr=0.01, hessian_smooth=smooth))
        for _ in range(3):
            server.run_round()
        assert np.array_equal(server.h, np.ones(6)) == identity


def test_estimator_expectation_is_the_preconditioned_gradient():
    # E[z z^T] = h^{-1} for z = h^{-1/2} u, so E[g z] = h^{-1} grad f (exact for a quadratic
    # with central differences).
    rng = np.random.default_rng(0)
    d = 6
    A = rng.standard_normal((d, d))
    H = A @ A.T + np.eye(d)
    b = rng.standard_normal(d)
    loss = lambda x, batch: 0.5 * x @ H @ x - b @ x  # noqa: E731
    x = rng.standard_normal(d)
    h = np.linspace(0.5, 4.0, d)
    cfg = ZOConfig(lr=1.0, mu=1e-4, num_pert=1, difference="central")
    est = np.mean([reconstruct_gradient(h, s, directional_derivatives(loss, x, h, s, cfg), cfg)
                   for s in range(20000)], axis=0)
    want = (H @ x - b) / h
    assert np.linalg.norm(est - want) < 0.05 * np.linalg.norm(want)


def test_true_curvature_removes_the_condition_number_from_zo_convergence():
    # HiSo's premise: with h equal to the (diagonal) Hessian, ZO-SGD behaves as on a
    # well-conditioned problem. Same stable step rule 1/(2 (d+2) L_eff) for both runs.
    d = 20
    lam = np.logspace(0, 2, d)  # curvatures 1..100: condition number 100
    loss = lambda x, batch: 0.5 * float(np.sum(lam * x * x))  # noqa: E731
    x0 = np.ones(d)
    target = 1e-3 * loss(x0, None)

    def rounds(h, lr):
        cfg = ZOConfig(lr=lr, mu=1e-5, num_pert=1, hessian_smooth=None, difference="central")
        x = x0.copy()
        for r in range(1, 20001):
            x, _ = centralized_zo_round(loss, x, h, [r], cfg)
            if loss(x, None) <= target:
                return r
        return 20001

    plain = rounds(np.ones(d), 1 / (2 * (d + 2) * lam.max()))
    informed = rounds(lam, 1 / (2 * (d + 2)))
    assert informed * 10 < plain


def test_run_federated_reports_rounds_to_target():
    problem = least_squares_problem(n=128, dim=8, seed=1)
    res = run_federated(problem, ZOConfig(lr=0.05, hessian_smooth=0.95), rounds=200, num_clients=4,
                        clients_per_round=2, target=0.5 * problem.loss(np.zeros(8)), stop_at_target=True)
    assert res.rounds_to_target is not None and res.losses[res.rounds_to_target] <= 0.5 * res.losses[0]
    assert len(res.losses) == res.rounds_to_target + 1
    assert problem.optimum() <= min(res.losses)
