"""hifo.problems.glowq: quantizer, the weighted factorisations (LQER / QERA / official GlowQ), the official
GlowQ-S rules, parameter counts, end-to-end perplexity."""

from __future__ import annotations

import pytest
import torch

from hifo.problems.glowq import (SHRINKAGE_ALPHA, autocorrelations, build_quantized, corpus, extra_params, group_stats,
                                 lowrank_factors, model_groups, official_ranking, perplexity, quantize_rtn,
                                 select_prefix, select_water_filling, shrink, sqrt_and_inv_sqrt, trained_lm, weighting)


def test_rtn_has_at_most_16_levels_per_group_and_bounded_error():
    W = torch.randn(8, 64, generator=torch.Generator().manual_seed(0))
    Q = quantize_rtn(W, 4, 32)
    for g in Q.reshape(8, 2, 32).reshape(16, 32):
        assert len(torch.unique(g)) <= 16
    step = (W.reshape(16, 32).amax(1) - W.reshape(16, 32).amin(1)) / 15
    assert ((W - Q).reshape(16, 32).abs() <= step[:, None] / 2 + 1e-6).all()


def _correlated_inputs(gen, n=4000, d=24):
    """Inputs with strongly correlated channels (what a diagonal scale cannot see)."""
    mix = torch.randn(d, d, generator=gen, dtype=torch.float64) * torch.linspace(3, 0.05, d, dtype=torch.float64)
    return torch.randn(n, d, generator=gen, dtype=torch.float64) @ mix.T


def test_shrinkage_and_matrix_roots_follow_the_official_formulas():
    gen = torch.Generator().manual_seed(4)
    X = _correlated_inputs(gen)
    R = X.T @ X / len(X)
    S = shrink(R)
    d = R.shape[0]
    assert torch.allclose(S, (1 - SHRINKAGE_ALPHA) * R + SHRINKAGE_ALPHA * torch.trace(R) / d * torch.eye(d,
                          dtype=R.dtype))
    half, inv_half = sqrt_and_inv_sqrt(S)
    assert torch.allclose(half @ half, S.float(), rtol=1e-3, atol=1e-3)
    assert torch.allclose(half @ inv_half, torch.eye(d), atol=1e-3)


def test_qera_minimises_the_expected_output_error_and_lqer_does_not():
    """QERA's claim: ``[E R^{1/2}]_r R^{-1/2}`` is the rank-r minimiser of E||(E - AB) x||^2 = tr((E-AB) R (E-AB)^T);
    with correlated inputs LQER's diagonal scale leaves more output error, and so does any perturbation."""
    gen = torch.Generator().manual_seed(5)
    X = _correlated_inputs(gen)
    R = X.T @ X / len(X)
    E = torch.randn(16, 24, generator=gen)
    out_err = lambda D: float(torch.trace(D.double() @ R @ D.double().T))  # noqa: E731
    r = 4
    (A, ), B, _ = lowrank_factors([E], *weighting("full", R), r)
    (Al, ), Bl, _ = lowrank_factors([E], *weighting("diag", R), r)
    qera, lqer = out_err(E - A @ B), out_err(E - Al @ Bl)
    assert qera < 0.9 * lqer
    half = sqrt_and_inv_sqrt(R)[0].double()
    tail = torch.linalg.svdvals(E.double() @ half)[r:]
    assert qera == pytest.approx(float((tail ** 2).sum()), rel=1e-3)  # Eckart-Young in the whitened space
    for seed in range(3):
        P = 1e-2 * torch.randn(16, 24, generator=torch.Generator().manual_seed(seed))
        U, S, Vh = torch.linalg.svd(A @ B + P)
        assert out_err(E - (U[:, :r] * S[:r]) @ Vh[:r]) >= qera  # another rank-r matrix nearby: no better


def test_shared_factor_splits_singular_values_evenly_and_spans_the_whitened_subspace():
    """GlowQ (official step2): A_i = U_i S^{1/2}, B = S^{1/2} V^T Sigma^{-1/2}; the group's weighted residual is
    the tail singular energy of the stacked whitened error, and a random shared subspace leaves more."""
    gen = torch.Generator().manual_seed(1)
    X = _correlated_inputs(gen, d=48)
    M, M_inv = weighting("shrunk", X.T @ X / len(X))
    Es = [torch.randn(o, 48, generator=gen) for o in (32, 32, 16)]
    r = 6
    As, B, sv = lowrank_factors(Es, M, M_inv, r)
    assert sum(float(A.norm() ** 2) for A in As) == pytest.approx(float(sv[:r].sum()), rel=1e-4)  # the gsvd score
    assert float((B @ M).norm() ** 2) == pytest.approx(float(sv[:r].sum()), rel=1e-4)
    stacked = torch.cat(Es) @ M
    resid = sum(float(((E - A @ B) @ M).norm() ** 2) for E, A in zip(Es, As))
    assert resid == pytest.approx(float((sv[r:] ** 2).sum()), rel=1e-3)
    Q = torch.linalg.qr(torch.randn(48, r, generator=gen)).Q
    assert float((stacked - stacked @ Q @ Q.T).norm() ** 2) > resid


