"""Muon: the reference update rule, the SVD variant, shape scaling, the AdamW side."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hifo.problems.optimizers import (
    MUON_QUINTIC,
    Muon,
    build_model,
    evaluate,
    load_split,
    muon_update,
    shape_scale,
    split_params,
    train,
)


def reference_muon_steps(grads, beta=0.95, steps=5):
    """Keller Jordan's muon_update, written out step by step in numpy (float64)."""
    a, b, c = MUON_QUINTIC
    M = np.zeros_like(grads[0])
    out = []
    for G in grads:
        M = beta * M + (1 - beta) * G
        U = G + beta * (M - G)
        X = U.T if U.shape[0] > U.shape[1] else U
        X = X / (np.linalg.norm(X) + 1e-7)
        for _ in range(steps):
            A = X @ X.T
            X = a * X + (b * A + c * A @ A) @ X
        X = X.T if U.shape[0] > U.shape[1] else X
        out.append(X * max(1.0, G.shape[0] / G.shape[1]) ** 0.5)
    return out


def test_update_matches_the_reference_rule():
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((24, 8)) for _ in range(4)]
    buf = torch.zeros(24, 8, dtype=torch.float64)
    want = reference_muon_steps(grads)
    for G, ref in zip(grads, want):
        g = torch.from_numpy(G)
        got = muon_update(g, buf)
        assert torch.equal(g, torch.from_numpy(G))  # the gradient is left alone
        np.testing.assert_allclose(got.numpy(), ref, atol=2e-5)


def test_svd_variant_gives_exactly_the_scaled_polar_factor():
    G = torch.randn(32, 8, dtype=torch.float64)
    upd = muon_update(G, torch.zeros_like(G), orthogonalizer="svd")
    s = np.linalg.svd(upd.numpy(), compute_uv=False)
    np.testing.assert_allclose(s, np.full(8, 2.0), atol=1e-10)  # sqrt(32 / 8) = 2
    assert shape_scale(8, 32) == 1.0 and shape_scale(32, 8) == 2.0
    assert shape_scale(32, 8, "match_adamw") == pytest.approx(0.2 * np.sqrt(32))


def test_conv_filters_are_orthogonalised_as_matrices():
    G = torch.randn(16, 8, 3, 3)
    upd = muon_update(G, torch.zeros_like(G), orthogonalizer="svd")
    assert upd.shape == G.shape
    s = np.linalg.svd(upd.reshape(16, -1).numpy(), compute_uv=False)
    np.testing.assert_allclose(s, 1.0, atol=1e-5)


def test_non_matrix_groups_are_exactly_adamw():
    torch.manual_seed(0)
    a = torch.nn.Parameter(torch.randn(10))
    b = torch.nn.Parameter(a.detach().clone())
    ours = Muon([dict(params=[a], use_muon=False, lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)])
    ref = torch.optim.AdamW([b], lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    for _ in range(5):
        g = torch.randn(10)
        a.grad, b.grad = g.clone(), g.clone()
        ours.step()
        ref.step()
    assert torch.allclose(a, b, atol=1e-6)


def test_vectors_are_refused_in_a_muon_group():
    with pytest.raises(ValueError):
        Muon([torch.nn.Parameter(torch.zeros(5))])


def test_muon_trains_faster_than_sgd_on_the_mlp():
    split, val = load_split("digits_mlp", "train"), load_split("digits_mlp", "val")
    results = {}
    for name in ("muon", "sgd"):
        model = build_model("digits_mlp", 0)
        hidden, rest = split_params(model)
        if name == "muon":
            opt = Muon([dict(params=list(hidden.values()), use_muon=True, lr=0.02),
                        dict(params=list(rest.values()), use_muon=False, lr=1e-2)])
        else:
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        train("digits_mlp", model, opt, split, steps=80, batch_size=64, seed=0)
        results[name] = evaluate("digits_mlp", model, val)["loss"]
    assert results["muon"] < 0.7 * results["sgd"]


def test_misspelt_options_are_refused():
    w = torch.nn.Parameter(torch.zeros(4, 4))
    with pytest.raises(TypeError):
        Muon([w], momentun=0.9)
    with pytest.raises(TypeError):
        Muon([dict(params=[w], use_muon=False, momentum=0.9)])
