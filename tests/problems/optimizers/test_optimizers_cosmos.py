"""COSMOS: the two limits (r = 0 is Muon, r = full is Adam in the eigenbasis), the subspace
tracking, and the update's scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hifo.problems.optimizers import COSMOS, Muon, track_subspace


def step_pair(opt_a, opt_b, pa, pb, grad):
    before_a, before_b = pa.detach().clone(), pb.detach().clone()
    pa.grad, pb.grad = grad.clone(), grad.clone()
    opt_a.step()
    opt_b.step()
    return pa.detach() - before_a, pb.detach() - before_b


def cosine(a, b):
    return float((a * b).sum() / (a.norm() * b.norm()))


def test_rank_zero_is_muon_up_to_a_scalar():
    torch.manual_seed(0)
    m, n, lr, ratio = 12, 8, 0.5, 0.3
    a, b = torch.nn.Parameter(torch.zeros(m, n)), torch.nn.Parameter(torch.zeros(m, n))
    cosmos = COSMOS([a], lr=lr, lr_ratio=ratio, rank=0, betas=(0.9, 0.95))
    muon = Muon([b], lr=1.0, momentum=0.9, scale="none")
    for _ in range(6):
        da, db = step_pair(cosmos, muon, a, b, torch.randn(m, n))
        assert cosine(da, db) > 1 - 1e-5
        assert float(da.norm()) == pytest.approx(lr * ratio * np.sqrt(m * n), rel=1e-5)


def test_full_rank_is_adam_when_the_eigenbasis_is_the_coordinate_basis():
    # Gradients Q D_t with orthonormal Q have G^T G diagonal, so the tracked eigenbasis stays a
    # signed permutation and COSMOS's adaptive part is Adam itself; the residual vanishes.
    torch.manual_seed(1)
    m, n = 12, 8
    f64 = dict(dtype=torch.float64)  # float64, so that rounding in the eigenbasis does not blur the identity
    Q, _ = torch.linalg.qr(torch.randn(m, n, **f64))
    a, b = torch.nn.Parameter(torch.zeros(m, n, **f64)), torch.nn.Parameter(torch.zeros(m, n, **f64))
    cosmos = COSMOS([a], lr=1.0, lr_ratio=1.0, rank=n, betas=(0.9, 0.95), nesterov=False, eps=1e-12)
    adam = torch.optim.Adam([b], lr=1.0, betas=(0.9, 0.95), eps=1e-12)
    for _ in range(6):
        da, db = step_pair(cosmos, adam, a, b, Q @ torch.diag(torch.rand(n, **f64) * 2 - 1))
        want = db / db.norm() * np.sqrt(m * n)  # COSMOS normalises the update to RMS lr * ratio
        assert torch.allclose(da, want, atol=1e-8)


def test_full_rank_has_no_orthogonalised_part():
    # At r = n the residual D - D P P^T is zero, so gamma (its weight) cannot matter: a huge
    # gamma would swamp the step if any orthogonalised residual were left.
    torch.manual_seed(2)
    a, b = torch.nn.Parameter(torch.zeros(10, 6)), torch.nn.Parameter(torch.zeros(10, 6))
    huge, none = COSMOS([a], rank=6, gamma=1e6), COSMOS([b], rank=6, gamma=0.0)
    for _ in range(4):
        da, db = step_pair(huge, none, a, b, torch.randn(10, 6))
        assert torch.allclose(da, db, atol=1e-7)
        P = huge.state[a]["P"]
        assert torch.allclose(P.T @ P, torch.eye(6), atol=1e-5)
    # ... whereas below full rank the residual is there and gamma changes the step.
    c, d = torch.nn.Parameter(torch.zeros(10, 6)), torch.nn.Parameter(torch.zeros(10, 6))
    dc, dd = step_pair(COSMOS([c], rank=3, gamma=1e6), COSMOS([d], rank=3, gamma=0.0), c, d, torch.randn(10, 6))
    assert cosine(dc, dd) < 0.9


def test_power_iteration_tracks_the_leading_eigenspace():
    torch.manual_seed(3)
    m, n, r = 40, 20, 4
    U, _ = torch.linalg.qr(torch.randn(m, n))
    V, _ = torch.linalg.qr(torch.randn(n, n))
    s = torch.tensor([10.0, 8.0, 6.0, 5.0] + [1.0] * (n - 4))
    G = U @ torch.diag(s) @ V.T
    P, S = torch.linalg.qr(torch.randn(n, r))[0], torch.zeros(r, r)  # start away from the answer
    for t in range(2, 80):
        P, S = track_subspace(G, P, S, t, 0.9)
    top = V[:, :r]
    # principal angles between span(P) and the top-r eigenvectors of G^T G: all near zero
    cosines = torch.linalg.svdvals(top.T @ P)
    assert float(cosines.min()) > 0.999
    assert torch.allclose(P.T @ P, torch.eye(r), atol=1e-5)
    assert torch.allclose(S, S.T, atol=1e-4) and float(torch.linalg.eigvalsh(S).min()) > 0


def test_update_rms_is_lr_times_ratio_for_any_rank():
    torch.manual_seed(4)
    for rank in (0, 3, 8):
        p = torch.nn.Parameter(torch.zeros(16, 8))
        opt = COSMOS([p], lr=0.01, lr_ratio=0.5, rank=rank)
        for _ in range(3):
            p.grad = torch.randn(16, 8)
            before = p.detach().clone()
            opt.step()
            rms = float((p.detach() - before).pow(2).mean().sqrt())
            assert rms == pytest.approx(0.005, rel=1e-4)


def test_defaults_are_the_reference_constructors():
    from hifo.problems.optimizers._cosmos import COSMOS_DEFAULTS
    assert COSMOS_DEFAULTS["betas"] == (0.9, 0.999) and COSMOS_DEFAULTS["lr_ratio"] == 0.1
    assert COSMOS_DEFAULTS["rank"] == 64 and COSMOS_DEFAULTS["lr"] == 1e-3


def test_vectors_get_adamw_and_bad_options_are_refused():
    v = torch.nn.Parameter(torch.zeros(5))
    w = torch.nn.Parameter(torch.zeros(5))
    ours = COSMOS([v], lr=1e-2)
    ref = torch.optim.AdamW([w], lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    for _ in range(3):
        g = torch.randn(5)
        v.grad, w.grad = g.clone(), g.clone()
        ours.step()
        ref.step()
    assert torch.allclose(v, w, atol=1e-6)
    with pytest.raises(TypeError):
        COSMOS([v], rnak=4)
    with pytest.raises(ValueError):
        COSMOS([v], betas=(1.0, 0.9))
