"""Muon — MomentUm Orthogonalized by Newton–Schulz (Jordan et al., 2024), with AdamW for the
parameters it should not touch.

Per 2-D weight ``W`` (a conv filter bank is viewed as ``out x (in * kh * kw)``), following the
reference ``muon_update`` of ``KellerJordan/Muon``:

1. momentum  ``M <- beta M + (1 - beta) G``  (an EMA, ``lerp``);
2. Nesterov  ``U = G + beta (M - G)``  (or ``U = M`` without Nesterov);
3. orthogonalise ``O = NS_q(U)`` (:func:`newton_schulz`, default 5 quintic steps) or the exact
   polar factor ``U V^T`` by SVD (``orthogonalizer="svd"``, the idealisation analysed in theory);
4. shape scaling ``O <- O * max(1, rows / cols)^(1/2)`` (``scale="keller"``), or
   ``0.2 * sqrt(max(rows, cols))`` (``scale="match_adamw"``: Liu et al. 2025, "Muon is scalable
   for LLM training", §2.2, which makes the update RMS match AdamW's so its learning rate can be
   reused);
5. decoupled weight decay and step ``W <- W (1 - lr wd) - lr O``.

Embeddings, output heads, biases and gains are trained by AdamW (Loshchilov & Hutter) in the same
optimizer, as the reference ``MuonWithAuxAdam`` does: param groups carry ``use_muon``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch

from ._newton_schulz import MUON_QUINTIC, newton_schulz, polar_svd

MUON_DEFAULTS: dict[str, Any] = dict(
    lr=0.02, momentum=0.95, nesterov=True, weight_decay=0.0, ns_steps=5,
    coefficients=MUON_QUINTIC, orthogonalizer="ns", scale="keller",
)
ADAMW_DEFAULTS: dict[str, Any] = dict(lr=3e-3, betas=(0.9, 0.95), eps=1e-10, weight_decay=0.0)


def as_matrix(t: torch.Tensor) -> torch.Tensor:
    """2-D view of a weight: conv filters ``(out, in, kh, kw)`` become ``(out, in*kh*kw)``."""
    if t.ndim < 2:
        raise ValueError(f"Muon needs a matrix-shaped parameter, got shape {tuple(t.shape)}")
    return t.reshape(t.shape[0], -1)


def shape_scale(rows: int, cols: int, scale: str = "keller") -> float:
    """Step 4 of the module docstring."""
    if scale == "keller":
        return max(1.0, rows / cols) ** 0.5
    if scale == "match_adamw":
        return 0.2 * max(rows, cols) ** 0.5
    if scale == "none":
        return 1.0
    raise ValueError(f"unknown Muon scale {scale!r}; use 'keller', 'match_adamw' or 'none'")


def orthogonalize(U: torch.Tensor, orthogonalizer: str = "ns", ns_steps: int | None = 5,
                  coefficients: Any = MUON_QUINTIC) -> torch.Tensor:
    """Step 3: ``newton_schulz`` (``"ns"``) or the exact polar factor (``"svd"``)."""
    if orthogonalizer == "ns":
        return newton_schulz(U, ns_steps, coefficients)
    if orthogonalizer == "svd":
        return polar_svd(U)
    raise ValueError(f"unknown orthogonalizer {orthogonalizer!r}; use 'ns' or 'svd'")


def muon_update(grad: torch.Tensor, momentum_buffer: torch.Tensor, *, beta: float = 0.95,
                nesterov: bool = True, orthogonalizer: str = "ns", ns_steps: int | None = 5,
                coefficients: Any = MUON_QUINTIC, scale: str = "keller") -> torch.Tensor:
    """Steps 1–4 for one weight; updates ``momentum_buffer`` in place, leaves ``grad`` alone.

    Returns the update in the parameter's shape (to be subtracted, times the learning rate).
    """
    momentum_buffer.lerp_(grad, 1 - beta)
    update = grad.lerp(momentum_buffer, beta) if nesterov else momentum_buffer.clone()
    U = as_matrix(update)
    O = orthogonalize(U, orthogonalizer, ns_steps, coefficients)
    O = O * shape_scale(U.shape[0], U.shape[1], scale)
    return O.reshape(grad.shape)


def adamw_update(grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor, step: int,
                 betas: tuple[float, float], eps: float) -> torch.Tensor:
    """Bias-corrected Adam direction ``m_hat / (sqrt(v_hat) + eps)``; moments updated in place."""
    exp_avg.lerp_(grad, 1 - betas[0])
    exp_avg_sq.lerp_(grad.square(), 1 - betas[1])
    m_hat = exp_avg / (1 - betas[0] ** step)
    v_hat = exp_avg_sq / (1 - betas[1] ** step)
    return m_hat / (v_hat.sqrt() + eps)


class Muon(torch.optim.Optimizer):
    """Muon for groups with ``use_muon=True``, AdamW for the others (single process).

    Example::

        groups = [dict(params=hidden_matrices, use_muon=True, lr=0.02),
                  dict(params=everything_else, use_muon=False, lr=3e-3)]
        opt = Muon(groups)

    Muon group keys: ``lr, momentum, nesterov, weight_decay, ns_steps, coefficients,
    orthogonalizer ('ns' | 'svd'), scale``. AdamW group keys: ``lr, betas, eps, weight_decay``.
    A plain iterable of parameters is treated as one Muon group.
    """

    def __init__(self, params: Iterable[Any], **defaults: Any) -> None:
        unknown = set(defaults) - set(MUON_DEFAULTS) - set(ADAMW_DEFAULTS)
        if unknown:
            raise TypeError(f"unknown Muon options {sorted(unknown)}")
        groups = list(params)
        if groups and not isinstance(groups[0], dict):
            groups = [dict(params=groups, use_muon=True)]
        for group in groups:
            muon = group.get("use_muon", True)
            extra = set(group) - {"params", "use_muon"} - set(MUON_DEFAULTS if muon else ADAMW_DEFAULTS)
            if extra:
                raise TypeError(f"unknown options {sorted(extra)} in a {'Muon' if muon else 'AdamW'} group")
            base = MUON_DEFAULTS if group.setdefault("use_muon", True) else ADAMW_DEFAULTS
            for key, value in {**base, **defaults}.items():
                if key in base:
                    group.setdefault(key, value)
            if group["use_muon"]:
                for p in group["params"]:
                    as_matrix(p)  # fail early on a vector in a Muon group
        super().__init__(groups, {})

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if group["use_muon"]:
                    if not state:
                        state["momentum_buffer"] = torch.zeros_like(p)
                    update = muon_update(
                        p.grad, state["momentum_buffer"], beta=group["momentum"],
                        nesterov=group["nesterov"], orthogonalizer=group["orthogonalizer"],
                        ns_steps=group["ns_steps"], coefficients=group["coefficients"],
                        scale=group["scale"])
                else:
                    if not state:
                        state["step"] = 0
                        state["exp_avg"] = torch.zeros_like(p)
                        state["exp_avg_sq"] = torch.zeros_like(p)
                    state["step"] += 1
                    update = adamw_update(p.grad, state["exp_avg"], state["exp_avg_sq"],
                                          state["step"], group["betas"], group["eps"])
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(update, alpha=-group["lr"])
        return loss
