"""MatNet's two-stream encoder for the ATSP (torch): the "no SVD, no Sinkhorn" baseline of RADAR.

MatNet (Kwon, Choo, Yoon, Park, Park & Gwon, "Matrix Encoding Networks for Neural Combinatorial
Optimization", NeurIPS 2021; official code ``yd-kwon/MatNet``, ``ATSP/ATSP_MatNet``) encodes a
cost matrix ``D`` (rows = "from" nodes, columns = "to" nodes) with two sets of embeddings:

* **row embeddings** start at zero, **column embeddings** at a one-hot vector of a random ID
  (distinct per node, redrawn at every encoding);
* every encoder layer has two *mixed-score* attention blocks with separate weights: rows attend
  to columns with ``D`` and columns attend to rows with ``D^T``; both read the layer's input
  embeddings (the two streams are updated in parallel). Per head, the scaled dot product
  ``q_i k_j / sqrt(d_k)`` and ``D[i, j]`` go through a 2 -> 16 -> 1 MLP (ReLU) whose output is
  the attention score (row softmax). Each block then does add & instance norm, feed-forward,
  add & instance norm;
* the decoder is POMO's: query ``W_first h^row_first + W_cur h^row_current``, a masked
  multi-head glimpse over the **column** embeddings, then single-head compatibilities with the
  column embeddings, clipped ``C tanh(.)`` with ``C = 10``, softmax over unvisited nodes.

Deliberate departures from the official ATSP MatNet, to fit a CPU and this repository's ATSP
rows (all stated in the README):

* size: 64-d embeddings, 4 heads of 16, 3 layers, feed-forward 128 (official: 256-d, 16 heads
  of 16, 5 layers, feed-forward 512); the mixed-score MLP (2 -> 16 -> 1, uniform inits
  ``sqrt(1/2)`` and ``sqrt(1/16)``) is the official one;
* the one-hot IDs have ``one_hot_dim = 128`` entries and a learned bias-free linear map to the
  embedding size (official: ``one_hot_seed_cnt = n`` placed directly in the 256-d embedding,
  which needs ``n <= embedding_dim``); 128 IDs let the n = 20 model run on TSPLIB up to n = 100;
* costs are divided by the instance's largest entry (official: tmat's raw values in [0, 1));
  the division leaves every tour ranking unchanged and makes TSPLIB's integer distances usable;
* no instance augmentation anywhere in training (as the official trainer); at test time extra
  "augmentations" are re-encodings with fresh random IDs, as in this repository's other rows.

The layer internals (bias-free ``W_q, W_k, W_v``, combine with bias, instance norm with affine
parameters) follow the official code.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ._radar import Decoder, _AddNorm, one_hot_features


@dataclass(frozen=True)
class MatNetConfig:
    """A CPU-sized MatNet (see the module docstring for the official sizes)."""

    embedding_dim: int = 64
    head_num: int = 4
    encoder_layers: int = 3
    ff_hidden_dim: int = 128
    ms_hidden_dim: int = 16
    logit_clipping: float = 10.0
    one_hot_dim: int = 128  # random IDs (must be >= n)
    ms_layer1_init: float = math.sqrt(1 / 2)  # official ATSP train.py
    ms_layer2_init: float = math.sqrt(1 / 16)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def qkv_dim(self) -> int:
        return self.embedding_dim // self.head_num


def scale_costs(cost: torch.Tensor) -> torch.Tensor:
    """``cost / max(cost)`` per instance of a ``(B, n, n)`` tensor (all-zero matrices stay zero)."""
    top = cost.amax(dim=(1, 2), keepdim=True)
    return cost / torch.where(top > 0, top, torch.ones_like(top))


class MixedScoreMHA(nn.Module):
    """MatNet's mixed-score attention: per head, ``MLP(q_i k_j / sqrt(d_k), D[i, j])`` -> softmax."""

    def __init__(self, cfg: MatNetConfig):
        super().__init__()
        h, m = cfg.head_num, cfg.ms_hidden_dim
        a1, a2 = cfg.ms_layer1_init, cfg.ms_layer2_init
        self.w1 = nn.Parameter(torch.empty(h, 2, m).uniform_(-a1, a1))  # inputs: (score, cost)
        self.b1 = nn.Parameter(torch.empty(h, m).uniform_(-a1, a1))
        self.w2 = nn.Parameter(torch.empty(h, m, 1).uniform_(-a2, a2))
        self.b2 = nn.Parameter(torch.empty(h, 1).uniform_(-a2, a2))

    def mixed_scores(self, q: torch.Tensor, k: torch.Tensor, cost: torch.Tensor) -> torch.Tensor:
        """``(B, H, rows, cols)`` mixed scores; q ``(B, H, rows, dk)``, k ``(B, H, cols, dk)``,
        cost ``(B, rows, cols)``."""
        dot = q @ k.transpose(2, 3) / math.sqrt(q.shape[-1])
        w1 = self.w1[None, :, None, None]  # (1, H, 1, 1, 2, m)
        hid = F.relu(dot[..., None] * w1[..., 0, :] + cost[:, None, :, :, None] * w1[..., 1, :]
                     + self.b1[None, :, None, None])
        return (hid @ self.w2[None, :, None] + self.b2[None, :, None, None]).squeeze(-1)

    def forward(self, q, k, v, cost):
        return torch.softmax(self.mixed_scores(q, k, cost), dim=-1) @ v


