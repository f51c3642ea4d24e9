"""GlowQ: group-shared low-rank correction of low-bit quantized weights (CPU scale).

A weight ``W`` (out x in) is quantized by round-to-nearest (3 or 4 bits, asymmetric, groups of 32 input
columns); its error ``E = W - Q(W)`` is partly restored by a low-rank term ``A B`` (``y = Q(W) x + A (B x)``).
The corrections (formulas in :mod:`._factors`):

* ``lqer`` — per layer, ``[E S]_r S^-1`` with ``S`` the diagonal RMS activation scale (LQER);
* ``qera`` — per layer, ``[E R^{1/2}]_r R^{-1/2}`` with ``R`` the full input autocorrelation (QERA's
  closed form for the expected output error);
* ``glowq`` — the official GlowQ: layers that read the *same input* (Q/K/V read the normed residual;
  up and gate the second normed residual) form a group; the stacked error ``[E_1; E_2; ...]`` is whitened
  by ``Sigma^{1/2}`` (the group's input autocorrelation shrunk toward a scaled identity, alpha = 0.05)
  and one SVD gives **one right factor ``B`` shared by the group** (``B x`` computed and cached once per
  group) and a left factor ``A_i`` per layer; ``o`` and ``down`` are groups of one. Extra parameters
  ``r (in + sum_i out_i)`` per group, fewer than per layer's ``sum_i r (in + out_i)`` at equal rank.
* ``glowq_diag`` — the same sharing with LQER's diagonal scale (this project's first version, kept for
  comparison).

**GlowQ-S** (selective) restores only some groups. The official code (``restoration/step3_1`` and
``step4``) ranks groups by one of ``gsvd`` (``sum_i ||A_i||_F^2``, i.e. the sum of the top-``r``
singular values of the whitened stacked error), ``norm_error`` (``||E||_F / ||W||_F`` of the group) or
``layer_order``, and restores growing prefixes of the ranking (:func:`official_ranking`,
:func:`select_prefix`). :func:`select_water_filling` (this project's) instead gives each group its own
rank by greedy captured-energy-per-parameter; the :mod:`hifo.evaluators.glowq_select` slot evolves a
per-group rank choice under a parameter budget.

Metrics: perplexity of the tiny LM (:mod:`._lm`, trained here on generated text) on held-out text and
extra parameters. Departures from the official code: ~0.1M parameters instead of billions, group size 32
(the official 128 exceeds d = 64), the zero point is not rounded, factors stay in float32 (the official
stores fp16), the correction is folded into the weight (same outputs as the cached factored form) and
latency is not measured (a Python-level cache would time the interpreter).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.nn as nn

from ._factors import SHRINKAGE_ALPHA, input_autocorrelations, lowrank_factors, shrink, sqrt_and_inv_sqrt, weighting
from ._lm import TinyLM, corpus, generate_text, perplexity, trained_lm

__all__ = ["TinyLM", "corpus", "generate_text", "perplexity", "trained_lm", "quantize_rtn", "Group", "METHODS",
           "model_groups", "autocorrelations", "build_quantized", "group_stats", "extra_params", "official_ranking",
           "select_prefix", "select_water_filling", "lowrank_factors", "weighting", "shrink", "sqrt_and_inv_sqrt",
           "SHRINKAGE_ALPHA", "MAX_RANK"]

# method -> (weighting, shares the right factor within an input-sharing group)
METHODS = {"lqer": ("diag", False), "qera": ("full", False), "glowq": ("shrunk", True), "glowq_diag": ("diag", True)}
MAX_RANK = 16  # the most singular values group_stats shows (and the largest rank the slot may give)


def quantize_rtn(W: torch.Tensor, bits: int = 4, group: int = 32) -> torch.Tensor:
    """Fake-quantized ``W``: asymmetric min-max round-to-nearest per row and per ``group`` input columns."""
    out, inp = W.shape
    g = W.reshape(out, inp // group, group)
    lo, hi = g.amin(-1, keepdim=True), g.amax(-1, keepdim=True)
    scale = (hi - lo).clamp_min(1e-8) / (2 ** bits - 1)
    q = torch.clamp(torch.round((g - lo) / scale), 0, 2 ** bits - 1)
    return (q * scale + lo).reshape(out, inp)


@dataclass(frozen=True)
class Group:
    """Linear layers of one block that read the same input."""

    name: str  # e.g. "1.qkv"
    layers: tuple[str, ...]  # attribute paths, e.g. ("blocks.1.q", "blocks.1.k", "blocks.1.v")


def model_groups(model: TinyLM) -> list[Group]:
    out = []
    for i in range(len(model.blocks)):
        p = f"blocks.{i}."
        out += [Group(f"{i}.qkv", (p + "q", p + "k", p + "v")), Group(f"{i}.o", (p + "o",)),
                Group(f"{i}.upgate", (p + "up", p + "gate")), Group(f"{i}.down", (p + "down",))]
    return out


def autocorrelations(model: TinyLM, calib: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Input autocorrelation ``E[x x^T]`` of every block linear layer over the calibration text (layers of
    one group read the same input, so their matrices are equal: the official code pools them per group)."""
    return input_autocorrelations(model, corpus()["calib"] if calib is None else calib, model.ctx)


