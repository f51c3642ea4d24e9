"""The ``hifo data`` commands: regenerate the data the evaluators read (reference values, trained weights).

Registered on the app in :mod:`agents.cli`. The work is done by the installed package
(:mod:`hifo.evaluators.tsp_refs`, :mod:`~hifo.evaluators.routing_refs`, :mod:`~hifo.evaluators.optwvp_refs`,
:mod:`~hifo.evaluators.toptwvp_refs`,
:mod:`hifo.problems.routing.radar_training`, :mod:`hifo.problems.milp.fmip_training`); the scripts
``benchmarks/make_tsp_refs.py``, ``train_radar.py``, ``train_fmip.py`` and the ``--make-refs`` options of
``benchmarks/routing.py`` and ``optwvp.py`` are wrappers (the first three also keep their result files under
``benchmarks/results/``).
Heavy imports (torch, elkai, HiGHS) stay inside the commands so ``hifo --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.console import Console

from hifo.agents.cli_tools import _fail

console = Console(soft_wrap=True, highlight=False, emoji=False)

data_app = typer.Typer(no_args_is_help=True, add_completion=False,
                       help="Regenerate the data the evaluators read (references, trained weights).")

_RESULTS_HELP = "also write the summary as JSON to this file"


def _log(line: str) -> None:
    console.out(line)


def _write(results: Optional[Path], summary: dict[str, Any]) -> None:
    if results is not None:
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
        console.out(f"wrote {results}")


def _need(module: str, extra: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        _fail(f"this command needs {module} ({extra})")


@data_app.command("tsp-refs")
def tsp_refs(
    runs: int = typer.Option(10, "--runs", help="LKH-3 runs per instance"),
    optima: Optional[Path] = typer.Option(None, "--optima", help="TSPLIB optima CSV (the project's "
                                          "shared/data/optima.csv); needed unless --no-tsplib"),
    sets: Optional[List[str]] = typer.Option(None, "--set", help="random set(s) to compute [default: all]"),
    tsplib: bool = typer.Option(True, "--tsplib/--no-tsplib", help="include the TSPLIB instances"),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="refs file [default: the tsp_construct evaluator's data/tsp/refs.json]"),
    results: Optional[Path] = typer.Option(None, "--results", help=_RESULTS_HELP),
) -> None:
    """Reference tour lengths for tsp_construct (LKH-3 via elkai; needs `pip install elkai`)."""
    _need("elkai", "pip install elkai")
    from hifo.evaluators import tsp_refs as mod
    from hifo.evaluators.tsp_construct import RANDOM_SETS

    try:
        mod.run(sets=tuple(sets) if sets else tuple(RANDOM_SETS), tsplib=tsplib, optima=optima, runs=runs,
                out=out or mod.REFS_PATH, results=results, log=_log)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        _fail(str(exc))


@data_app.command("train-radar")
def train_radar(
    quick: bool = typer.Option(False, "--quick", help="20 + 10 batches, 16 validation instances, weights not saved"),
    steps: int = typer.Option(600, "--steps", help="batches per n=20 variant"),
    steps50: int = typer.Option(300, "--steps50", help="fine-tuning batches at n=50 (0: none)"),
    seed: int = typer.Option(0, "--seed"),
    variants: Optional[List[str]] = typer.Option(
        None, "--variant", help="variant(s) to train: radar, no_sinkhorn, no_svd, no_svd_no_sinkhorn, "
                                "matnet (MatNet's two-stream baseline) [default: all five]"),
    no_save: bool = typer.Option(False, "--no-save", help="do not write weights"),
    weights_dir: Optional[Path] = typer.Option(None, "--weights-dir",
                                               help="[default: the package's problems/routing/weights/]"),
    acvrp_steps: int = typer.Option(0, "--acvrp-steps",
                                    help="train only the ACVRP model (n = 20, capacity 30) for this many batches "
                                         "of 32 (radar_acvrp20.pt; 300 for the packaged one)"),
    results: Optional[Path] = typer.Option(None, "--results", help=_RESULTS_HELP),
) -> None:
    """Train the small RADAR models (ATSP, CPU, minutes) the radar_tune evaluator loads, with the ablation;
    with --acvrp-steps, the ACVRP model instead."""
    _need("torch", "pip install torch")
    from hifo.problems.routing import radar_training as mod

    if acvrp_steps > 0:
        summary = mod.train_acvrp(steps=acvrp_steps, seed=seed, save=not (quick or no_save),
                                  weights_dir=weights_dir or mod.WEIGHTS_DIR, log=_log)
        _write(results, summary)
        return
    _need("elkai", "pip install elkai")
    s, s50, nval = (20, 10, 16) if quick else (steps, steps50, 64)
    try:
        summary = mod.run(steps=s, steps50=s50, n_val=nval, seed=seed, variants=tuple(variants or mod.VARIANTS),
                          save=not (quick or no_save), weights_dir=weights_dir or mod.WEIGHTS_DIR, log=_log)
    except ValueError as exc:
        _fail(str(exc))
    _write(results, summary)


@data_app.command("train-fmip")
def train_fmip(
    quick: bool = typer.Option(False, "--quick", help="3 instances per family, 5 epochs, weights not saved"),
    per_family: Optional[int] = typer.Option(None, "--per-family", help="[default: 12, or 3 with --quick]"),
    epochs: Optional[int] = typer.Option(None, "--epochs", help="[default: 40, or 5 with --quick]"),
    label_time: float = typer.Option(2.0, "--label-time", help="HiGHS seconds per label"),
    seed: int = typer.Option(0, "--seed"),
    no_save: bool = typer.Option(False, "--no-save", help="do not write weights"),
    weights: Optional[Path] = typer.Option(None, "--weights", help="[default: the package's problems/milp/weights/fmip.pt]"),
    compare: Optional[Path] = typer.Option(None, "--compare", help="earlier weights, checked on the same held-out instances"),
    results: Optional[Path] = typer.Option(None, "--results", help=_RESULTS_HELP),
) -> None:
    """Train FMIP's flow model (MILP, CPU) the fmip_guidance evaluator loads."""
    _need("torch", "pip install torch")
    from hifo.problems.milp import fmip, fmip_training

    summary = fmip_training.run(per_family=per_family or (3 if quick else None), epochs=epochs or (5 if quick else 40),
                                label_time=label_time, seed=seed, save=not (quick or no_save),
                                weights=weights or fmip.WEIGHTS, compare=compare, log=_log)
    _write(results, summary)


