"""COSMOS (Liu et al., 2025, "COSMOS: A Hybrid Adaptive Optimizer for Memory-Efficient Training
of LLMs"; reference code ``lliu606/COSMOS``, ``COSMOS_optim.py``).

For a weight ``W`` of shape ``m x n`` (``n`` = input dimension, as in ``nn.Linear``), COSMOS splits
the gradient along the leading rank-``r`` eigensubspace of its second moment ``E[G^T G]``:

* subspace basis ``P`` (``n x r``) and projected second moment ``S = P^T E[G^T G] P`` (``r x r``).
  Step 1: ``P`` = top-``r`` eigenvectors of ``G^T G``, ``S = (1 - b2) P^T G^T G P``. Later steps
  run one power iteration with QR on the EMA ``b2 P S P^T + (1 - b2) G^T G``:
  ``P' = QR(b2 P S + (1 - b2) G^T G P)``, then ``S' = P'^T (b2 P S P^T + (1 - b2) G^T G) P'``.
* momentum ``M <- b1 M + G`` (unnormalised; ``c1 = (1 - b1^t) / (1 - b1)`` is its total weight)
  and, in the subspace, an Adam second moment ``V <- b2 V + (1 - b2) (G P)^2`` (``m x r``).
* the direction ``D`` is Nesterov ``(G + b1 M) / (1 + b1 c1)`` or plain ``M / c1``;
* the SOAP-like part (Vyas et al., 2024, Adam in the eigenbasis) on the subspace:
  ``A = ((D P) / (sqrt(V / (1 - b2^t)) + eps)) P^T``;
* the Muon-like part on the residual: ``R = NS_5(D - D P P^T)``, normalised to
  ``sqrt(m n) R / ||R||_F``;
* the update ``U = A + gamma R`` is normalised and scaled:
  ``W <- W (1 - lr wd) - lr * lr_ratio * sqrt(m n) * U / ||U||_F``, i.e. its RMS is
  ``lr * lr_ratio`` per entry.

Limits (checked in the tests): ``r = 0`` leaves only the residual part, an orthogonalised
Nesterov momentum, i.e. Muon up to a scalar; ``r = n`` (full) makes ``P`` square orthogonal, the
residual vanishes and COSMOS is Adam in the rotating eigenbasis (one-sided SOAP); when the
eigenbasis is the coordinate basis that is Adam itself.

Deviations from the reference, all deliberate: non-matrix parameters get a standard AdamW with the
group's ``betas`` (the reference hard-codes ``0.1`` and ``0.9`` there); ``r`` is capped at ``n``
(the reference asserts a fixed 64); conv filters are viewed as matrices like in Muon (the
reference gives them to its Adam branch); Newton–Schulz runs in float32 instead of bfloat16; a
residual below ``1e-6`` of the direction's norm counts as zero (the reference would orthogonalise
the rounding noise of an exactly-zero residual and scale it up to norm ``sqrt(m n)``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch

from ._muon import adamw_update, as_matrix
from ._newton_schulz import MUON_QUINTIC, newton_schulz

_NEGLIGIBLE = 1e-6  # relative size below which the residual is rounding noise

# The reference constructor's defaults (``COSMOS(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
# lr_ratio=0.1, rank=64, weight_decay=0)``); ``gamma`` (the 0.2 on the residual) and
# ``ns_steps`` are constants there. Before this was aligned the defaults here were betas
# (0.9, 0.95), lr_ratio 1.0 and rank 16; callers that want other values pass them.
COSMOS_DEFAULTS: dict[str, Any] = dict(
    lr=1e-3, betas=(0.9, 0.999), eps=1e-8, lr_ratio=0.1, rank=64, gamma=0.2, nesterov=True,
    weight_decay=0.0, ns_steps=5,
)


class COSMOS(torch.optim.Optimizer):
    """COSMOS for matrix parameters (``ndim >= 2``), AdamW for the rest, in one optimizer.

    A group with ``use_cosmos=False`` is all AdamW (use it for embeddings and output heads).
    """

    def __init__(self, params: Iterable[Any], **defaults: Any) -> None:
        merged = {**COSMOS_DEFAULTS, **defaults}
        unknown = set(defaults) - set(COSMOS_DEFAULTS)
        if unknown:
            raise TypeError(f"unknown COSMOS options {sorted(unknown)}")
        if not 0.0 <= merged["betas"][0] < 1.0 or not 0.0 <= merged["betas"][1] < 1.0:
            raise ValueError(f"invalid betas {merged['betas']}")
        if merged["rank"] < 0:
            raise ValueError("rank must be >= 0")
        super().__init__(params, dict(merged, use_cosmos=True))

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
                if group["use_cosmos"] and p.ndim >= 2:
                    self._matrix_step(p, group)
                else:
                    self._adamw_step(p, group)
        return loss

    def _adamw_step(self, p: torch.Tensor, group: dict[str, Any]) -> None:
        state = self.state[p]
        if not state:
            state.update(step=0, exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
        state["step"] += 1
        assert p.grad is not None  # step() only passes parameters that have a gradient
        update = adamw_update(p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"],
                              group["betas"], group["eps"])
        p.mul_(1 - group["lr"] * group["weight_decay"])
        p.add_(update, alpha=-group["lr"])

    def _matrix_step(self, p: torch.Tensor, group: dict[str, Any]) -> None:
        assert p.grad is not None  # step() only passes parameters that have a gradient
        G = as_matrix(p.grad)
        m, n = G.shape
        state = self.state[p]
        if not state:
            r = min(int(group["rank"]), n)
            state.update(step=0, rank=r, exp_avg=torch.zeros_like(G),
                         P=G.new_zeros(n, r), S=G.new_zeros(r, r), exp_avg_sq=G.new_zeros(m, r))
        state["step"] += 1
        direction = cosmos_direction(G, state, group["betas"], group["eps"], group["gamma"],
                                     group["nesterov"], group["ns_steps"])
        scale = (m * n) ** 0.5
        p.mul_(1 - group["lr"] * group["weight_decay"])
        p.add_(direction.reshape(p.shape), alpha=-group["lr"] * group["lr_ratio"] * scale)


def track_subspace(G: torch.Tensor, P: torch.Tensor, S: torch.Tensor, step: int,
                   beta2: float) -> tuple[torch.Tensor, torch.Tensor]:
    """New ``(P, S)``: eigen-initialisation at step 1, then one power iteration + QR."""
    r = P.shape[1]
    GtG_P = lambda basis: G.mT @ (G @ basis)  # noqa: E731 - never forms the n x n G^T G later on
    if step == 1:
        eigvecs = torch.linalg.svd(G.mT @ G, full_matrices=False)[0]  # G^T G is PSD: SVD = eigen
        P_new = eigvecs[:, :r]
        GP = G @ P_new
        return P_new, (1 - beta2) * (GP.mT @ GP)
    Q, _ = torch.linalg.qr(beta2 * (P @ S) + (1 - beta2) * GtG_P(P), mode="reduced")
    rotation = P.mT @ Q  # old basis expressed in the new one
    GQ = G @ Q
    return Q, beta2 * (rotation.mT @ S @ rotation) + (1 - beta2) * (GQ.mT @ GQ)


def cosmos_direction(G: torch.Tensor, state: dict[str, Any], betas: tuple[float, float],
                     eps: float, gamma: float, nesterov: bool, ns_steps: int) -> torch.Tensor:
    """Unit-Frobenius-norm COSMOS update direction for one matrix; updates ``state`` in place.

    ``state`` holds ``step, rank, exp_avg (m x n), P (n x r), S (r x r), exp_avg_sq (m x r)``.
    """
    beta1, beta2 = betas
    step, r = state["step"], state["rank"]
    m, n = G.shape
    state["exp_avg"].mul_(beta1).add_(G)
    c1 = (1 - beta1**step) / (1 - beta1)  # total weight of the unnormalised momentum
    c2 = 1 - beta2**step
    if nesterov:
        D = (G + beta1 * state["exp_avg"]) / (1 + beta1 * c1)
    else:
        D = state["exp_avg"] / c1
    if r > 0:
        state["P"], state["S"] = track_subspace(G, state["P"], state["S"], step, beta2)
        P = state["P"]
        GP = G @ P
        state["exp_avg_sq"].mul_(beta2).addcmul_(GP, GP, value=1 - beta2)
        DP = D @ P
        adaptive = (DP / ((state["exp_avg_sq"] / c2).sqrt() + eps)) @ P.mT
        residual = D - DP @ P.mT
    else:
        adaptive = torch.zeros_like(D)
        residual = D
    if residual.norm() <= _NEGLIGIBLE * D.norm():
        # Exactly zero in exact arithmetic (r = n, or D inside the subspace): orthogonalising
        # and renormalising the rounding noise would blow it up to norm sqrt(m n).
        R = torch.zeros_like(D)
    else:
        R = newton_schulz(residual, ns_steps, MUON_QUINTIC)
        R = (m * n) ** 0.5 * R / (R.norm() + eps)
    U = adaptive + gamma * R
    return U / (U.norm() + eps)
