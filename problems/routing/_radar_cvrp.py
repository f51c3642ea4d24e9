"""RADAR on ACVRP at CPU scale (torch): RADAR's encoder with a demand input and POMO's CVRP decoder.

The encoder is :class:`RadarModel`'s (SVD initial embeddings of the z-scored
``(n + 1) x (n + 1)`` matrix, Sinkhorn mixed-score blocks) with one more linear input per node,
``(demand / capacity, is_depot)``, added to the projected initial embedding. The decoder is
POMO's CVRP decoder: the query adds a projection of the remaining load (fraction of the
capacity) to ``W1 h_first + W0 h_current``; masked are visited customers, customers whose demand
exceeds the remaining load, and the depot right after the depot (unless every customer is
served). POMO: rollout ``p`` goes first to customer ``p``; finished rollouts stay at the depot.

What is ours rather than RADAR's official ACVRP code (``ACVRPModel.py``): the demand input is
added to the SVD embedding rather than concatenated before the projection; no sampling of
``demand_scaler``; sizes and training budget are CPU-scale (see ``benchmarks/train_radar.py``).
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
from torch import nn

from ._radar import RadarConfig, RadarModel
from ._radar_pomo import tmat_batch


class RadarCVRP(nn.Module):
    def __init__(self, cfg: RadarConfig):
        super().__init__()
        self.cfg = cfg
        self.base = RadarModel(cfg)
        self.node_in = nn.Linear(2, cfg.embedding_dim)
        self.load_q = nn.Linear(1, cfg.head_num * cfg.qkv_dim, bias=False)

    def encode(self, cost, demand_frac, generator=None, augment=False):
        from ._radar import zscore

        b, n1, _ = cost.shape
        cost_z = zscore(cost)
        depot = torch.zeros(b, n1)
        depot[:, 0] = 1.0
        x = self.base.project(self.base.initial_features(cost_z, generator, augment))
        x = x + self.node_in(torch.stack([demand_frac, depot], dim=-1))
        for layer in self.base.layers:
            x = layer(x, cost_z)
        return x

    def scores(self, cache, last, load, mask):
        dec = self.base.decoder
        q = cache["q_first"] + dec._split(dec.wq_last(last) + self.load_q(load[..., None]))
        att = q @ cache["k"].transpose(2, 3) / math.sqrt(q.shape[-1]) + mask[:, None]
        glimpse = torch.softmax(att, dim=-1) @ cache["v"]
        b, h, p, dk = glimpse.shape
        g = dec.combine(glimpse.transpose(1, 2).reshape(b, p, h * dk))
        return g @ cache["single"] / math.sqrt(dec.dim)


def cvrp_rollout(model: RadarCVRP, cost, demand, capacity: float, *, greedy: bool, generator=None,
                 augment: bool = False, temperature: float = 1.0):
    """POMO rollouts (one per customer as first stop). Returns node sequences (B, P, L) that
    start after the depot and return to it, costs (B, P) and summed log-probabilities (B, P)."""
    b, n1, _ = cost.shape
    n = n1 - 1
    p = n
    frac = demand / capacity
    nodes = model.encode(cost, frac, generator, augment)
    bidx = torch.arange(b)[:, None].expand(b, p)
    pidx = torch.arange(p)[None, :].expand(b, p)
    current = torch.arange(1, n1)[None, :].expand(b, p)
    cache = model.base.decoder.prepare(nodes, nodes[bidx, current])
    visited = torch.zeros(b, p, n1, dtype=torch.bool)
    visited[bidx, pidx, current] = True
    load = 1.0 - frac[bidx, current]
    length = cost[bidx, torch.zeros_like(current), current]
    logp = torch.zeros(b, p)
    seq = [current]
    clip = model.cfg.logit_clipping
    for _ in range(2 * n):
        done = visited[:, :, 1:].all(dim=2)
        if bool(done.all()):
            break
        mask = torch.zeros(b, p, n1)
        over = frac[:, None, :].expand(b, p, n1) > load[..., None] + 1e-6
        mask[visited | over] = float("-inf")
        at_depot = current == 0
        mask[..., 0] = torch.where(at_depot & ~done, float("-inf"), 0.0)
        mask[done] = float("-inf")
        mask[..., 0] = torch.where(done, 0.0, mask[..., 0])
        logits = clip * torch.tanh(model.scores(cache, nodes[bidx, current], load, mask)) + mask
        log_probs = torch.log_softmax(logits / temperature, dim=-1)
        if greedy:
            nxt = log_probs.argmax(dim=-1)
        else:
            nxt = torch.multinomial(log_probs.exp().reshape(b * p, n1), 1, generator=generator).reshape(b, p)
        logp = logp + torch.where(done, 0.0, log_probs.gather(2, nxt[..., None]).squeeze(2))
        length = length + cost[bidx, current, nxt]
        visited = visited.clone()
        visited[bidx, pidx, nxt] = True
        load = torch.where(nxt == 0, torch.ones_like(load), load - frac[bidx, nxt])
        current = nxt
        seq.append(current)
    length = length + cost[bidx, current, torch.zeros_like(current)]
    return torch.stack(seq, dim=2), length, logp


def acvrp_batch(batch: int, n: int, capacity: int, generator: torch.Generator):
    cost = tmat_batch(batch, n + 1, generator)
    demand = torch.randint(1, 10, (batch, n + 1), generator=generator).float()
    demand[:, 0] = 0
    return cost, demand


def train_radar_cvrp(cfg: RadarConfig, n: int, capacity: int, *, seconds: float, batch_size: int = 32,
                     lr: float = 1e-3, seed: int = 0, max_steps: int | None = None):
    """POMO REINFORCE with the shared baseline for ``seconds`` (or ``max_steps`` batches)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = RadarCVRP(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-6)
    t0, step, curve = time.perf_counter(), 0, []
    while time.perf_counter() - t0 < seconds and (max_steps is None or step < max_steps):
        model.train()
        cost, demand = acvrp_batch(batch_size, n, capacity, gen)
        _, length, logp = cvrp_rollout(model, cost, demand, capacity, greedy=False, generator=gen, augment=True)
        adv = -(length - length.mean(dim=1, keepdim=True))
        loss = -(adv * logp).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 20 == 0 or step == 1:
            curve.append({"step": step, "s": time.perf_counter() - t0, "best_len": float(length.min(1).values.mean())})
    model.eval()
    return model, curve


