"""FMIP's model at CPU scale: bipartite variable-constraint GNN and the two flows.

Paper: "FMIP: Joint Continuous-Integer Flow for Mixed-Integer Linear Programming" (ICLR 2026);
reference code ``Lhongpei/FMIP`` (``utils/flow_scheduler.py``, ``pl_gmip_model.py``).

* Integer variables follow a **discrete flow** with uniform noise (Campbell et al. 2024):
  ``x_t = x_1`` with probability ``t``, else a uniform class. The network predicts
  ``p(x_1 | x_t, t)``; the generating rate towards class ``j`` is ``p_j / (1 - t)``
  (noise level 0, as in the official sampler).
* Continuous variables follow the **linear path** ``x_t = t x_1 + (1 - t) eps``,
  ``eps ~ N(0, 1)``; the network predicts the clean ``x_1`` and the velocity is
  ``(x_1_hat - x_t) / (1 - t)``.
* Training (the paper's joint objective): one ``t ~ U(0,1)`` per instance, loss
  ``CE(logits, x_1^I) + lambda * MSE(x_1_hat^C, x_1^C)`` on solver labels.
* Encoder: a bipartite GNN (Gasse et al. 2019 style half-convolutions var->con->var) whose
  variable inputs carry the instance features, the current noisy value ``x_t`` and a sinusoidal
  embedding of ``t``.

Integer variables are encoded as classes ``x - lb`` in ``0..K-1`` (``K = 2``: the trained model
covers binary variables; on the general-integer family ``intcover`` it can only propose
``lb..lb+K-1``, and the hand-off's full MIP has to find larger values: partial support).
Continuous variables are scaled to ``[0, 1]`` by their finite bounds; with an infinite upper
bound the scale is 1 and the scaled value lives in ``[0, inf)`` (:func:`to_box`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._instance import MILPInstance

VAR_FEATS = 6  # cost, is_int, has finite ub, lp value (scaled), degree, x_t (set per step)
CON_FEATS = 4  # lo, hi (scaled, 0 if inf), has lo, has hi


@dataclass
class GraphTensors:
    """Torch view of one instance (built once, reused at every flow step)."""

    var_x: torch.Tensor  # [n, VAR_FEATS - 1] static variable features
    con_x: torch.Tensor  # [m, CON_FEATS]
    edge_con: torch.Tensor
    edge_var: torch.Tensor
    edge_w: torch.Tensor
    is_int: torch.Tensor
    lb: torch.Tensor
    scale: torch.Tensor  # continuous scaling: x = lb + scale * xn
    c: torch.Tensor  # objective normalised by max |c|
    A: torch.Tensor  # sparse [m, n] (for guidance energies)
    row_lo: torch.Tensor
    row_hi: torch.Tensor
    row_scale: torch.Tensor
    c_raw: torch.Tensor  # the objective as given (the official guidance energy uses raw c)
    hi_n: torch.Tensor  # scaled upper bound of each variable: 1, or +inf when ub is infinite


def build_graph(inst: MILPInstance, x_lp: np.ndarray | None = None) -> GraphTensors:
    n, m = inst.n_vars, inst.n_rows
    A = inst.A.tocoo()
    cmax = max(np.abs(inst.c).max(initial=0.0), 1e-9)
    finite_ub = np.isfinite(inst.ub)
    scale = np.where(finite_ub & np.isfinite(inst.lb), inst.ub - inst.lb, 1.0)
    scale = np.where(scale > 0, scale, 1.0)
    lb = np.where(np.isfinite(inst.lb), inst.lb, 0.0)
    lpn = np.zeros(n) if x_lp is None else (np.asarray(x_lp) - lb) / scale
    deg = np.bincount(A.col, minlength=n).astype(float)
    var_x = np.stack([inst.c / cmax, inst.is_int.astype(float), finite_ub.astype(float),
                      np.clip(lpn, -5, 5), deg / max(deg.max(initial=1.0), 1.0)], axis=1)
    # rows normalised by their largest coefficient so features and violations are comparable
    row_scale = np.maximum(np.abs(inst.A).max(axis=1).toarray().ravel(), 1e-9)
    lo, hi = inst.row_lo / row_scale, inst.row_hi / row_scale
    norm = max(np.abs(np.concatenate([lo[np.isfinite(lo)], hi[np.isfinite(hi)], [1.0]])).max(), 1.0)
    con_x = np.stack([np.where(np.isfinite(lo), lo / norm, 0), np.where(np.isfinite(hi), hi / norm, 0),
                      np.isfinite(lo).astype(float), np.isfinite(hi).astype(float)], axis=1)
    t = lambda a, d=torch.float32: torch.as_tensor(np.asarray(a), dtype=d)  # noqa: E731
    At = torch.sparse_coo_tensor(torch.as_tensor(np.stack([A.row, A.col]), dtype=torch.long),
                                 torch.as_tensor(A.data), (m, n), dtype=torch.float32, check_invariants=False)
    return GraphTensors(t(var_x), t(con_x), t(A.row, torch.long), t(A.col, torch.long),
                        t(A.data / row_scale[A.row]), t(inst.is_int, torch.bool), t(lb), t(scale),
                        t(inst.c / cmax), At.coalesce(), t(np.nan_to_num(inst.row_lo, posinf=1e30, neginf=-1e30)),
                        t(np.nan_to_num(inst.row_hi, posinf=1e30, neginf=-1e30)), t(row_scale),
                        t(inst.c), t(np.where(finite_ub, 1.0, np.inf)))


def to_box(g: GraphTensors, xn: torch.Tensor) -> torch.Tensor:
    """Project scaled continuous values onto their bounds: ``[0, 1]``, or ``[0, inf)`` when the
    upper bound is infinite (no clamping to ``lb + 1``)."""
    return torch.minimum(xn.clamp(min=0.0), g.hi_n)


def time_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of the flow time (as in DIFUSCO/FMIP)."""
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float().reshape(-1, 1) * 1000.0 * freqs
    return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)


