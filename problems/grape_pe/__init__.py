"""GRAPE: Group RepresentAtional Position Encoding (Zhang et al., 2025, arXiv 2512.07805), CPU scale.

A position ``n`` acts on queries and keys through a one-parameter group ``G(n) = exp(n w L)``; since
``G(i)^-1 G(j) = G(j - i)``, the attention logit depends on positions only through ``j - i``.

* **Multiplicative GRAPE (GRAPE-M)**: ``L = a b^T - b a^T`` is a rank-2 skew generator, so ``G(n)`` is a
  rotation in SO(d) (norm preserving) with the closed-form exponential :func:`rank2_exp`
  (``exp(tL) = I + sin(ts)/s L + (1 - cos(ts))/s^2 L^2``, ``s^2 = |a|^2|b|^2 - (a.b)^2``). ``d/2`` generators
  on mutually orthogonal planes commute; their product is ``P R(n) P^T`` (:func:`grape_m_matrix`).
  **RoPE** is the case ``P = I`` (canonical planes ``(2m, 2m+1)``) with the log-uniform spectrum
  ``w_m = base^(-2m/d)`` (:func:`rope_spectrum`). *Learned commuting subspaces*: ``P = exp(S - S^T)``
  and ``log w`` are trained (:class:`MultiplicativePE` with ``learned=True``).
* **Additive GRAPE (GRAPE-A)**, paper section 4.1: queries/keys are lifted to ``R^(d+2)`` (``[q; 1; 0]``,
  ``[k; 0; 1]``) and acted on by the unipotent ``G(n) = I + n w A`` with the rank-1 nilpotent
  ``A = -Lambda A0``, ``A0 = e_(d+2) e_(d+1)^T`` (``A^2 = 0``); the query is transformed by ``G(i)`` and the key
  by ``G(j)^-T`` (streaming-cacheable), which adds the logit bias ``(j - i) w Lambda`` (eq. 4.5-4.6,
  :func:`additive_lift`). The gate ``Lambda = softplus(v.q/sqrt(d)) + softplus(u.k/sqrt(d)) >= 0``
  (:func:`~._model.additive_gates`; ``u``, ``v`` unit vectors as in the official code) keeps the bias a penalty
  that grows with distance for every query and key. ``Lambda = 1`` with the slopes ``w_h = 2^(-8h/H)`` gives
  **ALiBi** exactly (section 4.2); replacing ``n w`` by the cumulative ``-sum_(t<=n) log f_t`` of a sigmoid
  forget gate gives the **Forgetting Transformer (FoX)** bias ``sum_(t=j+1..i) log f_t`` exactly (the
  unipotent group is abelian, so the path product is one lift).

The model (:mod:`._model`) is a 2-layer causal transformer; the task (:mod:`._task`) is multi-query
associative recall trained at length 32 and tested at longer lengths. Departures: the paper trains
billion-token LMs and reports perplexity and downstream scores; the non-commuting mixtures and the
path-integral variant GRAPE-AP are not built. The official code (github.com/model-architectures/GRAPE,
``model/llama-mha-grape-a-*.py``, ``model/llama-mha-grape-m-nonctx.py``) was read, not copied: like it, the
additive slope is ``w_h = softplus(r_h) * s_h`` with ``r_h`` starting at ``softplus^-1(1)`` (so ``w`` starts at the
ALiBi slopes ``s_h``) and the gate directions are L2-normalised; unlike it, there is no QK RMSNorm before the
gates (the model has none), and GRAPE-M here also learns the planes ``P`` (the official non-contextual
GRAPE-M learns only the spectrum on canonical planes); the official models are LLaMA blocks (RMSNorm, SwiGLU)
and ours a plain pre-LN block.
"""

from __future__ import annotations

import torch

from ._model import MultiplicativePE, AdditivePE, TinyTransformer, PE_KINDS, additive_gates
from ._task import accuracy, make_batch, train_and_test, train_model

