"""PTQ4ARVG: post-training quantization of autoregressive visual generation models (Liu et al., ICLR 2026), CPU scale.

Every linear layer of the transformer blocks of :class:`TinyARVG` (trained here on generated 8x8 images) and
its output head get fake-quantized weights (symmetric, per output channel) and activations (asymmetric,
static: ranges fixed from calibration data, none computed at inference):

* ``minmax``: per-tensor activation range (baseline);
* ``smoothquant``: per-input-channel migration ``s_j = max|X_j|^a / max|W_j|^(1-a)`` (``a = 0.5``), then minmax;
* ``ptq4arvg``: the method as the official code (``github.com/BienLuky/PTQ4ARVG``) places it
  (:mod:`._official`): **gain-projected scaling** (GPS) on the norm-fed layers (``qkv``, ``fc1``, ``head``)
  with ``calculate_scales_hessian``'s factors and one percentile-searched range per tensor, and **static
  token-wise quantization** on ``proj`` and ``fc2``: one percentile-searched range per group of positions
  (0, 1, 2, 3, 4-7, 8+);
* ``ptq4arvg_v1``: this project's first version (GPS from a loss model derived here, :func:`gps_scales`,
  with one min-max range per position, on all four block layers; the head per-tensor min-max), kept for
  comparison.

**Distribution-guided calibration** (DGC) as the official ``sample_c2i_ddp_cali_dgc.py`` does it
(:func:`dgc_fraction`, :func:`dgc_calibration`): calibration images are sampled with classifier-free guidance
(:func:`generate`); each exists twice, after its class token (conditional) and after the null token
(unconditional). The Mahalanobis distance of each conditional sample to the conditional samples' Gaussian
(pseudo-inverse covariance) and of each unconditional one to the unconditional samples' is computed; of the
``n`` largest of the ``2n`` distances, the share that is conditional is the fraction ``pct`` of conditional
calibration samples (0.5 when the two distance lists agree to 1e-3); the calibration set is the first
``round(pct k)`` conditional and the first ``k - round(pct k)`` unconditional samples. Departure: the official
features are the last block's output at position 0, which in a class-token-first model depends on the class
only (every unconditional sample has the same one, distance 0, so ``pct`` is 1 whenever the conditional ones
differ); here they are the mean final feature over positions (:func:`sample_features`). This project's
earlier stand-in, the ``k`` samples farthest from the pool's Gaussian, stays as :func:`farthest_select`.

Metric: next-pixel negative log-likelihood (nats/token) on held-out images. Departures: the paper quantizes
0.3-3B ARVG models (VAR, RAR, PAR, MAR) and reports FID/IS; here the model has ~80k parameters and the sample
quality proxy is the likelihood; the official code's other details are listed in :mod:`._official`.
"""

from __future__ import annotations

import copy
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._model import CLASS_DROPOUT, NULL, SEQ, TinyARVG, cfg_logits, cfg_nll, draw, generate, nll, sequences, trained_arvg
from ._official import (TOKEN_AWARE, TOKEN_GROUPS, affine_quant, gps_scales_official, percentile_range,
                        token_group_ranges)

__all__ = ["TinyARVG", "draw", "sequences", "nll", "trained_arvg", "fake_quant", "act_range", "gps_scales",
           "smoothquant_scales", "quant_weight", "farthest_select", "dgc_fraction", "dgc_calibration", "mahalanobis_pinv",
           "cfg_logits", "cfg_nll", "cfg_kl", "generate", "cfg_pool", "NULL", "CLASS_DROPOUT",
           "mahalanobis", "sample_features", "quantize_model", "METHODS",
           "outlier_stats", "gps_scales_official", "percentile_range", "token_group_ranges", "affine_quant",
           "TOKEN_GROUPS"]

METHODS = ("minmax", "smoothquant", "ptq4arvg", "ptq4arvg_v1")
_LAYERS = ("qkv", "proj", "fc1", "fc2")


