"""Train small RADAR models on ATSP on the CPU, with the paper's ablation (+-Sinkhorn, +-SVD):
``hifo data train-radar`` (``python -m benchmarks.train_radar`` is a wrapper that also writes the curves
to ``benchmarks/results/``).

Five models at n = 20 (same seed, same number of batches, batch 32, POMO 20):

* ``radar``         SVD initial embeddings + Sinkhorn attention (the full method);
* ``no_sinkhorn``   SVD + row softmax;
* ``no_svd``        MatNet's random one-hot initial embeddings + Sinkhorn;
* ``no_svd_no_sinkhorn``  one-hot + softmax (MatNet-like single-stream baseline);
* ``matnet``        MatNet's two-stream (row/column) encoder, :mod:`._matnet` (the baseline
  RADAR's paper ablates against; CPU-sized, departures listed there);

then ``radar`` is fine-tuned at n = 50 (batch 16) from its n = 20 weights. Each model is
validated during training on 64 fixed tmat instances (greedy POMO, gap to LKH-3 via
elkai). Learning rate 1e-3 (the official 4e-4 learns too slowly for a few minutes of CPU);
otherwise the official recipe (Adam, weight decay 1e-6, logit clipping 10, shared
baseline). Weights go to ``weights_dir`` (default: the package's ``problems/routing/weights/``, which
the ``radar_tune`` evaluator reads), not with ``quick`` or ``save=False``. Needs ``torch`` and ``elkai``.

:func:`train_acvrp` (``hifo data train-radar --acvrp-steps N``) trains the ACVRP model instead
(:mod:`._radar_cvrp`: n = 20 customers, capacity 30, batch 32, lr 1e-3, the default RADAR config) and
saves it as ``radar_acvrp20.pt``, which ``python -m benchmarks.routing`` reads; it needs only ``torch``.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from ._atsp import random_tmat_instance
from ._lkh import lkh_tour
from ._matnet import MatNetConfig, MatNetModel
from ._radar import RadarConfig, RadarModel
from ._radar_pomo import WEIGHTS_DIR, greedy_pomo, save_radar, train_radar

VARIANTS: dict[str, RadarConfig | MatNetConfig] = {
    "radar": RadarConfig(use_svd=True, use_sinkhorn=True),
    "no_sinkhorn": RadarConfig(use_svd=True, use_sinkhorn=False),
    "no_svd": RadarConfig(use_svd=False, use_sinkhorn=True),
    "no_svd_no_sinkhorn": RadarConfig(use_svd=False, use_sinkhorn=False),
    "matnet": MatNetConfig(),
}
VAL_SEED = {20: 900_000, 50: 950_000}  # disjoint from every evaluator seed


def validation_set(n: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` tmat instances and their LKH-3 tour lengths (elkai on the integers)."""
    insts = [random_tmat_instance(n, VAL_SEED[n] + i) for i in range(count)]
    refs = []
    for inst in insts:
        d = inst.distance_matrix
        tour = lkh_tour(d, runs=5)
        refs.append(float(d[tour, np.roll(tour, -1)].sum()))
    cost = torch.tensor(np.stack([i.distance_matrix for i in insts]), dtype=torch.float32)
    return cost, torch.tensor(refs, dtype=torch.float32)


