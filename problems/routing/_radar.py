"""RADAR's network: SVD node embeddings, Sinkhorn mixed-score attention, POMO decoder (torch).

RADAR (Yi, Huang, Ma & Cao, "Learning to Route with Asymmetry-aware DistAnce
Representations", ICLR 2026; official code ``yihang0410/RADAR``, built on MatNet) augments a
MatNet-style encoder-decoder with two pieces, both switchable here for the ablation:

* **static asymmetry (SVD initial embeddings, paper Sec. "static")**: the cost matrix is
  z-scored, ``C~ = (C - mean) / std``, factored by a truncated SVD ``C~ ~ U_k S_k V_k^T``,
  and node ``i`` starts from ``[U_k S_k^1/2 | V_k S_k^1/2]_i`` (its outbound and inbound
  roles; ``(U S^1/2)(V S^1/2)^T`` reconstructs ``C~``), linearly projected to the embedding
  size. The official code uses ``torch.svd_lowrank`` (a randomised approximation of the same
  truncated SVD); here the exact truncated SVD is used, with a canonical sign per singular
  pair so inference is deterministic, and random sign flips of the pairs (which leave
  ``U S V^T`` unchanged) serve as training noise and as test-time augmentation. Without SVD
  (ablation) nodes start from MatNet's random one-hot vectors.
* **dynamic asymmetry (Sinkhorn attention, paper Sec. "dynamic")**: each encoder layer scores
  node pairs MatNet-style, mixing per head the dot product ``q_i k_j / sqrt(d)`` with
  ``C~[i, j]`` and ``C~[j, i]`` through a 3 -> 16 -> 1 MLP, and normalises the scores by
  Sinkhorn iterations (alternating row and column log-sum-exp normalisation, 10 rounds in
  the official code) instead of a row softmax, so attention is (close to) doubly
  stochastic: every node both sends and receives one unit of attention. Without Sinkhorn
  (ablation) it is the usual row softmax.

The decoder is POMO's/MatNet's: query = W1 h_first + W0 h_current, masked multi-head
attention over the node embeddings, then a single-head compatibility ``C tanh(q h_j /
sqrt(d))`` (logit clipping ``C = 10`` in training) and a softmax over unvisited nodes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn


class DecoderDims(Protocol):
    """What the decoder reads of a model's configuration (RadarConfig and MatNet's config both have it)."""

    @property
    def embedding_dim(self) -> int: ...
    @property
    def head_num(self) -> int: ...
    @property
    def qkv_dim(self) -> int: ...


@dataclass(frozen=True)
class RadarConfig:
    """Architecture and the two ablation switches (defaults: a small CPU-sized model; the
    paper uses 256-d embeddings, 8 heads, 5 layers)."""

    embedding_dim: int = 64
    head_num: int = 4
    encoder_layers: int = 3
    ff_hidden_dim: int = 128
    ms_hidden_dim: int = 16
    svd_rank: int = 10  # k in the official code
    use_svd: bool = True
    use_sinkhorn: bool = True
    sinkhorn_iters: int = 10
    logit_clipping: float = 10.0
    one_hot_dim: int = 128  # MatNet's one_hot_seed_cnt for the no-SVD ablation (must be >= n)
    ms_layer1_init: float = 1.0  # official ATSP train.py: (3/3) ** 0.5
    ms_layer2_init: float = math.sqrt(3 / 16)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def qkv_dim(self) -> int:
        return self.embedding_dim // self.head_num


def zscore(cost: torch.Tensor) -> torch.Tensor:
    """Per-instance standardisation of a ``(B, n, n)`` cost tensor, as the official code."""
    mean = cost.mean(dim=(1, 2), keepdim=True)
    std = cost.std(dim=(1, 2), keepdim=True)
    return (cost - mean) / (std + 1e-9)


def sinkhorn(scores: torch.Tensor, iters: int) -> torch.Tensor:
    """Sinkhorn normalisation of the last two dimensions (log domain, official order: row
    then column per round, starting from the row-max-shifted scores). The result has
    columns summing to 1 exactly and rows to 1 up to the remaining Sinkhorn error."""
    if iters < 1:
        raise ValueError("Sinkhorn needs at least one round")
    s = scores - scores.max(dim=-1, keepdim=True).values
    for _ in range(iters):
        s = s - s.logsumexp(dim=-1, keepdim=True)
        s = s - s.logsumexp(dim=-2, keepdim=True)
    return s.exp()


def svd_features(cost_z: torch.Tensor, rank: int, flip: torch.Tensor | None = None) -> torch.Tensor:
    """``[U_k S_k^1/2 | V_k S_k^1/2]``: ``(B, n, 2k)`` node features of a z-scored matrix.

    Each singular pair gets the sign that makes the largest-magnitude entry of its ``U``
    column positive (a canonical choice; SVD fixes a pair only up to a joint sign). ``flip``
    ``(B, k)`` of +-1 flips pairs jointly (data augmentation). For ``n < k`` the missing
    components are zero.
    """
    b, n, _ = cost_z.shape
    u, s, vh = torch.linalg.svd(cost_z)
    k = min(rank, n)
    u, s, v = u[:, :, :k], s[:, :k], vh[:, :k, :].transpose(1, 2)
    pivot = u.abs().argmax(dim=1, keepdim=True)
    sign = torch.sign(u.gather(1, pivot))
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    if flip is not None:
        sign = sign * flip[:, None, :k]
    root = s.clamp_min(0).sqrt()[:, None, :]
    out = torch.cat([u * sign * root, v * sign * root], dim=-1)
    if k < rank:
        pad = cost_z.new_zeros(b, n, rank - k)
        out = torch.cat([out[..., :k], pad, out[..., k:], pad], dim=-1)
    return out


def one_hot_features(batch: int, n: int, dim: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """MatNet's initial embeddings: each node gets a distinct random one-hot vector."""
    if n > dim:
        raise ValueError(f"one-hot initial embeddings need one_hot_dim >= n ({dim} < {n})")
    idx = torch.rand(batch, dim, generator=generator).argsort(dim=1)[:, :n]
    out = torch.zeros(batch, n, dim)
    out.scatter_(2, idx[:, :, None], 1.0)
    return out