class MatNetBlock(nn.Module):
    """One stream's half of a layer: ``x`` attends to ``other`` under ``cost`` (x-rows by other-cols)."""

    def __init__(self, cfg: MatNetConfig):
        super().__init__()
        d, hd = cfg.embedding_dim, cfg.head_num * cfg.qkv_dim
        self.wq = nn.Linear(d, hd, bias=False)
        self.wk = nn.Linear(d, hd, bias=False)
        self.wv = nn.Linear(d, hd, bias=False)
        self.attn = MixedScoreMHA(cfg)
        self.combine = nn.Linear(hd, d)
        self.norm1, self.norm2 = _AddNorm(d), _AddNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, cfg.ff_hidden_dim), nn.ReLU(), nn.Linear(cfg.ff_hidden_dim, d))
        self.heads = cfg.head_num

    def _split(self, x):
        b, n, _ = x.shape
        return x.reshape(b, n, self.heads, -1).transpose(1, 2)

    def forward(self, x, other, cost):
        out = self.attn(self._split(self.wq(x)), self._split(self.wk(other)), self._split(self.wv(other)), cost)
        b, h, n, dk = out.shape
        x = self.norm1(x, self.combine(out.transpose(1, 2).reshape(b, n, h * dk)))
        return self.norm2(x, self.ff(x))


class MatNetLayer(nn.Module):
    def __init__(self, cfg: MatNetConfig):
        super().__init__()
        self.row_block, self.col_block = MatNetBlock(cfg), MatNetBlock(cfg)

    def forward(self, rows, cols, cost):
        # both blocks read the layer's inputs, as the official EncoderLayer
        return self.row_block(rows, cols, cost), self.col_block(cols, rows, cost.transpose(1, 2))


class MatNetModel(nn.Module):
    """Two-stream encoder and POMO decoder (row queries, column keys); same rollout interface as
    :class:`~hifo.problems.routing._radar.RadarModel` (:meth:`encode_streams`)."""

    def __init__(self, cfg: MatNetConfig):
        super().__init__()
        self.cfg = cfg
        self.id_embed = nn.Linear(cfg.one_hot_dim, cfg.embedding_dim, bias=False)
        self.layers = nn.ModuleList(MatNetLayer(cfg) for _ in range(cfg.encoder_layers))
        self.decoder = Decoder(cfg)

    def encode_with_ids(self, cost: torch.Tensor, col_one_hot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Row and column embeddings ``(B, n, d)`` of an already scaled ``cost`` with the given
        ``(B, n, one_hot_dim)`` column IDs (rows start at zero)."""
        cols = self.id_embed(col_one_hot)
        rows = torch.zeros_like(cols)
        for layer in self.layers:
            rows, cols = layer(rows, cols, cost)
        return rows, cols

    def encode_streams(self, cost: torch.Tensor, generator: torch.Generator | None = None, augment: bool = False,
                       sinkhorn_iters: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(rows, columns, scaled costs). Fresh random IDs from ``generator`` at every call, so
        ``augment`` changes nothing here; ``sinkhorn_iters`` is ignored (MatNet has none)."""
        del augment, sinkhorn_iters
        b, n, _ = cost.shape
        scaled = scale_costs(cost)
        ids = one_hot_features(b, n, self.cfg.one_hot_dim, generator)
        rows, cols = self.encode_with_ids(scaled, ids)
        return rows, cols, scaled