def _weight(model: nn.Module, name: str) -> torch.Tensor:
    weight = model.get_submodule(name).weight
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"{name} has no weight tensor")
    return weight


def _weights(model: TinyLM, names) -> list[torch.Tensor]:
    return [_weight(model, n).detach() for n in names]


def _params_per_rank(model: TinyLM, g: Group, shared: bool) -> int:
    Ws = _weights(model, g.layers)
    inp = Ws[0].shape[1]
    return inp + sum(W.shape[0] for W in Ws) if shared else sum(inp + W.shape[0] for W in Ws)


def extra_params(model: TinyLM, ranks: dict[str, int], method: str = "glowq") -> int:
    """Correction parameters of giving group ``name`` rank ``ranks[name]``: ``r (in + sum out)`` with a
    shared right factor, ``sum r (in + out)`` per layer."""
    shared = METHODS[method][1]
    return sum(r * _params_per_rank(model, g, shared) for g in model_groups(model) if (r := ranks.get(g.name, 0)))


def build_quantized(model: TinyLM, method: str, rank: int | dict[str, int] = 8, bits: int = 4,
                    R: dict[str, torch.Tensor] | None = None) -> tuple[TinyLM, int]:
    """A copy of ``model`` with every block linear layer quantized to ``bits`` and corrected by ``method``
    (``rtn``: none; else a key of :data:`METHODS`) at ``rank`` (one rank for every group, or a rank per
    group name; a group left out or at 0 is not corrected). ``R``: the autocorrelations (computed from the
    calibration text when None). The correction is folded into the weight (``Q + A B``), which gives the
    same outputs as the factored form. Returns the model and its extra parameter count."""
    if method != "rtn" and method not in METHODS:
        raise ValueError(f"unknown method {method!r}")
    groups = model_groups(model)
    ranks = {g.name: rank for g in groups} if isinstance(rank, int) else dict(rank)
    unknown = set(ranks) - {g.name for g in groups}
    if unknown:
        raise ValueError(f"unknown groups {sorted(unknown)}")
    if method != "rtn" and R is None:
        R = autocorrelations(model)
    q = copy.deepcopy(model)
    extra = 0
    for g in groups:
        Ws = _weights(model, g.layers)
        new = [quantize_rtn(W, bits) for W in Ws]
        r = ranks.get(g.name, 0)
        if method != "rtn" and r > 0:
            assert R is not None
            kind, shared = METHODS[method]
            M, M_inv = weighting(kind, R[g.layers[0]])
            Es = [W - Qw for W, Qw in zip(Ws, new)]
            if shared:
                As, B, _ = lowrank_factors(Es, M, M_inv, r)
                new = [Qw + A @ B for Qw, A in zip(new, As)]
            else:
                new = [Qw + (f := lowrank_factors([E], M, M_inv, r))[0][0] @ f[1] for Qw, E in zip(new, Es)]
            extra += r * _params_per_rank(model, g, shared)
        with torch.no_grad():
            for name, Wn in zip(g.layers, new):
                _weight(q, name).copy_(Wn)
    return q, extra


