"""Train small RADAR models on ATSP on the CPU, with the paper's ablation (+-Sinkhorn, +-SVD).

    python -m benchmarks.train_radar [--quick] [--steps 600] [--steps50 300] [--seed 0]
    python -m benchmarks.train_radar --seed 1 --steps50 0 --no-save   # ablation, 2nd seed

Four variants at n = 20 (same seed, same number of batches, batch 32, POMO 20):

* ``radar``         SVD initial embeddings + Sinkhorn attention (the full method);
* ``no_sinkhorn``   SVD + row softmax;
* ``no_svd``        MatNet's random one-hot initial embeddings + Sinkhorn;
* ``no_svd_no_sinkhorn``  one-hot + softmax (MatNet-like single-stream baseline);

then ``radar`` is fine-tuned at n = 50 (batch 16) from its n = 20 weights. Each model is
validated during training on 64 fixed tmat instances (greedy POMO, gap to LKH-3 via
elkai). Learning rate 1e-3 (the official 4e-4 learns too slowly for a few minutes of CPU);
otherwise the official recipe (Adam, weight decay 1e-6, logit clipping 10, shared
baseline). Weights go to ``problems/routing/weights/`` (not with ``--quick`` or
``--no-save``); the curves to ``benchmarks/results/routing_radar_train[_quick|_seedS].json``
(the suffix ``_seedS`` for a seed other than 0).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from hifo.problems.routing import lkh_tour, random_tmat_instance
from hifo.problems.routing._radar import RadarConfig
from hifo.problems.routing._radar_pomo import WEIGHTS_DIR, greedy_pomo, save_radar, train_radar

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = {
    "radar": dict(use_svd=True, use_sinkhorn=True),
    "no_sinkhorn": dict(use_svd=True, use_sinkhorn=False),
    "no_svd": dict(use_svd=False, use_sinkhorn=True),
    "no_svd_no_sinkhorn": dict(use_svd=False, use_sinkhorn=False),
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


def run_variant(name: str, cfg: RadarConfig, n: int, steps: int, batch: int, seed: int,
                val: tuple[torch.Tensor, torch.Tensor], init=None) -> tuple[dict, object]:
    t0 = time.perf_counter()
    model, log = train_radar(cfg, n, seconds=float("inf"), max_steps=steps, batch_size=batch, lr=1e-3,
                             seed=seed, val_cost=val[0], val_ref=val[1], eval_every=max(steps // 12, 1),
                             model=init)
    wall = time.perf_counter() - t0
    greedy = float(((greedy_pomo(model, val[0]) / val[1] - 1) * 100).mean())
    aug8 = float(((greedy_pomo(model, val[0], augmentations=8) / val[1] - 1) * 100).mean())
    row = {"variant": name, "n": n, "steps": steps, "batch": batch, "train_s": round(wall, 1),
           "val_gap_greedy": round(greedy, 2), "val_gap_aug8": round(aug8, 2), "config": cfg.to_dict(),
           "curve": {"steps": log.steps, "elapsed_s": [round(x, 1) for x in log.elapsed_s],
                     "train_len": [round(x, 4) for x in log.train_len],
                     "val_gap": [round(x, 2) for x in log.val_gap]}}
    print(f"{name:>20} n={n:<3} steps={steps:<4} {wall:7.1f}s  val gap greedy {greedy:6.2f}%  "
          f"aug8 {aug8:6.2f}%", flush=True)
    return row, model


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few batches per variant, weights not saved")
    ap.add_argument("--steps", type=int, default=600, help="batches per n=20 variant")
    ap.add_argument("--steps50", type=int, default=300, help="fine-tuning batches at n=50")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--no-save", action="store_true", help="do not write weights")
    ap.add_argument("--acvrp-steps", type=int, default=0,
                    help="train only the ACVRP model (n = 20, capacity 30) for this many batches of 32")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # the machine is shared; one core per training run
    if args.acvrp_steps > 0:
        return train_acvrp(args.acvrp_steps, args.seed, save=not args.no_save, argv=argv)
    steps, steps50, nval = (20, 10, 16) if args.quick else (args.steps, args.steps50, 64)
    val20 = validation_set(20, nval)
    rows, trained = [], {}
    for name in args.variants:
        row, model = run_variant(name, RadarConfig(**VARIANTS[name]), 20, steps, 32, args.seed, val20)
        rows.append(row)
        trained[name] = model
        if not (args.quick or args.no_save):
            save_radar(model, WEIGHTS_DIR / f"radar_atsp20_{name}.pt", {k: row[k] for k in row if k != "curve"})
    if steps50 > 0 and "radar" in args.variants:
        val50 = validation_set(50, nval // 2)
        init = copy.deepcopy(trained["radar"])  # curriculum: n = 50 starts from this run's n = 20 model
        row, model = run_variant("radar", RadarConfig(**VARIANTS["radar"]), 50, steps50, 16, args.seed + 1,
                                 val50, init)
        row["init"] = "radar n=20 of this run"
        rows.append(row)
        if not (args.quick or args.no_save):
            save_radar(model, WEIGHTS_DIR / "radar_atsp50_radar.pt", {k: row[k] for k in row if k != "curve"})
    suffix = "_quick" if args.quick else (f"_seed{args.seed}" if args.seed else "")
    out = {"command": "python -m benchmarks.train_radar " + " ".join(argv if argv is not None else sys.argv[1:]),
           "torch": torch.__version__, "threads": 1, "seed": args.seed, "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"routing_radar_train{suffix}.json"
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"wrote {path}")
    return out


def train_acvrp(steps: int, seed: int, save: bool, argv) -> dict:
    """RADAR on ACVRP n = 20 (see :mod:`hifo.problems.routing._radar_cvrp`); curve to
    ``results/routing_radar_acvrp_train.json``, weights to ``weights/radar_acvrp20.pt``."""
    from hifo.problems.routing._radar_cvrp import save_radar_cvrp, train_radar_cvrp

    t0 = time.process_time()
    model, curve = train_radar_cvrp(RadarConfig(), 20, 30, seconds=float("inf"), max_steps=steps, seed=seed)
    cpu = time.process_time() - t0
    row = {"n": 20, "capacity": 30, "steps": steps, "batch": 32, "lr": 1e-3, "train_cpu_s": round(cpu, 1),
           "config": RadarConfig().to_dict(), "curve": curve}
    print(f"acvrp20: {steps} steps, {cpu:.0f} CPU s, best-of-POMO train length {curve[0]['best_len']:.3f} -> "
          f"{curve[-1]['best_len']:.3f}", flush=True)
    if save:
        save_radar_cvrp(model, WEIGHTS_DIR / "radar_acvrp20.pt", {k: row[k] for k in row if k != "curve"})
    out = {"command": "python -m benchmarks.train_radar " + " ".join(argv if argv is not None else sys.argv[1:]),
           "torch": torch.__version__, "threads": 1, "seed": seed, "rows": [row]}
    (RESULTS / "routing_radar_acvrp_train.json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
