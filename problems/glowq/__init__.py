"""GlowQ: group-shared low-rank correction of 4-bit quantized weights (CPU scale).

A weight ``W`` (out x in) is quantized by round-to-nearest (4-bit, asymmetric, groups of 32 input
columns); its error ``E = W - Q(W)`` is partly restored by a low-rank term ``A B`` (``y = Q(W) x + A (B x)``).

* **per-layer** (LQER-style baseline): each layer gets its own rank-``r`` pair from the SVD of
  ``E S`` (``S`` = diag RMS of the layer's calibration inputs), ``B = V_r^T S^-1``, ``A = U_r Sigma_r``;
  extra parameters ``r (in + out)`` per layer.
* **GlowQ** (group-shared): layers that read the *same input* (Q/K/V read the normed residual; up and
  gate read the second normed residual) form a group; the stacked error ``[E_1; E_2; ...] S`` has one
  SVD and its top-``r`` right singular vectors give **one right factor ``B`` shared by the group**, so
  ``B x`` is computed (and cached) once per group; each layer keeps its own left factor
  ``A_i = E_i S V_r``. Extra parameters ``r (in + sum_i out_i)`` per group: fewer than per-layer at
  equal rank. Singleton groups (``o``, ``down``) reduce to per-layer.
* **GlowQ-S** (selective): restore only the groups whose correction buys the most (captured error
  energy per extra parameter), under a parameter budget (:func:`select_groups_greedy`; the
  :mod:`hifo.evaluators.glowq_select` slot evolves this choice).

Metrics: perplexity of the tiny LM (:mod:`._lm`, trained here on generated text) on held-out text,
extra parameters (and bytes at fp16). Departures (no official code was found): the paper works on
billion-parameter LLMs with its own calibration set and reports kernel latency; here the model has ~0.1M
parameters, ``S`` is the diagonal RMS activation scale (LQER's choice) in both methods, and latency is
not measured (a Python-level cache of ``B x`` would time the interpreter, not the method).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.nn as nn

from ._lm import TinyLM, corpus, generate_text, perplexity, trained_lm

__all__ = ["TinyLM", "corpus", "generate_text", "perplexity", "trained_lm", "quantize_rtn", "Group",
           "model_groups", "input_scales", "shared_factors", "per_layer_factors", "build_quantized",
           "group_stats", "select_groups_greedy", "extra_params"]


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


def input_scales(model: TinyLM, calib: torch.Tensor) -> dict[str, torch.Tensor]:
    """RMS of each linear layer's input features over the calibration text (the diagonal ``S``)."""
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = {}
    hooks = []
    for name, mod in model.named_modules():
        if isinstance(mod, nn.Linear) and name.startswith("blocks."):
            def hook(m, args, _out, name=name):
                x = args[0].reshape(-1, args[0].shape[-1])
                sums[name] = sums.get(name, 0) + (x ** 2).sum(0)
                counts[name] = counts.get(name, 0) + len(x)
            hooks.append(mod.register_forward_hook(hook))
    n = (len(calib) - 1) // model.ctx
    with torch.no_grad():
        model(calib[: n * model.ctx].view(n, model.ctx))
    for h in hooks:
        h.remove()
    return {k: (sums[k] / counts[k]).sqrt().clamp_min(1e-6) for k in sums}


def _weights(model: TinyLM, names) -> list[torch.Tensor]:
    return [_weight(model, n).detach() for n in names]


def _weight(model: nn.Module, name: str) -> torch.Tensor:
    weight = model.get_submodule(name).weight
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"{name} has no weight tensor")
    return weight


def shared_factors(errors: list[torch.Tensor], s: torch.Tensor, rank: int):
    """GlowQ's factors for one group: one shared right factor ``B`` (r x in) from the top-``r`` right
    singular vectors of the stacked scaled error, and a left factor ``A_i = E_i S V_r`` per layer.
    Returns ``(B, [A_i], singular values of the stacked scaled error)``."""
    stacked = torch.cat(errors, 0) * s
    _, sv, Vh = torch.linalg.svd(stacked, full_matrices=False)
    V = Vh[:rank].T  # in x r, orthonormal
    B = (V / s[:, None]).T
    return B, [(E * s) @ V for E in errors], sv


