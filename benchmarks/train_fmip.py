"""Train FMIP's joint flow model on the CPU and commit small weights: a wrapper of ``hifo data train-fmip``.

    python -m benchmarks.train_fmip            # 12 instances per family, writes the weights
    python -m benchmarks.train_fmip --quick    # 3 per family, 5 epochs, weights not written

The work is done by :mod:`hifo.problems.milp.fmip_training` (labels, held-out check: see there). This
wrapper also writes ``benchmarks/results/milp_train_fmip.json`` (``milp_train_fmip_quick.json`` with
``--quick``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hifo.problems.milp.fmip_training import run

OUT = Path(__file__).parent / "results" / "milp_train_fmip.json"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--per-family", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--label-time", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--compare", type=Path, default=None, help="earlier weights, checked on the same held-out set")
    args = ap.parse_args(argv)
    result = run(per_family=args.per_family or (3 if args.quick else None),
                 epochs=args.epochs or (5 if args.quick else 40), label_time=args.label_time, seed=args.seed,
                 save=not (args.quick or args.no_save), compare=args.compare)
    given = sys.argv[1:] if argv is None else list(argv)
    result = {"command": " ".join(["python -m benchmarks.train_fmip", *given]), **result}
    if not args.quick and not args.no_save:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(result, indent=1))
    elif args.quick:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.with_name("milp_train_fmip_quick.json").write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
