"""A 2-layer causal transformer with pluggable positional encodings (for :mod:`hifo.problems.grape_pe`).

No absolute position embedding: position enters only through the attention logits, as
``(G(i) q_i) . (G(j) k_j) / sqrt(dh) + bias_ij``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

PE_KINDS = ("nope", "rope", "grape_m", "alibi", "grape_a", "grape_a_q", "fox")


def rotate_pairs(x: torch.Tensor, omegas: torch.Tensor) -> torch.Tensor:
    """Rotate each plane ``(2m, 2m+1)`` of ``x`` (``... x T x dh``) at position ``n`` by angle ``n w_m``."""
    T = x.shape[-2]
    ang = torch.arange(T, dtype=x.dtype)[:, None] * omegas.to(x.dtype)[None, :]
    c, s = torch.cos(ang), torch.sin(ang)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)


class MultiplicativePE(nn.Module):
    """GRAPE-M: ``G(n) = P R(n) P^T``. Fixed (``learned=False``): ``P = I`` and the given spectrum, which is
    RoPE for :func:`~hifo.problems.grape_pe.rope_spectrum`. Learned: ``P = exp(S - S^T)`` (one orthogonal
    basis per layer, shared by the heads; starts at ``I``) and ``log w`` (starts at the given spectrum).
    The trailing ``P`` of ``G`` cancels in ``G(i)q . G(j)k`` and is not applied."""

    omegas: torch.Tensor  # buffer (fixed spectrum)

    def __init__(self, dh: int, omegas: torch.Tensor, learned: bool = False):
        super().__init__()
        self.learned = learned
        if learned:
            self.S = nn.Parameter(torch.zeros(dh, dh))
            self.log_w = nn.Parameter(torch.log(omegas.float().clamp_min(1e-6)))
        else:
            self.register_buffer("omegas", omegas.float())

    def basis(self) -> torch.Tensor | None:
        return torch.linalg.matrix_exp(self.S - self.S.T) if self.learned else None

    def spectrum(self) -> torch.Tensor:
        return self.log_w.exp() if self.learned else self.omegas

    def forward(self, q, k, x):
        P, w = self.basis(), self.spectrum()
        if P is not None:
            q, k = q @ P, k @ P  # rows: (P^T q)^T
        return rotate_pairs(q, w), rotate_pairs(k, w), None


def additive_gates(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Additive GRAPE's non-negative gates (paper eq. 4.6): ``softplus(v.q / sqrt(d))`` and
    ``softplus(u.k / sqrt(d))`` over the last axis, ``v`` and ``u`` L2-normalised (as in the official code)."""
    d = q.shape[-1]
    vn, un = F.normalize(v, dim=-1), F.normalize(u, dim=-1)
    return F.softplus((q * vn).sum(-1) / math.sqrt(d)), F.softplus((k * un).sum(-1) / math.sqrt(d))


