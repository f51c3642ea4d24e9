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

**Distribution-guided calibration** (DGC, :func:`dgc_select`) here keeps the ``k`` pool samples whose
features lie farthest (Mahalanobis) from the pool's distribution. The official DGC differs: it samples with
classifier-free guidance and uses the Mahalanobis distances only to choose the *fraction* of conditional vs
unconditional calibration samples; the tiny generator here has no CFG (partial, issue 30).

Metric: next-pixel negative log-likelihood (nats/token) on held-out images. Departures: the paper quantizes
0.3-3B ARVG models (VAR, RAR, PAR, MAR) and reports FID/IS; here the model has ~80k parameters and the sample
quality proxy is the likelihood; the official code's other details are listed in :mod:`._official`.
"""

from __future__ import annotations

import copy
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._model import SEQ, TinyARVG, draw, nll, sequences, trained_arvg
from ._official import (TOKEN_AWARE, TOKEN_GROUPS, affine_quant, gps_scales_official, percentile_range,
                        token_group_ranges)

__all__ = ["TinyARVG", "draw", "sequences", "nll", "trained_arvg", "fake_quant", "act_range", "gps_scales",
           "smoothquant_scales", "quant_weight", "dgc_select", "mahalanobis", "sample_features", "quantize_model", "METHODS",
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


def dgc_select(features: torch.Tensor, k: int) -> list[int]:
    """Distribution-guided calibration: the ``k`` pool samples farthest from the pool's distribution."""
    return torch.topk(mahalanobis(features), k).indices.sort().values.tolist()


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
