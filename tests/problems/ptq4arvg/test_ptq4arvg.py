"""hifo.problems.ptq4arvg: scaling is exact in full precision, GPS minimises its loss model without growing a
range, token-wise static ranges, the farthest-k stand-in against an independent Mahalanobis computation, the
official DGC rule, classifier-free guidance, end-to-end at 8 bits."""

from __future__ import annotations

import pytest
import torch

from hifo.problems.ptq4arvg import (NULL, act_range, affine_quant, cfg_logits, cfg_pool, dgc_calibration,
                                    dgc_fraction, farthest_select, fake_quant, generate, mahalanobis_pinv, gps_scales,
                                    gps_scales_official,
                                    mahalanobis, nll, percentile_range, quantize_model, sequences, smoothquant_scales,
                                    token_group_ranges, trained_arvg)
from hifo.problems.ptq4arvg import quant_weight


def _acts(seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(16, 12, 10, generator=g)
    X[..., 3] *= 20  # an outlier channel
    X[:, 0] *= 5  # a sink-like first token
    W = torch.randn(6, 10, generator=g)
    return X, W


def test_fake_quant_levels_and_error_bound():
    x = torch.linspace(-3, 5, 1000)
    q = fake_quant(x, x.min(), x.max(), 4)
    assert len(torch.unique(q)) <= 16 and (x - q).abs().max() <= 8 / 15 / 2 + 1e-6


@pytest.mark.parametrize("fn", ["smooth", "gps"])
def test_channel_scaling_is_exact_in_full_precision(fn):
    X, W = _acts()
    s = smoothquant_scales(X, W) if fn == "smooth" else gps_scales(X, W, 6, token_wise=True)
    assert (s > 0).all()
    assert torch.allclose((X / s) @ (W * s).T, X @ W.T, atol=1e-3)


def test_gps_minimises_its_loss_model_and_grows_no_range():
    X, W = _acts(1)
    bits = 6
    s = gps_scales(X, W, bits, token_wise=False)
    o = int((X.flatten(0, 1).amax(0) - X.flatten(0, 1).amin(0)).argmax())
    assert s[o] == pytest.approx(float(smoothquant_scales(X, W)[o]))
    s0 = torch.ones(10)
    s0[o] = s[o]
    Xs, Ws = X / s0, W * s0
    assert (X / s).abs().max() <= Xs.abs().max() * (1 + 1e-5)  # activation range kept
    assert ((W * s).abs().amax(1) <= Ws.abs().amax(1) * (1 + 1e-5)).all()  # every weight row's range kept
    lo, hi = act_range(Xs, False)
    dX = (Xs - fake_quant(Xs, lo, hi, bits)).flatten(0, 1)
    dW = Ws - quant_weight(Ws, bits)
    a = (dX ** 2).sum(0) * (Ws ** 2).sum(0)
    b = (Xs.flatten(0, 1) ** 2).sum(0) * (dW ** 2).sum(0)
    g = s / s0
    for i in range(10):
        if i == o:
            continue
        E = lambda t: a[i] * t ** 2 + b[i] / t ** 2  # noqa: E731
        grid = torch.linspace(0.2, 5, 400) * g[i]
        lo_b = Xs[..., i].abs().max() / Xs.abs().max()
        hi_b = (Ws.abs().amax(1) / Ws[:, i].abs()).min()
        feasible = grid[(grid >= lo_b) & (grid <= hi_b)]
        assert E(g[i]) <= E(feasible).min() * (1 + 1e-4), i


def test_static_token_wise_ranges_cut_the_error_of_a_sink_token():
    X, _ = _acts(2)
    lo_t, hi_t = act_range(X, True)
    lo, hi = act_range(X, False)
    assert lo_t.shape == (12, 1)
    err_t = ((X - fake_quant(X, lo_t, hi_t, 6)) ** 2)[:, 1:].mean()
    err = ((X - fake_quant(X, lo, hi, 6)) ** 2)[:, 1:].mean()
    assert err_t <= err


def test_farthest_select_picks_the_farthest_samples():
    g = torch.Generator().manual_seed(3)
    F_ = torch.randn(50, 4, generator=g)
    F_[[7, 21]] += 8.0
    d = mahalanobis(F_)
    mu, C = F_.mean(0), torch.cov(F_.T) + 1e-3 * torch.eye(4)
    ref = torch.stack([torch.sqrt((f - mu) @ torch.linalg.inv(C) @ (f - mu)) for f in F_])
    assert torch.allclose(d, ref, atol=1e-4)
    assert {7, 21} <= set(farthest_select(F_, 5)) and len(farthest_select(F_, 5)) == 5


def test_mahalanobis_pinv_is_the_official_loop():
    g = torch.Generator().manual_seed(4)
    F_ = torch.randn(40, 6, generator=g) @ torch.randn(6, 6, generator=g)
    mu = F_.mean(0)
    P = torch.linalg.pinv((F_ - mu).T @ (F_ - mu) / 39)
    ref = torch.stack([torch.sqrt((f - mu) @ P @ (f - mu)) for f in F_])
    assert torch.allclose(mahalanobis_pinv(F_).float(), ref, atol=1e-4)
    # each kind's squared distances sum to (n - 1) rank: why the official share stays near one half
    assert float((mahalanobis_pinv(F_) ** 2).sum()) == pytest.approx(39 * 6, rel=1e-6)


def test_dgc_mix_moves_toward_conditional_as_the_unconditional_distances_shrink():
    """The official rule: the conditional share of the n largest of the 2n distances; equal lists give 0.5."""
    g = torch.Generator().manual_seed(5)
    dc = torch.rand(20, generator=g) + 1.0
    assert dgc_fraction(dc, dc.clone()) == 0.5
    fractions = [dgc_fraction(dc, dc * f) for f in (2.0, 1.2, 1.0 + 1e-2, 0.8, 0.5)]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    du = torch.rand(20, generator=g) + 1.0
    top = set(torch.topk(torch.cat([dc, du]), 20).indices.tolist())
    assert dgc_fraction(dc, du) == len([i for i in top if i < 20]) / 20


def test_dgc_calibration_takes_the_first_conditional_and_unconditional_samples():
    g = torch.Generator().manual_seed(6)
    cond = torch.randn(30, 3, generator=g)
    cond[:3] *= 25  # a few far conditional samples: they top the distances
    unc = torch.randn(30, 3, generator=g)
    feats = torch.cat([cond, unc])
    pct = dgc_fraction(mahalanobis_pinv(cond), mahalanobis_pinv(unc))
    chosen = dgc_calibration(feats, 10)
    nc = round(pct * 10)
    assert chosen == list(range(nc)) + list(range(30, 30 + 10 - nc))


def test_official_dgc_degenerates_when_the_features_outnumber_the_samples():
    """With no more samples than feature dimensions (the official 128 samples of 1280+ features) every pinv
    Mahalanobis distance is the same, (n - 1) / sqrt(n): both lists agree and the mix is half and half."""
    g = torch.Generator().manual_seed(8)
    a, b = torch.randn(16, 40, generator=g), 5 * torch.randn(16, 40, generator=g)
    da, db = mahalanobis_pinv(a), mahalanobis_pinv(b)
    assert torch.allclose(da, torch.full_like(da, 15 / 16 ** 0.5), atol=1e-6)
    assert dgc_fraction(da, db) == 0.5


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    return trained_arvg()


def test_classifier_free_guidance_sharpens_the_conditional_distribution(model):
    """Class dropout taught the model an unconditional distribution; guidance (scale > 1) moves away from it:
    lower entropy than the conditional distribution, and scale 1 is the conditional model itself."""
    val = sequences(128, 7)
    with torch.no_grad():
        assert torch.equal(cfg_logits(model, val, 1.0), model(val))
        ent = {s: float(-(torch.softmax(cfg_logits(model, val, s), -1)
                          * torch.log_softmax(cfg_logits(model, val, s), -1)).sum(-1).mean()) for s in (0.0, 1.0, 2.0)}
        unc = val.clone()
        unc[:, 0] = NULL
        assert torch.allclose(cfg_logits(model, val, 0.0), model(unc), atol=1e-5)
    assert ent[2.0] < ent[1.0] < ent[0.0]
    assert nll(model, val) < nll(model, unc)  # the class token carries information


def test_guided_samples_are_deterministic_and_the_pool_pairs_them(model):
    s = generate(model, torch.tensor([0, 3]), 1.5, 1)
    assert torch.equal(s, generate(model, torch.tensor([0, 3]), 1.5, 1)) and s.shape == (2, 65)
    assert s[:, 0].tolist() == [8, 11] and int(s[:, 1:].max()) < 8
    pool = cfg_pool(model, 4, 1.5, 2)
    assert torch.equal(pool[:4, 1:], pool[4:, 1:]) and (pool[4:, 0] == NULL).all() and (pool[:4, 0] < NULL).all()


def test_eight_bits_is_nearly_lossless_and_four_bits_is_not(model):
    val, calib = sequences(256, 7), sequences(32, 5)
    fp = nll(model, val)
    assert fp < 0.6  # learnt: uniform over 8 levels is 2.08 nats
    for method in ("minmax", "smoothquant", "ptq4arvg", "ptq4arvg_v1"):
        assert abs(nll(quantize_model(model, method, 8, calib), val) - fp) < 0.01
    assert nll(quantize_model(model, "minmax", 4, calib), val) > fp + 0.003


def test_official_gps_factors_follow_calculate_scales_hessian():
    """Channel by channel, as the official loop computes them: the outlier channel gets SmoothQuant's factor
    on ranges, every other s_o (||X_i||^2 ||dW_i||^2 / (||dX_i||^2 ||Q(W)_i||^2))^(1/4) with dX_i measured at
    the outlier channel's step and zero point; scaling stays exact in full precision."""
    X, W = _acts(4)
    bits = 4
    s = gps_scales_official(X, W, bits, lambda w: quant_weight(w, bits))
    flat = X.reshape(-1, 10)
    rng = flat.amax(0) - flat.amin(0)
    o = int(rng.argmax())
    s_o = rng[o] ** 0.5 / (W[:, o].max() - W[:, o].min()) ** 0.5
    assert s[o] == pytest.approx(float(s_o), rel=1e-5)
    delta = (flat[:, o].max() - flat[:, o].min()) / 15
    zero = torch.round(-flat[:, o].min() / delta)
    QW = quant_weight(W, bits)
    for i in range(10):
        if i == o:
            continue
        xq = (torch.clamp(torch.round(flat[:, i] / delta) + zero, 0, 15) - zero) * delta
        want = s_o * ((flat[:, i] ** 2).sum() * ((W[:, i] - QW[:, i]) ** 2).sum()
                      / (((flat[:, i] - xq) ** 2).sum() * (QW[:, i] ** 2).sum())) ** 0.25
        assert s[i] == pytest.approx(float(want), rel=1e-4), i
    assert torch.allclose((X / s) @ (W * s).T, X @ W.T, atol=1e-3)


def test_percentile_range_takes_the_clip_with_the_least_error():
    x = torch.randn(20000, generator=torch.Generator().manual_seed(6)) ** 3  # heavy tails: clipping pays
    delta, zero = percentile_range(x, 4)
    errs = []
    for pct in (0.999, 0.9999, 0.99999):
        hi, lo = torch.quantile(x.double(), pct).float(), torch.quantile(x.double(), 1 - pct).float()
        d = (hi - lo) / 15
        errs.append((float(((x - affine_quant(x, d, torch.round(-lo / d), 4)) ** 2).sum()), float(d)))
    assert float(delta) == pytest.approx(min(errs)[1], rel=1e-5)


def test_token_groups_give_sink_and_first_positions_their_own_ranges():
    """The paper's observation (sink tokens and the first positions carry distinct ranges): grouped static
    ranges (0, 1, 2, 3, 4-7, 8+) quantize such activations with less error than one range."""
    g = torch.Generator().manual_seed(7)
    X = torch.randn(32, 16, 8, generator=g)
    X[:, 0] *= 30  # a sink token
    X[:, 1:4] *= 4
    delta, zero = token_group_ranges(X, 4)
    assert delta.shape == (16, 1) and len(torch.unique(delta[8:])) == 1 and len(torch.unique(delta[4:8])) == 1
    grouped = ((X - affine_quant(X, delta, zero, 4)) ** 2).sum()
    d1, z1 = percentile_range(X, 4)
    single = ((X - affine_quant(X, d1, z1, 4)) ** 2).sum()
    assert grouped < 0.5 * single