def per_layer_factors(E: torch.Tensor, s: torch.Tensor, rank: int):
    """LQER-style factors of one layer: ``A = U_r Sigma_r``, ``B = V_r^T S^-1``."""
    U, sv, Vh = torch.linalg.svd(E * s, full_matrices=False)
    return U[:, :rank] * sv[:rank], Vh[:rank] / s[None, :]


def extra_params(model: TinyLM, groups: list[Group], rank: int, method: str) -> int:
    total = 0
    for g in groups:
        Ws = _weights(model, g.layers)
        inp, outs = Ws[0].shape[1], [W.shape[0] for W in Ws]
        total += rank * (inp + sum(outs)) if method == "glowq" else sum(rank * (inp + o) for o in outs)
    return total


def build_quantized(model: TinyLM, method: str, rank: int = 8, restore: list[str] | None = None,
                    bits: int = 4, scales: dict[str, torch.Tensor] | None = None) -> tuple[TinyLM, int]:
    """A copy of ``model`` with every block linear layer quantized to ``bits`` and corrected by
    ``method`` (``rtn``: none; ``per_layer``; ``glowq``) on the groups named in ``restore`` (all when
    None). The correction is folded into the weight (``Q + A B``), which gives the same outputs as the
    factored form. Returns the model and its extra parameter count."""
    if method not in ("rtn", "per_layer", "glowq"):
        raise ValueError(f"unknown method {method!r}")
    q = copy.deepcopy(model)
    groups = model_groups(model)
    chosen = {g.name for g in groups} if restore is None else set(restore)
    unknown = chosen - {g.name for g in groups}
    if unknown:
        raise ValueError(f"unknown groups {sorted(unknown)}")
    if scales is None:
        scales = input_scales(model, corpus()["calib"]) if method != "rtn" else {}
    extra = 0
    for g in groups:
        Ws = _weights(model, g.layers)
        Qs = [quantize_rtn(W, bits) for W in Ws]
        new = Qs
        if method != "rtn" and g.name in chosen:
            s = scales[g.layers[0]]
            Es = [W - Qw for W, Qw in zip(Ws, Qs)]
            if method == "glowq":
                B, As, _ = shared_factors(Es, s, rank)
                new = [Qw + A @ B for Qw, A in zip(Qs, As)]
            else:
                new = [Qw + A @ B for Qw, (A, B) in zip(Qs, (per_layer_factors(E, s, rank) for E in Es))]
            extra += extra_params(model, [g], rank, method)
        with torch.no_grad():
            for name, Wn in zip(g.layers, new):
                _weight(q, name).copy_(Wn)
    return q, extra


def group_stats(model: TinyLM, rank: int, bits: int = 4, scales: dict[str, torch.Tensor] | None = None) -> list[dict]:
    """What a selection rule may see, per group: its name, block index, kind, input and output sizes,
    the extra parameters of restoring it, the scaled error energy ``||E S||_F^2`` of the stacked group
    and the part of it the rank-``r`` shared correction captures (top-``r`` squared singular values)."""
    scales = scales or input_scales(model, corpus()["calib"])
    out = []
    for g in model_groups(model):
        Ws = _weights(model, g.layers)
        Es = [W - quantize_rtn(W, bits) for W in Ws]
        _, _, sv = shared_factors(Es, scales[g.layers[0]], rank)
        block, kind = g.name.split(".")
        out.append({"name": g.name, "block": int(block), "kind": kind, "in_dim": int(Ws[0].shape[1]),
                    "out_dims": [int(W.shape[0]) for W in Ws], "extra_params": extra_params(model, [g], rank, "glowq"),
                    "error_energy": float((sv ** 2).sum()), "captured_energy": float((sv[:rank] ** 2).sum())})
    return out


def select_groups_greedy(stats: list[dict], budget: int) -> list[str]:
    """GlowQ-S: restore groups in order of captured error energy per extra parameter while they fit."""
    chosen, used = [], 0
    for g in sorted(stats, key=lambda g: -g["captured_energy"] / g["extra_params"]):
        if used + g["extra_params"] <= budget:
            chosen.append(g["name"])
            used += g["extra_params"]
    return chosen
