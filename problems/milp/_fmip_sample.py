"""FMIP's guided sampling (Sec. 4.3, the training-free guidance of the official sampler) and
training loop.

Guidance at each step ``t -> t + dt`` (official ``multimodal_guided_denoise_step_TFG``):

1. the net gives ``p(x_1^I | x_t)`` and ``x_1^C`` hat; ``R`` integer candidates are drawn from
   ``p``; each is scored by the official energy ``w_obj * c^T x + w_viol * ||relu(A x - b)||_2``
   (raw ``c``, raw rows; both sides of a ranged row count), standardised, and turned into
   weights ``softmax(-z / temperature)``;
2. the discrete step uses the weight-averaged rate ``sum_k w_k onehot(x_1^k) / (1 - t)``: the
   next state is drawn from ``dt * rate`` off the diagonal;
3. the continuous part takes ``n_iter`` gradient steps of that target (through the net's
   prediction, with one candidate drawn by weight) on ``x_t^C``, projected onto the bounds
   (an infinite upper bound stays open), and then
   moves along the predicted velocity ``(x_1^C hat - x_t^C) / (1 - t)``.

At the last step the rate collapses to the weighted empirical marginal of the candidates, whose
maximum is the confidence used by neural-diving fixing in the hand-off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ._fmip_model import (FMIPNet, GraphTensors, build_graph, joint_loss, labels_to_state,
                          state_to_values, to_box)
from ._instance import MILPInstance

DEFAULT_GUIDANCE = {"weight_obj": 0.002, "weight_viol": 1.0, "temperature": 1.0, "step_size": 0.1}


def guidance_target(g: GraphTensors, x: torch.Tensor, weight_obj: float, weight_viol: float) -> torch.Tensor:
    """Energy of each row of ``x`` ([R, n] in real units), as in the official sampler:
    ``weight_obj * c^T x + weight_viol * ||relu(A x - b)||_2`` with the raw ``c`` and rows."""
    ax = torch.sparse.mm(g.A, x.T).T  # [R, m]
    viol = F.relu(g.row_lo - ax) + F.relu(ax - g.row_hi)
    return weight_obj * (x @ g.c_raw) + weight_viol * viol.norm(dim=1)


def _rescale(grad: torch.Tensor, clip: float = 1.0) -> torch.Tensor:
    norm = grad.norm()
    return grad * (clip / norm) if norm > clip else grad


@dataclass
class FMIPSample:
    values: np.ndarray  # a full assignment (integers rounded, continuous in bounds)
    confidence: np.ndarray  # final marginal of the chosen class (1 for continuous)
    final_probs: np.ndarray | None  # [n_int, K] weighted marginal at the last step


@torch.no_grad()
def guided_sample(net: FMIPNet, inst: MILPInstance, n_steps: int = 10, n_candidates: int = 32,
                  n_iter: int = 2, guidance: Callable[[float, int, int], dict] | dict | None = None,
                  x_lp: np.ndarray | None = None, seed: int = 0) -> FMIPSample:
    """Generate one guided FMIP sample for ``inst``.

    ``guidance``: a dict of ``weight_obj, weight_viol, temperature, step_size`` or a callable
    ``(t, step, n_steps) -> dict`` giving them per step (the slot ``fmip_guidance`` evolves).
    """
    gen = torch.Generator().manual_seed(seed)
    g = build_graph(inst, x_lp)
    K = net.n_classes
    is_int = g.is_int
    n = len(is_int)
    state = torch.where(is_int, torch.randint(0, K, (n,), generator=gen).float(),
                        torch.randn(n, generator=gen))
    probs_final = None
    for step in range(n_steps):
        t0, t1 = step / n_steps, (step + 1) / n_steps
        gd = dict(DEFAULT_GUIDANCE)
        if callable(guidance):
            gd.update(guidance(t0, step, n_steps))
        elif guidance:
            gd.update(guidance)
        w_obj, w_viol = float(gd["weight_obj"]), float(gd["weight_viol"])
        temp = max(float(gd["temperature"]), 1e-3)
        logits, cont = net(g, state, t0)
        p = torch.softmax(logits[is_int], -1)
        cand = torch.multinomial(p, n_candidates, replacement=True, generator=gen).T  # [R, n_int]
        cont_c = to_box(g, cont)  # projection of the continuous prediction onto the bounds
        X = (g.lb + g.scale * cont_c).expand(n_candidates, n).clone()
        X[:, is_int] = g.lb[is_int] + cand.float()
        z = guidance_target(g, X, w_obj, w_viol)
        z = (z - z.mean()) / (1e-6 + z.std()) if n_candidates > 1 else z * 0
        energy = torch.softmax(-z / temp, 0)
        rate = (energy[:, None, None] * F.one_hot(cand, K).float()).sum(0) / (1 - t0)
        step_p = (rate * (t1 - t0)).clamp(max=1.0)
        cur = state[is_int].long()
        step_p.scatter_(1, cur[:, None], 0.0)
        step_p.scatter_(1, cur[:, None], (1 - step_p.sum(1, keepdim=True)).clamp(min=0.0))
        pick = cand[int(torch.multinomial(energy, 1, generator=gen).item())]
        if (~is_int).any():
            cx = state.clone()
            ival = torch.zeros(n)
            ival[is_int] = g.lb[is_int] + pick.float()
            with torch.enable_grad():
                for _ in range(int(n_iter)):
                    var = cx.clone().requires_grad_(True)
                    _, pred = net(g, var, t0)
                    xv = torch.where(is_int, ival, g.lb + g.scale * to_box(g, pred))
                    tgt = guidance_target(g, xv.unsqueeze(0), w_obj, w_viol).sum()
                    grad = torch.autograd.grad(tgt, var)[0]
                    grad = torch.where(is_int, torch.zeros_like(grad), grad)
                    cx = torch.where(is_int, cx, to_box(g, cx - float(gd["step_size"]) * _rescale(grad)))
            cx[is_int] = pick.float()
            _, pred = net(g, cx, t0)
            v = (pred - cx) / (1 - t0)
            new_c = to_box(g, cx + v * (t1 - t0))
        else:
            new_c = state
        if t1 < 1.0:
            new_i = torch.multinomial(step_p, 1, generator=gen).squeeze(1).float()
        else:
            probs_final = step_p
            new_i = step_p.argmax(1).float()
        state = torch.where(is_int, torch.zeros_like(state), new_c)
        state[is_int] = new_i
    values = state_to_values(g, state)
    conf = np.ones(n)
    if probs_final is not None:
        conf[is_int.numpy()] = probs_final.max(1).values.double().numpy()
    return FMIPSample(values, conf, None if probs_final is None else probs_final.numpy())


def train_fmip(data: list[tuple[MILPInstance, np.ndarray, np.ndarray]], epochs: int = 30,
               lr: float = 2e-3, hidden: int = 48, layers: int = 3, seed: int = 0,
               cont_weight: float = 1.0, log: Callable[[str], None] | None = None) -> FMIPNet:
    """Train FMIPNet on ``(instance, x_lp, label)`` triples with the joint flow-matching loss."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    net = FMIPNet(hidden, layers)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(epochs, 1))
    graphs = [(build_graph(inst, lp), label) for inst, lp, label in data]
    targets = [labels_to_state(g, label) for g, label in graphs]
    rng = np.random.default_rng(seed)
    for ep in range(epochs):
        total = 0.0
        for i in rng.permutation(len(graphs)):
            t = float(rng.random()) * 0.999  # one t per instance, as in the official training step
            loss = joint_loss(net, graphs[i][0], targets[i], t, gen, cont_weight)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            total += float(loss.detach())
        sched.step()
        if log:
            log(f"epoch {ep + 1}/{epochs} loss {total / max(len(graphs), 1):.4f}")
    return net
