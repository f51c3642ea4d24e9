"""Train small RADAR models on ATSP on the CPU, with the ablation: a wrapper of ``hifo data train-radar``.

    python -m benchmarks.train_radar [--quick] [--steps 600] [--steps50 300] [--seed 0]
    python -m benchmarks.train_radar --seed 1 --steps50 0 --no-save   # ablation, 2nd seed
    python -m benchmarks.train_radar --variants matnet                 # MatNet's two-stream baseline only
    python -m benchmarks.train_radar --acvrp-steps 300                 # the ACVRP model only

The work is done by :mod:`hifo.problems.routing.radar_training` (variants, recipe: see there). Weights
go to ``problems/routing/weights/`` (not with ``--quick`` or ``--no-save``); this wrapper also writes
the curves to ``benchmarks/results/routing_radar_train[_quick|_seedS][_VARIANTS].json`` (the suffix
``_seedS`` for a seed other than 0, ``_VARIANTS`` when only some variants are trained).
"""

from __future__ import annotations

import argparse
import json
import sys
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
    """``hifo data train-radar --acvrp-steps N`` (:func:`hifo.problems.routing.radar_training.train_acvrp`);
    this wrapper also writes the curve to ``results/routing_radar_acvrp_train.json``."""
    from hifo.problems.routing.radar_training import train_acvrp as _train

    out = _train(steps=steps, seed=seed, save=save)
    out = {"command": "python -m benchmarks.train_radar " + " ".join(argv if argv is not None else sys.argv[1:]),
           **out}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "routing_radar_acvrp_train.json").write_text(json.dumps(out, indent=1), encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