@data_app.command("routing-refs")
def routing_refs(
    optima: Path = typer.Option(..., "--optima", help="TSPLIB optima CSV (the project's shared/data/optima.csv)"),
    runs: int = typer.Option(10, "--runs", help="LKH-3 runs per instance"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="[default: the evaluators' data/routing/refs.json]"),
) -> None:
    """References of tsp_gls, atsp_construct, radar_tune and acvrp_construct (LKH-3 via elkai, PyVRP; ~10 min)."""
    _need("elkai", "pip install elkai")
    _need("pyvrp", "pip install pyvrp")
    from hifo.evaluators import routing_refs as mod

    if not optima.is_file():
        _fail(f"{optima} is not a file")
    mod.make_routing_refs(optima, runs, out or mod.REFS_PATH, log=_log)


@data_app.command("optwvp-refs")
def optwvp_refs(
    milp_limit: float = typer.Option(60.0, "--milp-limit", help="HiGHS seconds per instance"),
    ils_runs: int = typer.Option(3, "--ils-runs", help="iterated-local-search runs per instance (the check)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="[default: the evaluators' data/optwvp/refs.json]"),
) -> None:
    """Best-known values of optwvp_route and optwvp_service (HiGHS MILP, ILS as a check)."""
    from hifo.evaluators import optwvp_refs as mod

    try:
        mod.make_optwvp_refs(milp_limit, ils_runs, out=out or mod.REFS_PATH, log=_log)
    except ValueError as exc:
        _fail(str(exc))


@data_app.command("toptwvp-refs")
def toptwvp_refs(
    milp_limit: float = typer.Option(60.0, "--milp-limit", help="HiGHS seconds per instance"),
    ils_runs: int = typer.Option(1, "--ils-runs", help="team-ILS runs per instance (the check)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="[default: the evaluator's data/optwvp/toptwvp_refs.json]"),
) -> None:
    """Best-known values of toptwvp_route (HiGHS MILP with m vehicles, the team ILS as a check)."""
    from hifo.evaluators import toptwvp_refs as mod

    try:
        mod.make_toptwvp_refs(milp_limit, ils_runs, out=out or mod.REFS_PATH, log=_log)
    except ValueError as exc:
        _fail(str(exc))
