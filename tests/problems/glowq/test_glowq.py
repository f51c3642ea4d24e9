"""hifo.problems.glowq: quantizer, the shared right factor's subspace, parameter counts, end-to-end perplexity."""

from __future__ import annotations

import pytest
import torch

from hifo.problems.glowq import (build_quantized, corpus, extra_params, group_stats, model_groups, per_layer_factors,
                                 perplexity, quantize_rtn, select_groups_greedy, shared_factors, trained_lm)


def test_rtn_has_at_most_16_levels_per_group_and_bounded_error():
    W = torch.randn(8, 64, generator=torch.Generator().manual_seed(0))
    Q = quantize_rtn(W, 4, 32)
    for g in Q.reshape(8, 2, 32).reshape(16, 32):
        assert len(torch.unique(g)) <= 16
    step = (W.reshape(16, 32).amax(1) - W.reshape(16, 32).amin(1)) / 15
    assert ((W - Q).reshape(16, 32).abs() <= step[:, None] / 2 + 1e-6).all()


def test_shared_right_factor_spans_top_singular_subspace_of_stacked_error():
    gen = torch.Generator().manual_seed(1)
    Es = [torch.randn(o, 48, generator=gen) @ torch.diag(torch.linspace(2, 0.1, 48)) for o in (32, 32, 16)]
    s = torch.rand(48, generator=gen) + 0.5
    r = 6
    B, As, sv = shared_factors(Es, s, r)
    stacked = torch.cat(Es) * s
    V = torch.linalg.svd(stacked).Vh[:r].T
    span = (B * s).T  # back in the scaled space: columns must span the same subspace as V
    P1, P2 = span @ torch.linalg.pinv(span), V @ V.T
    assert torch.allclose(P1, P2, atol=1e-4)
    # Eckart-Young on the stack: the shared correction's residual is the tail singular energy, and any
    # other rank-r right subspace (here random) leaves more
    resid = sum(float(((E - A @ B) * s).norm() ** 2) for E, A in zip(Es, As))
    assert resid == pytest.approx(float((sv[r:] ** 2).sum()), rel=1e-3)
    R = torch.linalg.qr(torch.randn(48, r, generator=gen)).Q
    assert float((stacked - stacked @ R @ R.T).norm() ** 2) > resid


def test_per_layer_is_best_per_layer_but_group_sharing_uses_fewer_parameters():
    gen = torch.Generator().manual_seed(2)
    Es = [torch.randn(32, 48, generator=gen) for _ in range(3)]
    s = torch.ones(48)
    B, As, _ = shared_factors(Es, s, 4)
    shared = sum(float((E - A @ B).norm() ** 2) for E, A in zip(Es, As))
    own = sum(float((E - A @ Bl).norm() ** 2) for E, (A, Bl) in zip(Es, (per_layer_factors(E, s, 4) for E in Es)))
    assert own <= shared + 1e-4  # per-layer fits each layer at least as well at equal rank ...
    assert 4 * (48 + 96) < 3 * 4 * (48 + 32)  # ... but at r (in + sum out) vs r sum (in + out) parameters


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return trained_lm()


def test_group_sharing_saves_parameters_on_the_lm(lm):
    groups = model_groups(lm)
    assert [g.name for g in groups][:4] == ["0.qkv", "0.o", "0.upgate", "0.down"]
    assert extra_params(lm, groups, 8, "glowq") < extra_params(lm, groups, 8, "per_layer")


def test_corrections_recover_perplexity_at_3_bits(lm):
    val = corpus()["val"]
    fp = perplexity(lm, val)
    rtn, e0 = build_quantized(lm, "rtn", bits=3)
    glow, e1 = build_quantized(lm, "glowq", 8, bits=3)
    per, e2 = build_quantized(lm, "per_layer", 8, bits=3)
    p_rtn, p_glow, p_per = perplexity(rtn, val), perplexity(glow, val), perplexity(per, val)
    assert fp < 2.0 and e0 == 0 and e1 < e2
    assert fp < p_glow < p_rtn and fp < p_per < p_rtn
    assert p_glow - fp < 0.8 * (p_rtn - fp)


def test_selective_restores_within_budget(lm):
    stats = group_stats(lm, 8, bits=3)
    budget = sum(g["extra_params"] for g in stats) // 2
    chosen = select_groups_greedy(stats, budget)
    _, extra = build_quantized(lm, "glowq", 8, restore=chosen, bits=3)
    assert 0 < extra <= budget and set(chosen) < {g["name"] for g in stats}