def sequence_to_routes(seq) -> list[list[int]]:
    routes: list[list[int]] = []
    cur: list[int] = []
    for v in list(seq):
        v = int(v)
        if v == 0:
            if cur:
                routes.append(cur)
            cur = []
        else:
            cur.append(v)
    if cur:
        routes.append(cur)
    return routes


@torch.no_grad()
def radar_cvrp_solve(model: RadarCVRP, distance_matrix: np.ndarray, demands: np.ndarray, capacity: int,
                     augmentations: int = 1, samples: int = 0, seed: int = 0) -> list[list[int]]:
    """The best POMO solution over ``augmentations`` encodings (SVD sign flips after the first),
    greedy, plus ``samples`` sampled rounds (temperature 1) per encoding when ``samples > 0``."""
    cost = torch.tensor(distance_matrix, dtype=torch.float32)[None]
    dem = torch.tensor(np.asarray(demands), dtype=torch.float32)[None]
    gen = torch.Generator().manual_seed(seed)
    best, best_len = None, float("inf")
    for a in range(augmentations):
        for r in range(1 + samples):
            seq, length, _ = cvrp_rollout(model, cost, dem, float(capacity), greedy=(r == 0), generator=gen,
                                          augment=a > 0)
            j = int(length[0].argmin())
            if float(length[0, j]) < best_len:
                best_len, best = float(length[0, j]), seq[0, j]
    return sequence_to_routes(best)


def save_radar_cvrp(model: RadarCVRP, path, meta: dict | None = None) -> None:
    torch.save({"config": model.cfg.to_dict(), "state_dict": model.state_dict(), "meta": meta or {}}, path)


def load_radar_cvrp(path) -> RadarCVRP:
    blob = torch.load(path, map_location="cpu", weights_only=True)
    model = RadarCVRP(RadarConfig(**blob["config"]))
    model.load_state_dict(blob["state_dict"])
    return model.eval()
