"""FMIP (joint continuous-integer flow matching for MILP) at CPU scale; needs torch.

Import this module explicitly (``from problems.milp import fmip``): the rest of
:mod:`hifo.problems.milp` works without torch.

* :class:`FMIPNet`, :func:`build_graph`: bipartite GNN predicting integer classes and
  continuous clean values;
* :func:`train_fmip`: the joint discrete/continuous flow-matching objective;
* :func:`guided_sample`: guided sampling (candidate re-weighting + continuous gradient steps);
* :func:`load_model` / :func:`save_model`: small weights under ``problems/milp/weights/``;
* :func:`fmip_solve`: sample, then hand off to HiGHS (neural diving over the samples, then the
  full MIP; see :mod:`._handoff`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ._fmip_model import FMIPNet, build_graph, joint_loss
from ._fmip_sample import DEFAULT_GUIDANCE, FMIPSample, guided_sample, guidance_target, train_fmip
from ._handoff import HandoffResult, dive_and_solve
from ._highs import cpu_now, solve_lp
from ._instance import MILPInstance

WEIGHTS = Path(__file__).parent / "weights" / "fmip.pt"

__all__ = ["FMIPNet", "build_graph", "joint_loss", "train_fmip", "guided_sample",
           "guidance_target", "FMIPSample", "DEFAULT_GUIDANCE", "save_model", "load_model",
           "fmip_solve", "GuidanceOverBudget", "WEIGHTS"]


class GuidanceOverBudget(RuntimeError):
    """The guidance's own CPU time passed its allowance (``fmip_solve(guidance_cpu_limit=...)``)."""


def save_model(net: FMIPNet, path: Path = WEIGHTS, meta: dict | None = None) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cfg = {"hidden": net.hidden, "layers": net.n_layers, "n_classes": net.n_classes, **(meta or {})}
    torch.save({"config": cfg, "state_dict": net.state_dict()}, path)
    path.with_suffix(".json").write_text(json.dumps(cfg, indent=1))


def load_model(path: Path = WEIGHTS) -> FMIPNet:
    blob = torch.load(Path(path), map_location="cpu", weights_only=True)
    cfg = blob["config"]
    net = FMIPNet(cfg["hidden"], cfg["layers"], cfg["n_classes"])
    net.load_state_dict(blob["state_dict"])
    net.eval()
    return net


def fmip_solve(net: FMIPNet, inst: MILPInstance, time_limit: float = 1.0, n_steps: int = 10,
               n_candidates: int = 32, guidance=None, fix_threshold: float = 0.0,
               fix_fraction: float = 0.1, seed: int = 0, n_samples: int = 4,
               n_dives: int = 8, charge_sampling: bool = True,
               slot_cpu: Callable[[], float] | None = None, clock: str = "cpu",
               guidance_cpu_limit: float | None = None, free_cpu_s: float = 0.0,
               work_per_cpu_s: float = 0.0) -> tuple[FMIPSample, HandoffResult]:
    """Full FMIP pipeline: LP features, ``n_samples`` guided samples, hand-off to HiGHS.

    ``time_limit`` (CPU seconds) covers the whole pipeline: the LP and the sampling are taken
    off HiGHS's budget (HiGHS always gets at least 0.05 s), so comparisons are at equal CPU
    time. The hand-off is the official neural diving: ``n_dives`` dives over the samples, each
    fixing a random ``fix_fraction`` of the integers (confidence >= ``fix_threshold``; the
    official code draws 50 samples at 10 %, fewer fit in a CPU budget of seconds), best kept,
    then the full MIP warm-started from it. Returns the first sample and the hand-off result.

    ``charge_sampling=False`` takes only the LP and the ``guidance`` calls' own CPU time off
    HiGHS's budget, not the network's forward passes: their number is fixed by ``n_samples``,
    ``n_steps`` and ``n_candidates``, the same for every guidance, while their CPU time is a fact
    about the machine (torch's kernels, its load) that would otherwise decide the primal integral
    (measured on a 2-core Xeon: 0.3-1.6 s of a 1 s budget; the full MIP then found its first
    incumbent after the horizon on two of six train instances). The evaluator uses it; the
    benchmark against HiGHS alone keeps the default (equal CPU time for the whole pipeline).

    ``slot_cpu``: when ``guidance`` runs in another process (the sandbox's slot process), a reader of
    the CPU seconds that process has spent so far (``SlotProxy.slot_cpu_s``); what it grows by during
    each ``guidance`` call is charged too, in both modes (this process's clock does not see it).

    ``clock="work"`` (the evaluator's): ``time_limit`` is in HiGHS work ticks (:mod:`._highs`), the same
    number on every machine; the LP and the sampling are not charged to it (the same work for every
    guidance). The guidance's own CPU time (in this process and its slot process) is free up to
    ``free_cpu_s`` seconds, charged beyond that at ``work_per_cpu_s`` ticks per second (so a guidance that
    computes for long pays, and only such a guidance's score depends on the machine), and capped at
    ``guidance_cpu_limit`` seconds: beyond it :class:`GuidanceOverBudget` is raised.
    """
    start = cpu_now()
    x_lp = solve_lp(inst).x
    lp_spent = cpu_now() - start
    guidance_cpu = [0.0]  # the guidance's CPU time in this process (charge_sampling=False only)
    slot_spent = [0.0]  # and in its slot process (always: this process's clock cannot see it)
    timed = guidance
    if callable(guidance) and (slot_cpu is not None or not charge_sampling or guidance_cpu_limit is not None):
        def timed(t, step, steps):  # the guidance's own CPU time still counts
            t0 = cpu_now()
            s0 = slot_cpu() if slot_cpu is not None else 0.0
            try:
                return guidance(t, step, steps)
            finally:
                guidance_cpu[0] += cpu_now() - t0
                if slot_cpu is not None:
                    slot_spent[0] += max(slot_cpu() - s0, 0.0)  # a reader can only charge more
    samples = [guided_sample(net, inst, n_steps=n_steps, n_candidates=n_candidates,
                             guidance=timed, x_lp=x_lp, seed=seed + k)
               for k in range(max(n_samples, 1))]
    own = guidance_cpu[0] + slot_spent[0]
    if guidance_cpu_limit is not None and own > guidance_cpu_limit:
        raise GuidanceOverBudget(f"the guidance used {own:.2f} CPU s over its calls; the allowance is "
                                 f"{guidance_cpu_limit:g} s")
    if clock == "work":
        spent = max(own - free_cpu_s, 0.0) * work_per_cpu_s
    else:
        spent = (cpu_now() - start if charge_sampling else lp_spent + guidance_cpu[0]) + slot_spent[0]
    res = dive_and_solve(inst, np.array([s.values for s in samples]), np.array([s.confidence for s in samples]),
                         fix_threshold, max(time_limit - spent, 0.05), seed=seed, t_offset=spent,
                         fix_fraction=fix_fraction, n_dives=n_dives, clock=clock)
    return samples[0], res
