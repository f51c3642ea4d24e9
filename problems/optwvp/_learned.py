"""Stage 1, learned: a small DeCoST policy with parallel route / service-time decoding.

A CPU-sized version of the official ``SINGLEModel`` (an attention model in the POMO family):

* **encoder** — node features ``(x, y, e/T, l/T, p/10)`` (coordinates over 100; the official
  ``OPTWVP`` feature set, windows normalised by the depot's horizon), a linear embedding and
  ``layers`` self-attention blocks whose scores get a per-head bias learnt from the pairwise
  distance (the official ``edge_proj``). LayerNorm stands in for the official instance norm;
* **parallel decoding** (DeCoST §4.1) — at every step two decoders read the same context
  (the embedding of the current node and the current time ``/ T``), each with its own
  multi-head glimpse over the node embeddings: the *route decoder* gives masked
  probabilities of the next node (logits clipped by ``10 tanh``), the *service decoder* a
  fraction ``sigma(.)`` per node. The chosen node ``j`` is served for
  ``fraction_j * min(l_j - e_j, T - t_j0 - s_j)`` (the official budget-capped service), and that
  predicted service advances the clock, so it steers which nodes stay feasible;
* **masking** — visited nodes, nodes whose service could not start by ``l_j`` and nodes from
  which the depot cannot be reached by ``T`` are masked; choosing the depot ends the route
  (not allowed as the first move while a customer is feasible).

Stage 2 (the STO procedure) then replaces the predicted service times by the optimal ones;
:mod:`._train` trains the policy with that optimum as reward. Torch is imported here only, so
the rest of the package works without it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._instance import OPTWVPInstance

WEIGHTS_PATH = Path(__file__).parent / "weights" / "decost_small.pt"
LOGIT_CLIP = 10.0
MARGIN = 1e-3  # time units


class _EncoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, ff: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.edge = nn.Linear(1, heads)  # distance -> additive attention bias per head
        self.combine = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.ReLU(), nn.Linear(ff, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, h: torch.Tensor, dist: torch.Tensor) -> torch.Tensor:
        B, n, D = h.shape
        q, k, v = self.qkv(h).view(B, n, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        score = q @ k.transpose(-1, -2) / math.sqrt(D // self.heads)
        score = score + self.edge(dist[..., None]).permute(0, 3, 1, 2)
        att = (score.softmax(-1) @ v).transpose(1, 2).reshape(B, n, D)
        h = self.norm1(h + self.combine(att))
        return self.norm2(h + self.ff(h))


class _Decoder(nn.Module):
    """One decoder: a multi-head glimpse from the step context, then one score per node."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.wq = nn.Linear(dim + 1, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.combine = nn.Linear(dim, dim)

    def set_nodes(self, emb: torch.Tensor) -> None:
        B, n, D = emb.shape
        self.k = self.wk(emb).view(B, n, self.heads, -1).transpose(1, 2)
        self.v = self.wv(emb).view(B, n, self.heads, -1).transpose(1, 2)
        self.emb = emb

    def forward(self, ctx: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        B, P, _ = ctx.shape
        D = self.emb.shape[-1]
        q = self.wq(ctx).view(B, P, self.heads, -1).transpose(1, 2)
        score = q @ self.k.transpose(-1, -2) / math.sqrt(D // self.heads)
        score = score.masked_fill(~allowed[:, None], float("-inf"))
        glimpse = (score.softmax(-1) @ self.v).transpose(1, 2).reshape(B, P, D)
        return self.combine(glimpse) @ self.emb.transpose(1, 2) / math.sqrt(D)


class DeCoSTPolicy(nn.Module):
    """Encoder + parallel route/service decoders (see the module docstring)."""

    def __init__(self, dim: int = 64, heads: int = 4, layers: int = 2, ff: int = 128):
        super().__init__()
        self.config = {"dim": dim, "heads": heads, "layers": layers, "ff": ff}
        self.embed = nn.Linear(5, dim)
        self.layers = nn.ModuleList(_EncoderLayer(dim, heads, ff) for _ in range(layers))
        self.route_decoder = _Decoder(dim, heads)
        self.service_decoder = _Decoder(dim, heads)

    def encode(self, batch: dict) -> torch.Tensor:
        h = self.embed(batch["features"])
        for layer in self.layers:
            h = layer(h, batch["dist"])
        self.route_decoder.set_nodes(h)
        self.service_decoder.set_nodes(h)
        return h


def to_batch(instances: list[OPTWVPInstance]) -> dict:
    """Tensors of same-size instances (travel in time units; features normalised)."""
    n = instances[0].n
    if any(i.n != n for i in instances):
        raise ValueError("a batch needs instances of one size")
    f64 = lambda key: torch.tensor(np.stack([getattr(i, key) for i in instances]), dtype=torch.float32)  # noqa: E731
    T = torch.tensor([i.horizon for i in instances], dtype=torch.float32)
    travel = torch.tensor(np.stack([i.travel for i in instances]), dtype=torch.float32)
    e, l, p = f64("tw_open"), f64("tw_close"), f64("profit")
    xy = f64("coords") / 100.0
    feats = torch.cat((xy, (e / T[:, None])[..., None], (l / T[:, None])[..., None],
                       (p / 10.0)[..., None]), dim=-1)
    w = l - e
    w[:, 0] = 0.0
    reach = torch.tensor(np.stack([i.reachable for i in instances]))
    return {"features": feats, "dist": travel / 100.0, "travel": travel, "open": e, "close": l,
            "width": w, "profit": p, "horizon": T, "reach": reach}


def rollout(model: DeCoSTPolicy, batch: dict, rollouts: int = 1, greedy: bool = True):
    """Build ``rollouts`` routes per instance. Returns ``routes`` (B x P lists of customers),
    ``service`` (B, P, steps) predicted service per step (0 after the route ends, with
    gradients), ``nodes`` (B, P, steps) and the routes' log-probabilities (B, P)."""
    model.encode(batch)
    travel, e, l, w, T = batch["travel"], batch["open"], batch["close"], batch["width"], batch["horizon"]
    B, n = e.shape
    P = rollouts
    b_idx = torch.arange(B)[:, None].expand(B, P)
    cur = torch.zeros(B, P, dtype=torch.long)
    now = torch.zeros(B, P)
    visited = torch.zeros(B, P, n, dtype=torch.bool)
    visited[..., 0] = True
    done = torch.zeros(B, P, dtype=torch.bool)
    logp = torch.zeros(B, P)
    back = travel[:, :, 0][:, None, :]  # t_j0, (B, 1, n)
    picks, services = [], []
    for step in range(n):
        start = torch.maximum(now[..., None] + travel[b_idx, cur], e[:, None, :])
        # a float32 margin keeps every route feasible in exact (float64) arithmetic too
        feas = (~visited) & batch["reach"][:, None, :] & (start <= l[:, None, :] - MARGIN) \
            & (start + back <= T[:, None, None] - MARGIN)
        allowed = feas.clone()
        allowed[..., 0] = (step > 0) | ~feas.any(-1)
        allowed[done] = False
        allowed[..., 0] |= done
        ctx = torch.cat((model.route_decoder.emb[b_idx, cur], (now / T[:, None])[..., None]), dim=-1)
        logits = LOGIT_CLIP * torch.tanh(model.route_decoder(ctx, allowed))
        logits = logits.masked_fill(~allowed, float("-inf"))
        probs = logits.softmax(-1)
        if greedy:
            choice = probs.argmax(-1)
        else:
            choice = torch.multinomial(probs.view(B * P, n), 1).view(B, P)
        chosen_p = probs.gather(-1, choice[..., None]).squeeze(-1)
        logp = logp + torch.where(done, torch.zeros_like(chosen_p), chosen_p.clamp_min(1e-12).log())
        frac = torch.sigmoid(model.service_decoder(ctx, allowed)).gather(-1, choice[..., None]).squeeze(-1)
        s_j = start.gather(-1, choice[..., None]).squeeze(-1)
        cap = torch.minimum(w[b_idx, choice], T[:, None] - back[:, 0][b_idx, choice] - s_j).clamp_min(0.0)
        serving = (~done) & (choice != 0)
        d = torch.where(serving, frac * cap, torch.zeros_like(frac))
        picks.append(torch.where(serving, choice, torch.zeros_like(choice)))
        services.append(d)
        now = torch.where(serving, s_j + d, now)
        visited = visited | F.one_hot(choice, n).bool()
        cur = torch.where(serving, choice, cur)
        done = done | (choice == 0)
        if bool(done.all()):
            break
    nodes = torch.stack(picks, -1)
    routes = [[[int(v) for v in nodes[b, p] if v != 0] for p in range(P)] for b in range(B)]
    return routes, torch.stack(services, -1), nodes, logp


def save_policy(model: DeCoSTPolicy, path: str | Path = WEIGHTS_PATH, meta: dict | None = None) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.to(torch.float16) for k, v in model.state_dict().items()}  # half: small file
    torch.save({"config": model.config, "state": state, "meta": meta or {}}, path)


def load_policy(path: str | Path = WEIGHTS_PATH) -> DeCoSTPolicy:
    blob = torch.load(path, map_location="cpu", weights_only=True)
    model = DeCoSTPolicy(**blob["config"])
    model.load_state_dict({k: v.to(torch.float32) for k, v in blob["state"].items()})
    model.eval()
    return model


def learned_routes(instances: list[OPTWVPInstance], model: DeCoSTPolicy | None = None,
                   samples: int = 0) -> list[list[int]]:
    """One route per instance: the greedy rollout, or the best (by stage 2) of the greedy
    rollout and ``samples`` sampled ones. Instances are grouped by size internally."""
    from ._insertion import routes_profit

    model = model or load_policy()
    out: list[list[int]] = [[] for _ in instances]
    groups: dict[int, list[int]] = {}
    for i, inst in enumerate(instances):
        groups.setdefault(inst.n, []).append(i)
    with torch.no_grad():
        for idxs in groups.values():
            batch = to_batch([instances[i] for i in idxs])
            routes, *_ = rollout(model, batch, 1, greedy=True)
            if samples:
                sampled, *_ = rollout(model, batch, samples, greedy=False)
                routes = [g + s for g, s in zip(routes, sampled)]
            for row, i in enumerate(idxs):
                prof = routes_profit(instances[i], routes[row])
                out[i] = routes[row][int(np.argmax(prof))]
    return out