def group_stats(model: TinyLM, bits: int = 4, R: dict[str, torch.Tensor] | None = None) -> list[dict]:
    """What a selection rule may see, per group: name, block index, kind, input and output sizes, extra
    parameters per unit of rank (GlowQ's shared form), ``weight_norm`` and ``error_norm`` (``||W||_F`` and
    ``||E||_F`` of the stacked group, the official ``norm_error`` rule's terms) and the top
    :data:`MAX_RANK` ``singular_values`` of the whitened stacked error ``[E_1; ...] Sigma^{1/2}``: a rank-r
    correction removes the sum of the first r squared ones from the weighted error (Eckart-Young), and
    ``sum_i ||A_i||^2`` at rank r (the official ``gsvd`` rule) is the sum of the first r."""
    R = autocorrelations(model) if R is None else R
    out = []
    for g in model_groups(model):
        Ws = _weights(model, g.layers)
        Es = [W - quantize_rtn(W, bits) for W in Ws]
        M, M_inv = weighting("shrunk", R[g.layers[0]])
        _, _, sv = lowrank_factors(Es, M, M_inv, 1)
        block, kind = g.name.split(".")
        out.append({"name": g.name, "block": int(block), "kind": kind, "in_dim": int(Ws[0].shape[1]),
                    "out_dims": [int(W.shape[0]) for W in Ws], "params_per_rank": _params_per_rank(model, g, True),
                    "weight_norm": float(torch.cat(Ws).norm()), "error_norm": float(torch.cat(Es).norm()),
                    "singular_values": [float(v) for v in sv[:MAX_RANK]]})
    return out


def official_ranking(stats: list[dict], rule: str, rank: int) -> list[str]:
    """Group names, most important first, by one of the official GlowQ-S rules: ``gsvd`` (sum of the top
    ``rank`` singular values), ``norm_error`` (``||E|| / ||W||``), ``layer_order`` (model order)."""
    if rule == "layer_order":
        return [g["name"] for g in stats]
    if rule == "gsvd":
        key = lambda g: sum(g["singular_values"][:rank])  # noqa: E731
    elif rule == "norm_error":
        key = lambda g: g["error_norm"] / g["weight_norm"]  # noqa: E731
    else:
        raise ValueError(f"unknown rule {rule!r}")
    return [g["name"] for g in sorted(stats, key=key, reverse=True)]  # stable: ties keep model order


def select_prefix(stats: list[dict], order: list[str], rank: int, budget: int) -> dict[str, int]:
    """The official restoration: the longest prefix of ``order`` whose groups, each at ``rank``, fit."""
    cost = {g["name"]: g["params_per_rank"] * rank for g in stats}
    chosen, used = {}, 0
    for name in order:
        if used + cost[name] > budget:
            break
        chosen[name], used = rank, used + cost[name]
    return chosen


def select_water_filling(stats: list[dict], budget: int, max_rank: int = MAX_RANK) -> dict[str, int]:
    """A rank per group (this project's rule): repeatedly add one unit of rank to the group whose next
    singular value removes the most whitened error energy per extra parameter, while it fits."""
    ranks = {g["name"]: 0 for g in stats}
    used = 0
    while True:
        best, gain = None, 0.0
        for g in stats:
            r = ranks[g["name"]]
            if r < min(max_rank, len(g["singular_values"])) and used + g["params_per_rank"] <= budget:
                value = g["singular_values"][r] ** 2 / g["params_per_rank"]
                if value > gain:
                    best, gain = g, value
        if best is None:
            return {k: v for k, v in ranks.items() if v}
        ranks[best["name"]] += 1
        used += best["params_per_rank"]