class BipartiteLayer(nn.Module):
    """One var->con->var round of edge-weighted mean aggregation with residual MLP updates."""

    def __init__(self, h: int):
        super().__init__()
        self.msg_vc, self.msg_cv = nn.Linear(h, h), nn.Linear(h, h)
        self.up_c = nn.Sequential(nn.Linear(2 * h, h), nn.SiLU(), nn.Linear(h, h))
        self.up_v = nn.Sequential(nn.Linear(2 * h, h), nn.SiLU(), nn.Linear(h, h))
        self.norm_c, self.norm_v = nn.LayerNorm(h), nn.LayerNorm(h)

    def forward(self, hv, hc, g: GraphTensors, deg_c, deg_v):
        w = g.edge_w.unsqueeze(1)
        agg_c = torch.zeros_like(hc).index_add_(0, g.edge_con, w * self.msg_vc(hv)[g.edge_var]) / deg_c
        hc = self.norm_c(hc + self.up_c(torch.cat([hc, agg_c], 1)))
        agg_v = torch.zeros_like(hv).index_add_(0, g.edge_var, w * self.msg_cv(hc)[g.edge_con]) / deg_v
        hv = self.norm_v(hv + self.up_v(torch.cat([hv, agg_v], 1)))
        return hv, hc


class FMIPNet(nn.Module):
    """Predicts ``p(x_1^I | x_t, t)`` (logits over K classes) and ``x_1^C`` (scaled) jointly."""

    def __init__(self, hidden: int = 48, layers: int = 3, n_classes: int = 2):
        super().__init__()
        self.hidden, self.n_layers, self.n_classes = hidden, layers, n_classes
        self.embed_v = nn.Sequential(nn.Linear(VAR_FEATS, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.embed_c = nn.Sequential(nn.Linear(CON_FEATS, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.embed_t = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.layers = nn.ModuleList(BipartiteLayer(hidden) for _ in range(layers))
        self.head_int = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, n_classes))
        self.head_cont = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, g: GraphTensors, xt_scaled: torch.Tensor, t: float | torch.Tensor):
        """``xt_scaled``: the current state, integers as class index, continuous scaled."""
        n = g.var_x.shape[0]
        hv = self.embed_v(torch.cat([g.var_x, xt_scaled.reshape(n, 1).float()], 1))
        tt = torch.as_tensor(t, dtype=torch.float32).reshape(1)
        hv = hv + self.embed_t(time_embedding(tt, self.hidden))
        hc = self.embed_c(g.con_x)
        deg_c = torch.zeros(g.con_x.shape[0]).index_add_(0, g.edge_con, torch.ones_like(g.edge_w)).clamp(min=1).unsqueeze(1)
        deg_v = torch.zeros(n).index_add_(0, g.edge_var, torch.ones_like(g.edge_w)).clamp(min=1).unsqueeze(1)
        for layer in self.layers:
            hv, hc = layer(hv, hc, g, deg_c, deg_v)
        return self.head_int(hv), self.head_cont(hv).squeeze(1)


def discrete_sample_xt(x1: torch.Tensor, t: float, n_classes: int, gen: torch.Generator) -> torch.Tensor:
    """Uniform-noise discrete path: keep ``x_1`` w.p. ``t``, else a uniform class."""
    keep = torch.rand(x1.shape, generator=gen) < t
    noise = torch.randint(0, n_classes, x1.shape, generator=gen)
    return torch.where(keep, x1, noise)


def continuous_sample_xt(x1: torch.Tensor, t: float, gen: torch.Generator) -> torch.Tensor:
    """Linear path ``x_t = t x_1 + (1 - t) eps``."""
    return t * x1 + (1 - t) * torch.randn(x1.shape, generator=gen)


def labels_to_state(g: GraphTensors, x: np.ndarray) -> torch.Tensor:
    """Solver solution -> flow target: integer class index and scaled continuous value."""
    xs = (torch.as_tensor(x, dtype=torch.float32) - g.lb) / g.scale
    return torch.where(g.is_int, torch.round(torch.as_tensor(x, dtype=torch.float32) - g.lb), xs)


def state_to_values(g: GraphTensors, state: torch.Tensor) -> np.ndarray:
    vals = torch.where(g.is_int, g.lb + state, g.lb + g.scale * state)
    return vals.detach().double().numpy()


def joint_loss(net: FMIPNet, g: GraphTensors, x1: torch.Tensor, t: float, gen: torch.Generator,
               cont_weight: float = 1.0) -> torch.Tensor:
    """FMIP's multimodal training step: noise both parts at one ``t``, CE + weighted MSE."""
    k = net.n_classes
    x1_int = x1.clamp(0, k - 1).long()
    xt = torch.where(g.is_int, discrete_sample_xt(x1_int, t, k, gen).float(),
                     continuous_sample_xt(x1, t, gen))
    logits, cont = net(g, xt, t)
    loss = x1.new_zeros(())
    if g.is_int.any():
        loss = loss + F.cross_entropy(logits[g.is_int], x1_int[g.is_int])
    if (~g.is_int).any():
        loss = loss + cont_weight * F.mse_loss(cont[~g.is_int], x1[~g.is_int])
    return loss