class MixedScoreAttention(nn.Module):
    """MatNet's mixed-score multi-head attention with RADAR's ``C[i, j]`` and ``C[j, i]``
    inputs; normalised by Sinkhorn or softmax."""

    def __init__(self, cfg: RadarConfig):
        super().__init__()
        h, m = cfg.head_num, cfg.ms_hidden_dim
        a1, a2 = cfg.ms_layer1_init, cfg.ms_layer2_init
        self.w1 = nn.Parameter(torch.empty(h, 3, m).uniform_(-a1, a1))
        self.b1 = nn.Parameter(torch.empty(h, m).uniform_(-a1, a1))
        self.w2 = nn.Parameter(torch.empty(h, m, 1).uniform_(-a2, a2))
        self.b2 = nn.Parameter(torch.empty(h, 1).uniform_(-a2, a2))
        self.cfg = cfg

    def forward(self, q, k, v, cost_z, sinkhorn_iters: int | None = None):
        # q, k, v: (B, H, n, dk); cost_z: (B, n, n)
        dot = q @ k.transpose(2, 3) / math.sqrt(q.shape[-1])  # (B, H, n, n)
        c = cost_z[:, None, :, :, None]
        # the 3 -> m layer written out per input (cheaper than an einsum over a stacked copy)
        w1 = self.w1[None, :, None, None]  # (1, H, 1, 1, 3, m)
        hid = F.relu(dot[..., None] * w1[..., 0, :] + c * w1[..., 1, :]
                     + c.transpose(2, 3) * w1[..., 2, :] + self.b1[None, :, None, None])
        mixed = hid @ self.w2[None, :, None] + self.b2[None, :, None, None]  # (B, H, n, n, 1)
        mixed = mixed.squeeze(-1)
        if self.cfg.use_sinkhorn:
            weights = sinkhorn(mixed, sinkhorn_iters or self.cfg.sinkhorn_iters)
        else:
            weights = torch.softmax(mixed, dim=-1)
        return weights @ v


class _AddNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.InstanceNorm1d(dim, affine=True, track_running_stats=False)

    def forward(self, a, b):
        return self.norm((a + b).transpose(1, 2)).transpose(1, 2)


