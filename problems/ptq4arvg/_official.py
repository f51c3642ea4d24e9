"""PTQ4ARVG as the official code places it (``github.com/BienLuky/PTQ4ARVG``, PAR/``quant/``), for :mod:`.`.

Read, not copied; every line is this project's. What the official code does, and what is followed here:

* **placement** (``quant_model.py``): gain-projected scaling (GPS) only on the layers fed by an (adaLN)
  norm, ``qkv`` and ``fc1`` of each block and the output ``head``; token-aware static quantization only
  on the layers fed by the attention output and the MLP hidden state, ``proj`` and ``fc2``; both kinds
  quantize weights per output channel.
* **GPS** (``smooth.py``, ``calculate_scales_hessian``): the channel with the largest activation range
  ``o`` gets SmoothQuant's factor on ranges, ``s_o = range(X_o)^a / range(W_:,o)^(1-a)`` (a = 0.5); every
  other channel ``i`` gets ``s_i = s_o (||X_i||^2 ||dW_i||^2 / (||dX_i||^2 ||Q(W)_i||^2))^(1/4)``, with
  ``dX_i`` the error of quantizing channel ``i`` with the outlier channel's step and zero point and
  ``dW`` the weight quantization error (``s_i = 1`` when the denominator is 0). Activations are divided,
  weight columns multiplied by ``s``.
* **token-aware ranges** (``quantizer.py``, ``TokenAwareUniformQuantizer``): one static range per group
  of positions, (0), (1), (2), (3), (4-7), (8+), each chosen among the percentile clips 0.999, 0.9999,
  0.99999 by the smallest squared quantization error, zero point rounded.

Departures: the official code also shifts norm-fed activations to symmetric around zero and folds the
factors into the adaLN parameters (same outputs in exact arithmetic; here the division is explicit), takes
the norm-fed layers' activation ranges per channel (here one percentile-searched range per tensor), keeps
running averages of the factors and ranges over calibration batches (here one batch), quantizes the
attention matmuls (not here) and has asymmetric MSE-searched weight ranges (here symmetric min-max).
"""

from __future__ import annotations

import torch

PERCENTILES = (0.999, 0.9999, 0.99999)
TOKEN_GROUPS = ((0, 1), (1, 2), (2, 3), (3, 4), (4, 8), (8, None))  # positions sharing one static range
NORM_FED = ("qkv", "fc1")  # plus the output head
TOKEN_AWARE = ("proj", "fc2")


def affine_quant(x: torch.Tensor, delta: torch.Tensor, zero: torch.Tensor, bits: int) -> torch.Tensor:
    """Quantize-dequantize with step ``delta`` and integer zero point ``zero`` (as the official quantizer)."""
    return (torch.clamp(torch.round(x / delta) + zero, 0, 2 ** bits - 1) - zero) * delta


def step_and_zero(lo: torch.Tensor, hi: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    delta = ((hi - lo) / (2 ** bits - 1)).clamp_min(1e-8)
    return delta, torch.round(-lo / delta)


def percentile_range(x: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(delta, zero)`` of the percentile clip (0.999 / 0.9999 / 0.99999 and their complements) whose
    quantization error ``||x - Q(x)||^2`` is smallest (the first on ties)."""
    flat = x.reshape(-1).double()
    best = None
    for pct in PERCENTILES:
        hi, lo = torch.quantile(flat, pct), torch.quantile(flat, 1.0 - pct)
        delta, zero = step_and_zero(lo.float(), hi.float(), bits)
        err = float(((x - affine_quant(x, delta, zero, bits)) ** 2).sum())
        if best is None or err < best[0]:
            best = (err, delta, zero)
    assert best is not None
    return best[1], best[2]


def token_group_ranges(X: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Static per-position ``(delta, zero)`` (``T x 1`` each) of activations ``X`` (``N x T x C``): one
    percentile-searched range per group of :data:`TOKEN_GROUPS`."""
    T = X.shape[1]
    delta, zero = torch.ones(T, 1), torch.zeros(T, 1)
    for a, b in TOKEN_GROUPS:
        if a >= T:
            break
        d, z = percentile_range(X[:, a:b], bits)
        delta[a:b], zero[a:b] = d, z
    return delta, zero


def gps_scales_official(X: torch.Tensor, W: torch.Tensor, bits: int, weight_quant, alpha: float = 0.5) -> torch.Tensor:
    """GPS factors per input channel as ``calculate_scales_hessian`` computes them (module docstring).
    ``X``: ``... x C`` activations, ``W``: ``out x C``, ``weight_quant``: the weight quantize-dequantize."""
    flat = X.reshape(-1, X.shape[-1]).T  # C x (N T)
    hi, lo = flat.amax(1), flat.amin(1)
    o = int((hi - lo).argmax())
    w_range = W.amax(0) - W.amin(0)
    s_o = (hi[o] - lo[o]).clamp_min(1e-8) ** alpha / w_range[o].clamp_min(1e-8) ** (1 - alpha)
    delta, zero = step_and_zero(lo[o], hi[o], bits)  # the outlier channel's quantizer, applied to every channel
    dX = flat - affine_quant(flat, delta, zero, bits)
    QW = weight_quant(W)
    num = (flat ** 2).sum(1) * ((W - QW) ** 2).sum(0)
    den = (dX ** 2).sum(1) * (QW ** 2).sum(0)
    s = torch.where(den > 0, s_o * (num / den.clamp_min(1e-30)) ** 0.25, torch.ones_like(num))
    s[o] = s_o
    return s.clamp_min(1e-8)
