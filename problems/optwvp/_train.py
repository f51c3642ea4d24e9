"""Training the learned constructor (CPU scale) with the stage-2 optimum as reward.

The loss follows the official ``Trainer._train_one_batch``:

* **REINFORCE with a shared baseline** (POMO): ``P`` sampled rollouts per instance, reward
  ``R`` = the route's stage-2 optimal profit (so the route decoder learns from the *optimised*
  service times — DeCoST's long-horizon signal from stage 2), advantage ``R - mean_P(R)``;
* **service-time supervision**: ``((sum_j p_j (d_pred_j - d*_j)) / sum travel)^2`` with
  ``d*`` the stage-2 optimum of the same route, pulling the service decoder towards the
  optimal allocation. The released code adds this term with a negative sign (which would push
  predictions *away* from the optimum); we minimise it, the reading consistent with its name
  ``sl`` (supervised) and with service-time-guided construction.

Instances are drawn fresh from the generator every step (seeds from ``10**7`` on, disjoint
from the evaluation seeds used in this repository), cycling over the training sizes.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ._insertion import routes_optimal
from ._instance import generate_instances
from ._learned import DeCoSTPolicy, rollout, to_batch

TRAIN_SEED_BASE = 10_000_000


def train_policy(sizes=(20, 50, 100), steps: int = 300, batch_size: int = 32, rollouts: int = 8,
                 lr: float = 5e-4, sl_weight: float = 1.0, seed: int = 0, time_limit: float | None = None,
                 log_every: int = 25, model: DeCoSTPolicy | None = None, verbose: bool = True):
    """Train (or continue training) a policy; returns it and a list of per-step records."""
    torch.manual_seed(seed)
    model = model or DeCoSTPolicy()
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    t0 = time.perf_counter()
    next_seed = TRAIN_SEED_BASE + seed * 1_000_000
    for step in range(steps):
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        n = sizes[step % len(sizes)]
        insts = generate_instances(n, batch_size, next_seed)
        next_seed += batch_size
        batch = to_batch(insts)
        routes, d_pred, nodes, logp = rollout(model, batch, rollouts, greedy=False)
        reward = np.zeros((batch_size, rollouts))
        d_opt = torch.zeros_like(d_pred)
        for b, inst in enumerate(insts):
            service, prof = routes_optimal(inst, routes[b])
            reward[b] = prof
            for p, d in enumerate(service):
                d_opt[b, p, :len(d)] = torch.as_tensor(d, dtype=torch.float32)
        # decoding visits the customers first and the depot after, so step j is the j-th customer
        rate = batch["profit"][torch.arange(batch_size)[:, None, None], nodes]
        path_len = _route_travel(batch["travel"], nodes)
        sl = (((rate * (d_pred - d_opt)).sum(-1)) / path_len.clamp_min(1.0)) ** 2
        R = torch.as_tensor(reward, dtype=torch.float32) / 1000.0
        adv = R - R.mean(dim=1, keepdim=True)
        loss = -(adv * logp).mean() + sl_weight * sl.mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        rec = {"step": step, "n": n, "mean_reward": float(reward.mean()),
               "best_reward": float(reward.max(axis=1).mean()), "sl": float(sl.mean().detach()),
               "seconds": time.perf_counter() - t0}
        history.append(rec)
        if verbose and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  n={n:3d}  mean profit {rec['mean_reward']:8.1f}  "
                  f"best-of-{rollouts} {rec['best_reward']:8.1f}  sl {rec['sl']:.4f}  "
                  f"{rec['seconds']:6.1f}s", flush=True)
    model.eval()
    return model, history


def _route_travel(travel: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
    """Total travel time of each decoded route (depot -> customers -> depot)."""
    B, P, _ = nodes.shape
    b = torch.arange(B)[:, None, None]
    zero = torch.zeros(B, P, 1, dtype=torch.long)
    path = torch.cat((zero, nodes, zero), -1)  # trailing depot-to-depot legs add t_00 = 0
    return travel[b, path[..., :-1], path[..., 1:]].sum(-1)