class EncoderBlock(nn.Module):
    def __init__(self, cfg: RadarConfig):
        super().__init__()
        d, hd = cfg.embedding_dim, cfg.head_num * cfg.qkv_dim
        self.wq, self.wk, self.wv = nn.Linear(d, hd), nn.Linear(d, hd), nn.Linear(d, hd, bias=False)
        self.attn = MixedScoreAttention(cfg)
        self.combine = nn.Linear(hd, d)
        self.norm1, self.norm2 = _AddNorm(d), _AddNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, cfg.ff_hidden_dim), nn.ReLU(), nn.Linear(cfg.ff_hidden_dim, d))
        self.heads = cfg.head_num

    def _split(self, x):
        b, n, _ = x.shape
        return x.reshape(b, n, self.heads, -1).transpose(1, 2)

    def forward(self, x, cost_z, sinkhorn_iters: int | None = None):
        out = self.attn(self._split(self.wq(x)), self._split(self.wk(x)), self._split(self.wv(x)),
                        cost_z, sinkhorn_iters)
        b, h, n, dk = out.shape
        x = self.norm1(x, self.combine(out.transpose(1, 2).reshape(b, n, h * dk)))
        return self.norm2(x, self.ff(x))


class Decoder(nn.Module):
    """POMO decoder: glimpse over the nodes, then clipped single-head compatibilities (also
    MatNet's, with row queries and column keys)."""

    def __init__(self, cfg: DecoderDims):
        super().__init__()
        d, hd = cfg.embedding_dim, cfg.head_num * cfg.qkv_dim
        self.wq_first, self.wq_last = nn.Linear(d, hd, bias=False), nn.Linear(d, hd, bias=False)
        self.wk, self.wv = nn.Linear(d, hd, bias=False), nn.Linear(d, hd, bias=False)
        self.combine = nn.Linear(hd, d)
        self.heads = cfg.head_num
        self.dim = d

    def _split(self, x):
        b, n, _ = x.shape
        return x.reshape(b, n, self.heads, -1).transpose(1, 2)

    def prepare(self, nodes: torch.Tensor, first: torch.Tensor) -> dict:
        """Cache keys/values of ``nodes`` (B, n, d) and the query part of ``first`` (B, P, d)."""
        return {"k": self._split(self.wk(nodes)), "v": self._split(self.wv(nodes)),
                "single": nodes.transpose(1, 2), "q_first": self._split(self.wq_first(first))}

    def scores(self, cache: dict, last: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Unclipped compatibilities ``q h_j / sqrt(d)`` (B, P, n); ``mask`` is 0 / -inf."""
        q = cache["q_first"] + self._split(self.wq_last(last))
        att = q @ cache["k"].transpose(2, 3) / math.sqrt(q.shape[-1]) + mask[:, None]
        glimpse = torch.softmax(att, dim=-1) @ cache["v"]
        b, h, p, dk = glimpse.shape
        g = self.combine(glimpse.transpose(1, 2).reshape(b, p, h * dk))
        return g @ cache["single"] / math.sqrt(self.dim)


class RadarModel(nn.Module):
    """Encoder (initial embeddings + mixed-score blocks) and POMO decoder."""

    def __init__(self, cfg: RadarConfig):
        super().__init__()
        self.cfg = cfg
        in_dim = 2 * cfg.svd_rank if cfg.use_svd else cfg.one_hot_dim
        self.project = nn.Linear(in_dim, cfg.embedding_dim)
        self.layers = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.encoder_layers))
        self.decoder = Decoder(cfg)

    def initial_features(self, cost_z: torch.Tensor, generator: torch.Generator | None = None,
                         augment: bool = False) -> torch.Tensor:
        b, n, _ = cost_z.shape
        if not self.cfg.use_svd:
            return one_hot_features(b, n, self.cfg.one_hot_dim, generator)
        flip = None
        if augment:
            flip = torch.randint(0, 2, (b, self.cfg.svd_rank), generator=generator).float() * 2 - 1
        return svd_features(cost_z, self.cfg.svd_rank, flip)

    def encode(self, cost: torch.Tensor, generator: torch.Generator | None = None,
               augment: bool = False, sinkhorn_iters: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Node embeddings (B, n, d) and the z-scored costs the encoder saw."""
        cost_z = zscore(cost)
        x = self.project(self.initial_features(cost_z, generator, augment))
        for layer in self.layers:
            x = layer(x, cost_z, sinkhorn_iters)
        return x, cost_z

    def encode_streams(self, cost: torch.Tensor, generator: torch.Generator | None = None, augment: bool = False,
                       sinkhorn_iters: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The rollout interface shared with MatNet: (query embeddings, key embeddings, normalised
        costs); RADAR's single stream serves as both."""
        x, cost_z = self.encode(cost, generator, augment, sinkhorn_iters)
        return x, x, cost_z