def fake_quant(x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, bits: int) -> torch.Tensor:
    """Asymmetric uniform quantize-dequantize of ``x`` to ``bits`` on the range ``[lo, hi]`` (broadcast)."""
    n = 2 ** bits - 1
    scale = (hi - lo).clamp_min(1e-8) / n
    return torch.clamp(torch.round((x - lo) / scale), 0, n) * scale + lo


def quant_weight(W: torch.Tensor, bits: int) -> torch.Tensor:
    """Symmetric per-output-channel quantize-dequantize."""
    m = W.abs().amax(1, keepdim=True).clamp_min(1e-8)
    n = 2 ** (bits - 1) - 1
    return torch.round(W / m * n).clamp(-n, n) * m / n


def act_range(X: torch.Tensor, token_wise: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Static range of activations ``X`` (``N x T x C``): one for the tensor, or one per token position."""
    if token_wise:
        return X.amin((0, 2))[:, None], X.amax((0, 2))[:, None]  # T x 1
    return X.amin(), X.amax()


def smoothquant_scales(X: torch.Tensor, W: torch.Tensor, alpha: float = 0.5) -> torch.Tensor:
    ax = X.abs().flatten(0, -2).amax(0).clamp_min(1e-5)
    aw = W.abs().amax(0).clamp_min(1e-5)
    return ax ** alpha / aw ** (1 - alpha)


def gps_scales(X: torch.Tensor, W: torch.Tensor, bits: int, token_wise: bool, alpha: float = 0.5) -> torch.Tensor:
    """Gain-projected scaling factors per input channel (see the module docstring). ``X``: ``N x T x C``."""
    C = X.shape[-1]
    flat = X.flatten(0, -2)
    rng = flat.amax(0) - flat.amin(0)
    o = int(rng.argmax())
    s = torch.ones(C)
    s[o] = smoothquant_scales(X, W, alpha)[o]
    Xs, Ws = X / s, W * s
    lo, hi = act_range(Xs, token_wise)
    dX = (Xs - fake_quant(Xs, lo, hi, bits)).flatten(0, -2)
    dW = Ws - quant_weight(Ws, bits)
    x2, dx2 = (Xs.flatten(0, -2) ** 2).sum(0), (dX ** 2).sum(0)
    w2, dw2 = (Ws ** 2).sum(0), (dW ** 2).sum(0)
    opt = (x2 * dw2 / (dx2 * w2).clamp_min(1e-12)).clamp_min(1e-12) ** 0.25
    # no range may grow: activation |x_i|/s_i within the scaled tensor's bound, weight |w_i| s_i within each row's
    amax_x = Xs.abs().flatten(0, -2).amax(0)
    lo_b = amax_x / Xs.abs().max()
    hi_b = (Ws.abs().amax(1, keepdim=True) / Ws.abs().clamp_min(1e-12)).amin(0)
    gps = torch.minimum(torch.maximum(opt, lo_b), hi_b)
    gps[o] = 1.0
    return s * gps


def mahalanobis(F_: torch.Tensor) -> torch.Tensor:
    """Mahalanobis distance of each row of ``F_`` to the rows' Gaussian fit (ridge 1e-3 on the covariance)."""
    mu = F_.mean(0)
    cov = torch.cov(F_.T) + 1e-3 * torch.eye(F_.shape[1])
    d = F_ - mu
    return torch.sqrt((d @ torch.linalg.solve(cov, d.T)).diagonal().clamp_min(0))


def farthest_select(features: torch.Tensor, k: int) -> list[int]:
    """This project's earlier DGC stand-in: the ``k`` pool samples farthest from the pool's distribution."""
    return torch.topk(mahalanobis(features), k).indices.sort().values.tolist()


def mahalanobis_pinv(F_: torch.Tensor) -> torch.Tensor:
    """Mahalanobis distance of each row of ``F_`` to the rows' Gaussian, with the pseudo-inverse of the sample
    covariance (the official ``mahalanobis_to_distribution``; float64 here)."""
    X = F_.double()
    d = X - X.mean(0)
    P = torch.linalg.pinv(d.T @ d / (len(X) - 1))
    return torch.sqrt(((d @ P) * d).sum(1).clamp_min(0))


def dgc_fraction(dist_cond: torch.Tensor, dist_uncond: torch.Tensor, atol: float = 1e-3) -> float:
    """The official DGC rule: the share of conditional samples among the ``n`` largest of the ``2n`` distances
    (each sample's to its own kind's distribution); 0.5 when the two lists agree to ``atol``."""
    n = len(dist_cond)
    if dist_cond.shape == dist_uncond.shape and torch.allclose(dist_cond, dist_uncond, atol=atol):
        return 0.5
    top = torch.topk(torch.cat([dist_cond, dist_uncond]), n).indices
    return int((top < n).sum()) / n


def cfg_pool(model: TinyARVG, n: int, scale: float, seed: int) -> torch.Tensor:
    """``2n`` candidate calibration sequences: ``n`` images sampled with guidance ``scale`` (classes drawn from
    ``seed``) after their class token, then the same ``n`` after the null token (the CFG batch's two halves)."""
    classes = torch.randint(0, 4, (n,), generator=torch.Generator().manual_seed(seed))
    cond = generate(model, classes, scale, seed)
    uncond = cond.clone()
    uncond[:, 0] = NULL
    return torch.cat([cond, uncond])


def dgc_calibration(features: torch.Tensor, k: int) -> list[int]:
    """Indices into a :func:`cfg_pool` (``n`` conditional then ``n`` unconditional) of the official DGC's
    calibration set of ``k``: the first ``round(pct k)`` conditional and the first ``k - round(pct k)``
    unconditional samples, ``pct`` by :func:`dgc_fraction` on ``features`` (one row per candidate)."""
    n = len(features) // 2
    pct = dgc_fraction(mahalanobis_pinv(features[:n]), mahalanobis_pinv(features[n:]))
    nc = round(pct * k)
    return list(range(nc)) + list(range(n, n + k - nc))


def cfg_kl(model: TinyARVG, quantized: TinyARVG, seq: torch.Tensor, scale: float) -> float:
    """Mean per-token KL divergence (nats) from ``model``'s guided next-pixel distribution to ``quantized``'s,
    teacher-forced on ``seq``: how far the quantized sampler drifts from the full-precision one."""
    with torch.no_grad():
        p = F.log_softmax(cfg_logits(model, seq, scale), -1)
        q = F.log_softmax(cfg_logits(quantized, seq, scale), -1)
        return float((p.exp() * (p - q)).sum(-1).mean())


def sample_features(model: TinyARVG, seqs: torch.Tensor) -> torch.Tensor:
    """Mean final feature per sequence (``N x d``), what DGC and the evolved selection see."""
    with torch.no_grad():
        return model.features(seqs).mean(1)


class QuantLinear(nn.Module):
    """Per-output-channel weights and static activation quantization: ``x / s`` quantized on the range
    ``[lo, hi]`` (min-max form) or with the step ``delta`` and integer zero point ``zero`` (the official
    quantizer's form); scalars or one per token position (``T x 1``)."""

    s: torch.Tensor
    lo: torch.Tensor
    hi: torch.Tensor

    def __init__(self, lin: nn.Linear, s: torch.Tensor, lo, hi, bits: int, affine: bool = False):
        super().__init__()
        self.register_buffer("s", s)
        self.register_buffer("lo", torch.as_tensor(lo))  # delta when affine
        self.register_buffer("hi", torch.as_tensor(hi))  # zero point when affine
        self.weight = nn.Parameter(quant_weight(lin.weight.detach() * s, bits), requires_grad=False)
        self.bias = lin.bias
        self.bits = bits
        self.affine = affine

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T = x.shape[1]
        lo, hi = (self.lo[:T], self.hi[:T]) if self.lo.dim() == 2 else (self.lo, self.hi)
        xs = x / self.s
        xq = affine_quant(xs, lo, hi, self.bits) if self.affine else fake_quant(xs, lo, hi, self.bits)
        return F.linear(xq, self.weight, self.bias)


def _inputs(model: TinyARVG, calib: torch.Tensor) -> dict[str, torch.Tensor]:
    acts: dict[str, torch.Tensor] = {}
    hooks = []
    for key, mod in _quantized_layers(model):
        def hook(_m, args, _o, key=key):
            acts[key] = args[0].detach()
        hooks.append(mod.register_forward_hook(hook))
    with torch.no_grad():
        model(calib)
    for h in hooks:
        h.remove()
    return acts


def _quantized_layers(model: TinyARVG) -> list[tuple[str, nn.Module]]:
    return [(f"{i}.{n}", getattr(b, n)) for i, b in enumerate(model.blocks) for n in _LAYERS] + [("head", model.head)]


def _set_layer(model: TinyARVG, key: str, new: nn.Module) -> None:
    if key == "head":
        model.head = new  # type: ignore[assignment]
    else:
        i, name = key.split(".")
        setattr(model.blocks[int(i)], name, new)


def _quantized_layer(method: str, key: str, lin: nn.Linear, X: torch.Tensor, bits: int) -> QuantLinear:
    W = lin.weight.detach()
    kind = key.split(".")[-1]
    if method == "ptq4arvg":  # the official placement (see ._official)
        if kind in TOKEN_AWARE:
            delta, zero = token_group_ranges(X, bits)
            return QuantLinear(lin, torch.ones(W.shape[1]), delta, zero, bits, affine=True)
        s = gps_scales_official(X, W, bits, lambda w: quant_weight(w, bits))
        delta, zero = percentile_range(X / s, bits)
        return QuantLinear(lin, s, delta, zero, bits, affine=True)
    if method == "ptq4arvg_v1":  # this project's first version: GPS-v1 and per-position ranges everywhere
        s = gps_scales(X, W, bits, token_wise=True) if kind != "head" else torch.ones(W.shape[1])
        lo, hi = act_range(X / s, True)
        return QuantLinear(lin, s, lo, hi, bits)
    s = smoothquant_scales(X, W) if method == "smoothquant" else torch.ones(W.shape[1])
    lo, hi = act_range(X / s, False)
    return QuantLinear(lin, s, lo, hi, bits)


def quantize_model(model: TinyARVG, method: str, bits: int, calib: torch.Tensor) -> TinyARVG:
    """A copy of ``model`` with every block linear layer and the output head quantized (W``bits``A``bits``)
    by ``method``, calibrated on the sequences ``calib``."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {METHODS}")
    q = copy.deepcopy(model)
    acts = _inputs(model, calib)
    for key, lin in _quantized_layers(q):
        assert isinstance(lin, nn.Linear)
        _set_layer(q, key, _quantized_layer(method, key, lin, acts[key], bits))
    return q


def outlier_stats(model: TinyARVG, calib: torch.Tensor) -> dict[str, float]:
    """Activation outlier statistics over the block inputs: max channel range / median channel range, and
    max token-position range / median token-position range (averaged over layers)."""
    acts = _inputs(model, calib)
    ch, tok = [], []
    for X in acts.values():
        r = X.flatten(0, 1).amax(0) - X.flatten(0, 1).amin(0)
        ch.append(float(r.max() / r.median()))
        t = X.amax((0, 2)) - X.amin((0, 2))
        tok.append(float(t.max() / t.median()))
    return {"channel_ratio": sum(ch) / len(ch), "token_ratio": sum(tok) / len(tok), "seq_len": float(SEQ - 1)}
