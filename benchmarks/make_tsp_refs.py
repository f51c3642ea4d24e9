"""Reference tour lengths for the ``tsp_construct`` evaluator: a wrapper of ``hifo data tsp-refs``.

    python -m benchmarks.make_tsp_refs [--runs 10] [--optima ../shared/data/optima.csv]

The work is done by :mod:`hifo.evaluators.tsp_refs` (see there). This wrapper defaults ``--optima`` to
the project's ``shared/data/optima.csv`` and also writes the timings and gaps to
``benchmarks/results/tsp_refs.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hifo.evaluators.tsp_construct import REFS_PATH
from hifo.evaluators.tsp_refs import run

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OPTIMA = ROOT.parent / "shared" / "data" / "optima.csv"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="LKH-3 runs per instance")
    ap.add_argument("--optima", type=Path, default=DEFAULT_OPTIMA, help="the shared optima.csv")
    ap.add_argument("--out", type=Path, default=REFS_PATH)
    args = ap.parse_args(argv)
    return run(optima=args.optima, runs=args.runs, out=args.out,
               results=ROOT / "benchmarks" / "results" / "tsp_refs.json")


if __name__ == "__main__":
    main()
