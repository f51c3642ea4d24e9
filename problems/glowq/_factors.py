"""Low-rank error factorisations for :mod:`hifo.problems.glowq`: input statistics, whitening, the factors.

All three corrections minimise an output error of the form ``||(E - A B) M||_F`` for a weighting ``M`` of
the layer's input space, whose closed form (Eckart-Young on ``E M``) is ``A B = [E M]_r M^-1``:

* **LQER** (per layer): ``M = diag(RMS of the inputs)``, a diagonal activation scale.
* **QERA** (per layer): ``M = R^{1/2}`` with ``R = E[x x^T]`` the layer's input autocorrelation (the
  closed form that minimises the expected output error ``E ||(E - A B) x||^2`` exactly).
* **GlowQ** (per input-sharing group, as the official ``src/step2_rsvd.py`` does): ``M = Sigma^{1/2}`` with
  ``Sigma = (1 - alpha) R + alpha tr(R)/d I`` (shrinkage toward a scaled identity, alpha = 0.05), ``R``
  pooled over the calibration tokens of the group's shared input; the SVD is taken of the stacked
  ``[E_1; E_2; ...] M`` and its singular values are split evenly, ``A_i = U_i S_r^{1/2}`` and one shared
  ``B = S_r^{1/2} V_r^T M^-1``. Layers that share no input (``o``, ``down``) are groups of one.

Every line is this project's; the official code was read to follow its formulas (the exact SVD of
``process_weighted_svd_group``; its default pipeline uses a randomized SVD of the same matrix).
"""

from __future__ import annotations

import torch
import torch.nn as nn

SHRINKAGE_ALPHA = 0.05  # the official default (--shrinkage_alpha)


def input_autocorrelations(model: nn.Module, calib: torch.Tensor, ctx: int) -> dict[str, torch.Tensor]:
    """``R = X^T X / n`` (uncentred, as the official code accumulates ``xtx``) of every block linear
    layer's input over the calibration text, in float64."""
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = {}
    hooks = []
    for name, mod in model.named_modules():
        if isinstance(mod, nn.Linear) and name.startswith("blocks."):
            def hook(m, args, _out, name=name):
                x = args[0].reshape(-1, args[0].shape[-1]).double()
                sums[name] = sums.get(name, 0) + x.T @ x
                counts[name] = counts.get(name, 0) + len(x)
            hooks.append(mod.register_forward_hook(hook))
    n = (len(calib) - 1) // ctx
    with torch.no_grad():
        model(calib[: n * ctx].view(n, ctx))
    for h in hooks:
        h.remove()
    return {k: sums[k] / counts[k] for k in sums}


def shrink(R: torch.Tensor, alpha: float = SHRINKAGE_ALPHA) -> torch.Tensor:
    """``(1 - alpha) R + alpha tr(R)/d I`` (GlowQ's covariance shrinkage)."""
    d = R.shape[0]
    return (1 - alpha) * R + alpha * torch.trace(R) / d * torch.eye(d, dtype=R.dtype)


def sqrt_and_inv_sqrt(R: torch.Tensor, floor: float = 1e-8) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric ``R^{1/2}`` and ``R^{-1/2}`` from an eigendecomposition in float64 (eigenvalues floored at
    ``floor``, as the official code clamps them), returned in float32."""
    L, Q = torch.linalg.eigh(R.double())
    L = L.clamp_min(floor)
    return ((Q * L.sqrt()) @ Q.T).float(), ((Q / L.sqrt()) @ Q.T).float()


def weighting(kind: str, R: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(M, M^-1)`` of one weighting: ``diag`` (LQER), ``full`` (QERA), ``shrunk`` (GlowQ)."""
    if kind == "diag":
        s = R.diagonal().sqrt().clamp_min(1e-6).float()
        return torch.diag(s), torch.diag(1 / s)
    if kind == "full":
        return sqrt_and_inv_sqrt(R)
    if kind == "shrunk":
        return sqrt_and_inv_sqrt(shrink(R))
    raise ValueError(f"unknown weighting {kind!r}")


def lowrank_factors(errors: list[torch.Tensor], M: torch.Tensor, M_inv: torch.Tensor,
                    rank: int) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """The rank-``rank`` weighted correction of the stacked errors ``[E_1; E_2; ...]`` (one right factor for
    all of them): ``A_i = U_i S_r^{1/2}``, ``B = S_r^{1/2} V_r^T M^-1``. Returns ``([A_i], B, all singular
    values of the stacked weighted error)``. With one error this is the per-layer correction."""
    U, S, Vh = torch.linalg.svd(torch.cat(errors, 0) @ M, full_matrices=False)
    r = min(rank, len(S))
    root = S[:r].sqrt()
    As, row = [], 0
    for E in errors:
        As.append(U[row: row + E.shape[0], :r] * root)
        row += E.shape[0]
    return As, (root[:, None] * Vh[:r]) @ M_inv, S