def test_per_layer_fits_better_but_sharing_uses_fewer_parameters():
    gen = torch.Generator().manual_seed(2)
    Es = [torch.randn(32, 48, generator=gen) for _ in range(3)]
    eye = torch.eye(48)
    As, B, _ = lowrank_factors(Es, eye, eye, 4)
    shared = sum(float((E - A @ B).norm() ** 2) for E, A in zip(Es, As))
    own = sum(float((E - f[0][0] @ f[1]).norm() ** 2) for E in Es for f in [lowrank_factors([E], eye, eye, 4)])
    assert own <= shared + 1e-4  # per-layer fits each layer at least as well at equal rank ...
    assert 4 * (48 + 96) < 3 * 4 * (48 + 32)  # ... but at r (in + sum out) vs r sum (in + out) parameters


def _stats(ppr, svs, err=1.0, w=1.0):
    return [{"name": f"g{i}", "params_per_rank": p, "singular_values": s, "error_norm": err * (i + 1),
             "weight_norm": w} for i, (p, s) in enumerate(zip(ppr, svs))]


def test_official_rules_rank_and_restore_prefixes():
    stats = _stats([10, 10, 10], [[3, 3], [5, 0], [2, 2]])
    assert official_ranking(stats, "gsvd", 1) == ["g1", "g0", "g2"]  # sum of the top-r singular values
    assert official_ranking(stats, "gsvd", 2) == ["g0", "g1", "g2"]
    assert official_ranking(stats, "norm_error", 1) == ["g2", "g1", "g0"]
    assert official_ranking(stats, "layer_order", 1) == ["g0", "g1", "g2"]
    # the longest prefix that fits: g1 (20) fits, g2 (20) would exceed 30, g0 is not tried (a prefix)
    assert select_prefix(stats, ["g1", "g2", "g0"], 2, 30) == {"g1": 2}


def test_water_filling_is_greedy_in_captured_energy_per_parameter():
    stats = _stats([10, 20], [[3, 2, 1], [4, 3, 0]])
    # per-parameter gains: g0 0.9, 0.4, 0.1; g1 0.8, 0.45, 0 -> g0, g1, g1, g0 while the budget lasts
    assert select_water_filling(stats, 30) == {"g0": 1, "g1": 1}
    assert select_water_filling(stats, 60) == {"g0": 2, "g1": 2}
    assert select_water_filling(stats, 0) == {}


@pytest.fixture(scope="module")
def lm():
    torch.set_num_threads(1)
    return trained_lm()


def test_group_sharing_saves_parameters_on_the_lm(lm):
    groups = model_groups(lm)
    assert [g.name for g in groups][:4] == ["0.qkv", "0.o", "0.upgate", "0.down"]
    ranks = {g.name: 8 for g in groups}
    assert extra_params(lm, ranks, "glowq") < extra_params(lm, ranks, "lqer") == extra_params(lm, ranks, "qera")
    R = autocorrelations(lm)
    assert torch.equal(R["blocks.0.q"], R["blocks.0.v"])  # a group's layers read one input


def test_corrections_recover_perplexity_at_3_bits(lm):
    """The paper's claim at this scale: the shared factor stays close to per-layer correction with fewer
    parameters (here: within 0.02 perplexity of QERA, its full-covariance per-layer counterpart)."""
    val = corpus()["val"]
    R = autocorrelations(lm)
    fp = perplexity(lm, val)
    p_rtn = perplexity(build_quantized(lm, "rtn", bits=3)[0], val)
    res = {m: build_quantized(lm, m, 8, bits=3, R=R) for m in ("glowq", "qera", "lqer")}
    ppl = {m: perplexity(q, val) for m, (q, _) in res.items()}
    assert fp < 2.0 and res["glowq"][1] < res["qera"][1] == res["lqer"][1]
    assert all(fp < p < p_rtn for p in ppl.values())
    assert ppl["glowq"] - fp < 0.8 * (p_rtn - fp)
    assert ppl["glowq"] < ppl["qera"] + 0.02


def test_selections_restore_within_budget(lm):
    stats = group_stats(lm, 3)
    assert all(len(g["singular_values"]) == 16 and g["weight_norm"] > g["error_norm"] > 0 for g in stats)
    budget = sum(g["params_per_rank"] for g in stats) * 8 // 2
    for chosen in (select_prefix(stats, official_ranking(stats, "gsvd", 8), 8, budget),
                   select_water_filling(stats, budget)):
        _, extra = build_quantized(lm, "glowq", chosen, bits=3)
        assert 0 < extra <= budget and extra == extra_params(lm, chosen)
