"""The tiny transformer of :mod:`hifo.problems.grape`: digits as a sequence of 8 row tokens.

An 8x8 digit becomes 8 tokens (its rows, 8 pixels each) -> linear embedding + learned positions ->
pre-LN transformer blocks (width 32, 2 heads, MLP 64, GELU) -> mean pool -> linear classifier. Attention
is written out (no fused kernel) so that ``torch.func.jvp`` runs through it; it mixes tokens of one example
only, never across the batch, as the rank-1 Jacobian estimator requires.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS, TOKEN_DIM = 8, 8  # 8 rows of 8 pixels


class RowEmbed(nn.Module):
    """``(B, 64)`` pixels -> ``(B, 8, d)``: a shared linear map of each row plus a learned position vector."""

    def __init__(self, d: int):
        super().__init__()
        self.proj = nn.Linear(TOKEN_DIM, d)
        self.pos = nn.Parameter(torch.randn(TOKENS, d) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x.reshape(len(x), TOKENS, TOKEN_DIM)) + self.pos


class Block(nn.Module):
    """Pre-LN transformer block: ``x + Attn(LN(x))`` then ``x + MLP(LN(x))`` (bidirectional attention)."""

    def __init__(self, d: int, heads: int, d_mlp: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, d_mlp), nn.GELU(), nn.Linear(d_mlp, d))

    def attend(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        w = F.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.heads), dim=-1)
        return self.out((w @ v).transpose(1, 2).reshape(B, T, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attend(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class MeanPool(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(1)


def transformer_parts(d: int = 32, heads: int = 2, d_mlp: int = 64,
                      depth: int = 2) -> tuple[nn.ModuleList, nn.Module]:
    """The hidden blocks (block 0 = embedding + first transformer block; each later block one transformer
    block; every block's output ``(B, 8, d)`` is one GrAPE "layer") and the head (mean pool + linear)."""
    blocks: list[nn.Module] = [nn.Sequential(RowEmbed(d), Block(d, heads, d_mlp))]
    blocks += [Block(d, heads, d_mlp) for _ in range(depth - 1)]
    return nn.ModuleList(blocks), nn.Sequential(MeanPool(), nn.Linear(d, 10))