class AdditivePE(nn.Module):
    """GRAPE-A logit biases (``bias[b, h, i, j]``, causal ``j <= i``):

    * ``alibi``: ``-s_h (i - j)`` with ALiBi's slopes ``s_h`` (the gate is 1 and ``w`` fixed);
    * ``grape_a``: eq. 4.6, ``(j - i) w_h (softplus(v_h.q_i/sqrt(dh)) + softplus(u_h.k_j/sqrt(dh)))``
      (GRAPE-A-QK) with ``w_h = softplus(r_h) s_h``, ``r_h`` starting at ``softplus^-1(1)`` (``w`` starts at
      the slopes ``s_h``), ``u_h``, ``v_h`` unit directions drawn N(0, 1/dh) as in the official code;
    * ``grape_a_q``: the official query-gated case ``(j - i) w_h softplus(v_h.q_i/sqrt(dh))``;
    * ``fox``: ``sum_(t=j+1..i) log f_t``, ``f_t = sigmoid(x_t W + b)`` per head (the path form of the lift).

    The gates are non-negative and ``w_h >= 0``, so every bias is a penalty non-increasing in ``i - j`` for any
    query and key (an unbounded gate such as ``1 + q.u`` could turn it into a reward).
    """

    slopes: torch.Tensor  # buffer: the per-head slopes s_h

    def __init__(self, kind: str, d: int, dh: int, heads: int, slopes: torch.Tensor):
        super().__init__()
        self.kind = kind
        if kind not in ("alibi", "grape_a", "grape_a_q", "fox"):
            raise ValueError(kind)
        if kind != "fox":
            self.register_buffer("slopes", slopes.float())
        if kind in ("grape_a", "grape_a_q"):
            self.raw = nn.Parameter(torch.full((heads,), math.log(math.expm1(1.0))))  # softplus(raw) = 1
            self.v = nn.Parameter(torch.randn(heads, dh) / math.sqrt(dh))
            if kind == "grape_a":
                self.u = nn.Parameter(torch.randn(heads, dh) / math.sqrt(dh))
        elif kind == "fox":
            self.gate = nn.Linear(d, heads)
            nn.init.zeros_(self.gate.weight)
            nn.init.constant_(self.gate.bias, 3.0)

    def omega(self) -> torch.Tensor:
        """The per-head slopes ``w_h`` (ALiBi: the fixed ``s_h``; GRAPE-A: ``softplus(r_h) s_h``)."""
        return self.slopes if self.kind == "alibi" else F.softplus(self.raw) * self.slopes

    def forward(self, q, k, x):
        T = q.shape[-2]
        rel = (torch.arange(T)[None, :] - torch.arange(T)[:, None]).to(q.dtype).clamp_max(0)  # j - i (<= 0 causal)
        if self.kind == "fox":
            c = torch.cumsum(F.logsigmoid(self.gate(x)), 1).transpose(1, 2)  # B x H x T
            return q, k, c[..., :, None] - c[..., None, :]
        w = self.omega()[:, None, None]
        if self.kind == "alibi":
            return q, k, w * rel
        key_dir = self.u if self.kind == "grape_a" else self.v  # grape_a_q: the key gate is not used
        lam_q, lam_k = additive_gates(q, k, self.v[:, None, :], key_dir[:, None, :])  # B x H x T each
        lam = lam_q[..., :, None] + (lam_k[..., None, :] if self.kind == "grape_a" else 0.0)
        return q, k, w * rel * lam


class Block(nn.Module):
    def __init__(self, d: int, heads: int, pe: nn.Module | None):
        super().__init__()
        self.heads, self.pe = heads, pe
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        h = self.n1(x)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(h).chunk(3, -1))
        bias = None
        if self.pe is not None:
            q, k, bias = self.pe(q, k, h)
        logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if bias is not None:
            logits = logits + bias
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        a = logits.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.n2(x))


class TinyTransformer(nn.Module):
    """Causal transformer (``layers`` blocks, pre-norm) whose only position signal is ``pe``:
    one of :data:`PE_KINDS`. ``omegas`` (``dh/2`` plane frequencies) sets the spectrum of ``rope`` and
    the starting spectrum of ``grape_m`` (default: RoPE's, base ``base``); ``slopes`` (``heads`` values, or
    ``layers x heads``) the slopes ``s_h`` of the additive kinds (default: ALiBi's in every layer)."""

    def __init__(self, vocab: int, pe: str = "rope", d: int = 64, heads: int = 4, layers: int = 2,
                 omegas: torch.Tensor | None = None, base: float = 10000.0, slopes: torch.Tensor | None = None):
        super().__init__()
        if pe not in PE_KINDS:
            raise ValueError(f"unknown positional encoding {pe!r}; known: {PE_KINDS}")
        dh = d // heads
        if omegas is None:
            omegas = base ** (-torch.arange(dh // 2, dtype=torch.float64) / (dh // 2))
        if slopes is None:
            slopes = 2.0 ** (-8.0 * torch.arange(1, heads + 1, dtype=torch.float64) / heads)
        per_layer = torch.as_tensor(slopes, dtype=torch.float64).reshape(-1, heads).expand(layers, heads)

        def make_pe(layer: int) -> nn.Module | None:
            if pe == "nope":
                return None
            if pe in ("rope", "grape_m"):
                return MultiplicativePE(dh, omegas, learned=pe == "grape_m")
            return AdditivePE(pe, d, dh, heads, per_layer[layer])

        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads, make_pe(layer)) for layer in range(layers))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))