__all__ = ["rank2_generator", "rank2_exp", "grape_m_matrix", "rope_spectrum", "alibi_slopes", "additive_lift",
           "additive_generator", "additive_gates", "MultiplicativePE", "AdditivePE", "TinyTransformer", "PE_KINDS", "make_batch",
           "accuracy", "train_model", "train_and_test"]


def rank2_generator(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``L = a b^T - b a^T``: skew-symmetric, rank 2 (when ``a``, ``b`` are independent)."""
    return torch.outer(a, b) - torch.outer(b, a)


def rank2_exp(a: torch.Tensor, b: torch.Tensor, theta: float | torch.Tensor) -> torch.Tensor:
    """Closed-form ``exp(theta L)`` for ``L = a b^T - b a^T`` (Rodrigues type): ``L^3 = -s^2 L`` gives
    ``I + sin(theta s)/s L + (1 - cos(theta s))/s^2 L^2``."""
    L = rank2_generator(a, b)
    s = torch.sqrt((a @ a) * (b @ b) - (a @ b) ** 2)
    theta = torch.as_tensor(theta, dtype=a.dtype)
    eye = torch.eye(len(a), dtype=a.dtype)
    return eye + torch.sin(theta * s) / s * L + (1 - torch.cos(theta * s)) / s ** 2 * (L @ L)


def grape_m_matrix(P: torch.Tensor, omegas: torch.Tensor, n: float) -> torch.Tensor:
    """``G(n) = prod_m exp(n w_m L_m)`` with ``L_m = p_(2m+1) p_(2m)^T - p_(2m) p_(2m+1)^T`` the unit rank-2
    generator of the plane of columns ``2m, 2m+1`` of the orthogonal ``P``, oriented so that ``P = I`` turns
    ``e_2m`` towards ``e_2m+1`` as RoPE does (the planes are orthogonal, so the factors commute)."""
    G = torch.eye(P.shape[0], dtype=P.dtype)
    for m, w in enumerate(omegas):
        G = G @ rank2_exp(P[:, 2 * m + 1], P[:, 2 * m], n * w)
    return G


def rope_spectrum(n_planes: int, base: float = 10000.0) -> torch.Tensor:
    """RoPE's log-uniform spectrum ``w_m = base^(-m / n_planes)`` (= ``base^(-2m/d)``)."""
    return base ** (-torch.arange(n_planes, dtype=torch.float64) / n_planes)


def alibi_slopes(heads: int) -> torch.Tensor:
    """ALiBi's geometric head slopes ``2^(-8h/H)``, ``h = 1..H``."""
    return 2.0 ** (-8.0 * torch.arange(1, heads + 1, dtype=torch.float64) / heads)


def additive_generator(d: int, lam: float | torch.Tensor = 1.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The rank-1 nilpotent ``A = -lam e_(d+2) e_(d+1)^T`` on ``R^(d+2)`` (``A @ A = 0``; paper eq. 4.4-4.5)."""
    A = torch.zeros(d + 2, d + 2, dtype=dtype)
    A[d + 1, d] = -torch.as_tensor(lam, dtype=dtype)
    return A


def additive_lift(q: torch.Tensor, k: torch.Tensor, pos_q: float, pos_k: float, w: float,
                  lam: float | torch.Tensor = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Lifted query ``G(pos_q) [q; 1; 0]`` and key ``G(pos_k)^-T [k; 0; 1]`` with ``G(n) = I + n w A``,
    ``A = -lam A0`` (``G(n)^-1 = I - n w A``, eq. 4.2); their dot product is ``q.k + (pos_k - pos_q) w lam``."""
    d = len(q)
    A = additive_generator(d, lam, q.dtype)
    eye = torch.eye(d + 2, dtype=q.dtype)
    qh = torch.cat([q, q.new_tensor([1.0, 0.0])])
    kh = torch.cat([k, k.new_tensor([0.0, 1.0])])
    return (eye + pos_q * w * A) @ qh, (eye - pos_k * w * A).T @ kh