def run_variant(name: str, cfg: RadarConfig | MatNetConfig, n: int, steps: int, batch: int, seed: int,
                val: tuple[torch.Tensor, torch.Tensor], init: RadarModel | MatNetModel | None = None,
                log: Callable[[str], None] = print) -> tuple[dict[str, Any], RadarModel | MatNetModel]:
    """Train one variant; its result row (gaps, wall time, curve) and the model."""
    t0 = time.perf_counter()
    model, curve = train_radar(cfg, n, seconds=float("inf"), max_steps=steps, batch_size=batch, lr=1e-3,
                               seed=seed, val_cost=val[0], val_ref=val[1], eval_every=max(steps // 12, 1),
                               model=init)
    wall = time.perf_counter() - t0
    greedy = float(((greedy_pomo(model, val[0]) / val[1] - 1) * 100).mean())
    aug8 = float(((greedy_pomo(model, val[0], augmentations=8) / val[1] - 1) * 100).mean())
    row = {"variant": name, "n": n, "steps": steps, "batch": batch, "train_s": round(wall, 1),
           "val_gap_greedy": round(greedy, 2), "val_gap_aug8": round(aug8, 2), "config": cfg.to_dict(),
           "curve": {"steps": curve.steps, "elapsed_s": [round(x, 1) for x in curve.elapsed_s],
                     "train_len": [round(x, 4) for x in curve.train_len],
                     "val_gap": [round(x, 2) for x in curve.val_gap]}}
    log(f"{name:>20} n={n:<3} steps={steps:<4} {wall:7.1f}s  val gap greedy {greedy:6.2f}%  aug8 {aug8:6.2f}%")
    return row, model


def run(*, steps: int = 600, steps50: int = 300, n_val: int = 64, seed: int = 0,
        variants: Sequence[str] = tuple(VARIANTS), save: bool = True, weights_dir: Path = WEIGHTS_DIR,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train ``variants`` at n = 20 for ``steps`` batches, then fine-tune ``radar`` at n = 50 for
    ``steps50`` batches (skipped at 0 or without ``radar``); validation on ``n_val`` instances (half at
    n = 50). Saves the weights to ``weights_dir`` when ``save``; returns the result rows."""
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; known: {list(VARIANTS)}")
    torch.set_num_threads(1)  # the machine may be shared; one core per training run
    if save:
        Path(weights_dir).mkdir(parents=True, exist_ok=True)
    val20 = validation_set(20, n_val)
    rows, trained = [], {}
    for name in variants:
        row, model = run_variant(name, VARIANTS[name], 20, steps, 32, seed, val20, log=log)
        rows.append(row)
        trained[name] = model
        if save:
            save_radar(model, Path(weights_dir) / f"radar_atsp20_{name}.pt", {k: row[k] for k in row if k != "curve"})
    if steps50 > 0 and "radar" in variants:
        val50 = validation_set(50, max(n_val // 2, 1))
        init = copy.deepcopy(trained["radar"])  # curriculum: n = 50 starts from this run's n = 20 model
        row, model = run_variant("radar", VARIANTS["radar"], 50, steps50, 16, seed + 1,
                                 val50, init, log=log)
        row["init"] = "radar n=20 of this run"
        rows.append(row)
        if save:
            save_radar(model, Path(weights_dir) / "radar_atsp50_radar.pt", {k: row[k] for k in row if k != "curve"})
    return {"torch": torch.__version__, "threads": 1, "seed": seed, "rows": rows}


ACVRP_N, ACVRP_CAPACITY, ACVRP_BATCH, ACVRP_LR = 20, 30, 32, 1e-3


def train_acvrp(*, steps: int, seed: int = 0, save: bool = True, weights_dir: Path = WEIGHTS_DIR,
                log: Callable[[str], None] = print) -> dict[str, Any]:
    """RADAR on ACVRP (n = 20, capacity 30) for ``steps`` batches of 32 (POMO REINFORCE, shared
    baseline); saves ``weights_dir / radar_acvrp20.pt`` when ``save``; returns the result row with its
    training curve (best-of-POMO train length every 20 batches)."""
    from ._radar_cvrp import save_radar_cvrp, train_radar_cvrp

    if steps < 1:
        raise ValueError("steps must be at least 1")
    torch.set_num_threads(1)  # the machine may be shared; one core per training run
    t0 = time.process_time()
    model, curve = train_radar_cvrp(RadarConfig(), ACVRP_N, ACVRP_CAPACITY, seconds=float("inf"),
                                    batch_size=ACVRP_BATCH, lr=ACVRP_LR, max_steps=steps, seed=seed)
    cpu = time.process_time() - t0
    row = {"n": ACVRP_N, "capacity": ACVRP_CAPACITY, "steps": steps, "batch": ACVRP_BATCH, "lr": ACVRP_LR,
           "train_cpu_s": round(cpu, 1), "config": RadarConfig().to_dict(), "curve": curve}
    log(f"acvrp20: {steps} steps, {cpu:.0f} CPU s, best-of-POMO train length {curve[0]['best_len']:.3f} -> "
        f"{curve[-1]['best_len']:.3f}")
    if save:
        Path(weights_dir).mkdir(parents=True, exist_ok=True)
        save_radar_cvrp(model, Path(weights_dir) / "radar_acvrp20.pt", {k: row[k] for k in row if k != "curve"})
    return {"torch": torch.__version__, "threads": 1, "seed": seed, "rows": [row]}
