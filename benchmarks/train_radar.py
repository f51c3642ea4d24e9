"""Train small RADAR models on ATSP on the CPU, with the ablation: a wrapper of ``hifo data train-radar``.

    python -m benchmarks.train_radar [--quick] [--steps 600] [--steps50 300] [--seed 0]
    python -m benchmarks.train_radar --seed 1 --steps50 0 --no-save   # ablation, 2nd seed
    python -m benchmarks.train_radar --variants matnet                # MatNet's two-stream baseline only

The work is done by :mod:`hifo.problems.routing.radar_training` (variants, recipe: see there). Weights
go to ``problems/routing/weights/`` (not with ``--quick`` or ``--no-save``); this wrapper also writes
the curves to ``benchmarks/results/routing_radar_train[_quick|_seedS][_VARIANTS].json`` (the suffix
``_seedS`` for a seed other than 0, ``_VARIANTS`` when only some variants are trained).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hifo.problems.routing.radar_training import VARIANTS, run

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few batches per variant, weights not saved")
    ap.add_argument("--steps", type=int, default=600, help="batches per n=20 variant")
    ap.add_argument("--steps50", type=int, default=300, help="fine-tuning batches at n=50")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--no-save", action="store_true", help="do not write weights")
    ap.add_argument("--acvrp-steps", type=int, default=0,
                    help="train only the ACVRP model (n = 20, capacity 30) for this many batches of 32")
    args = ap.parse_args(argv)
    if args.acvrp_steps > 0:
        return train_acvrp(args.acvrp_steps, args.seed, save=not args.no_save, argv=argv)
    steps, steps50, nval = (20, 10, 16) if args.quick else (args.steps, args.steps50, 64)
    out = run(steps=steps, steps50=steps50, n_val=nval, seed=args.seed, variants=args.variants,
              save=not (args.quick or args.no_save))
    out = {"command": "python -m benchmarks.train_radar " + " ".join(argv if argv is not None else sys.argv[1:]),
           **out}
    suffix = "_quick" if args.quick else (f"_seed{args.seed}" if args.seed else "")
    if not args.quick and list(args.variants) != list(VARIANTS):  # a subset: do not overwrite the full run's curves
        suffix += "_" + "_".join(args.variants)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"routing_radar_train{suffix}.json"
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"wrote {path}")
    return out


def train_acvrp(steps: int, seed: int, save: bool, argv) -> dict:
    """RADAR on ACVRP n = 20 (see :mod:`hifo.problems.routing._radar_cvrp`); curve to
    ``results/routing_radar_acvrp_train.json``, weights to ``weights/radar_acvrp20.pt``."""
    import torch

    from hifo.problems.routing._radar import RadarConfig
    from hifo.problems.routing._radar_cvrp import save_radar_cvrp, train_radar_cvrp
    from hifo.problems.routing._radar_pomo import WEIGHTS_DIR

    torch.set_num_threads(1)  # the machine is shared; one core per training run

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
