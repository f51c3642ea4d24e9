"""Train FMIP's joint flow model on the CPU and save small weights: ``hifo data train-fmip``
(``python -m benchmarks.train_fmip`` is a wrapper that also writes ``benchmarks/results/``). Needs torch.

Labels are HiGHS's best solutions within ``label_time`` seconds (FMIP trains on solver solutions
too). After training, one held-out instance per family (unseen seeds) is sampled with and without
guidance, reporting the agreement of the sampled integers with HiGHS's label, the total row
violation of the raw sample (before any repair) and its objective; ``compare`` (``--compare``) runs
the same check with earlier weights (before/after). The weights go to ``weights``
(default: the package's ``problems/milp/weights/fmip.pt``, which the ``fmip_guidance`` evaluator reads).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import torch

from . import fmip
from ._generators import generate
from ._highs import solve_highs, solve_lp
from ._instance import MILPInstance
from ._sets import COLLECTIONS, FAMILIES, SIZES


def labelled(instances: Iterable[MILPInstance],
             label_time: float) -> list[tuple[MILPInstance, np.ndarray, np.ndarray]]:
    """``(instance, LP solution, HiGHS solution)`` for each instance HiGHS finds a solution of."""
    data = []
    for inst in instances:
        r = solve_highs(inst, time_limit=label_time)
        if r.x is not None:
            data.append((inst, solve_lp(inst).x, r.x))
    return data


def held_out_rows(net: fmip.FMIPNet, held: list[tuple[MILPInstance, np.ndarray, np.ndarray]],
                  seed: int = 0) -> list[dict[str, Any]]:
    """One unguided and one guided sample of ``net`` per held-out ``(instance, LP, label)``: the
    agreement of the sampled integers with the label, the raw sample's row violation, its objective."""
    rows = []
    for inst, x_lp, label in held:
        row: dict[str, Any] = {"family": inst.family, "instance": inst.name}
        for mode, guidance in (("unguided", {"weight_obj": 0.0, "weight_viol": 0.0}), ("guided", None)):
            s = fmip.guided_sample(net, inst, guidance=guidance, x_lp=x_lp, seed=seed)
            ints = inst.is_int
            row[f"{mode}_int_acc"] = float(np.mean(np.round(s.values[ints]) == np.round(label[ints])))
            row[f"{mode}_viol"] = inst.total_violation(s.values)
            row[f"{mode}_obj"] = inst.user_objective(s.values)
        row["label_obj"] = inst.user_objective(label)
        rows.append(row)
    return rows


def _table(rows: list[dict[str, Any]], log: Callable[[str], None]) -> None:
    log(f"{'family':10s} {'acc(unguided)':>13s} {'acc(guided)':>11s} {'viol(ung.)':>10s} "
        f"{'viol(gui.)':>10s} {'obj(gui.)':>10s} {'label obj':>10s}")
    for r in rows:
        log(f"{r['family']:10s} {r['unguided_int_acc']:13.3f} {r['guided_int_acc']:11.3f} "
            f"{r['unguided_viol']:10.2f} {r['guided_viol']:10.2f} {r['guided_obj']:10.1f} {r['label_obj']:10.1f}")


def run(*, per_family: int | None = None, epochs: int = 40, label_time: float = 2.0, seed: int = 0,
        save: bool = True, weights: Path = fmip.WEIGHTS, compare: Path | None = None,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Label ``per_family`` instances of every family (default: the ``fmip_data`` collection's count),
    train for ``epochs``, evaluate on one held-out instance per family; save to ``weights`` when
    ``save``. ``compare``: earlier weights, evaluated on the same held-out instances first (before/after;
    read before anything is written, so it may be ``weights`` itself). Returns the timings and the
    held-out rows (``held_out_compare`` for ``compare``)."""
    torch.set_num_threads(1)  # small models: threads only add contention
    start = time.perf_counter()
    before = fmip.load_model(compare) if compare is not None else None
    per = per_family or COLLECTIONS["fmip_data"][1]
    base = COLLECTIONS["fmip_data"][0]
    t0 = time.perf_counter()
    train = labelled([generate(f, base + k, **SIZES[f]) for f in FAMILIES for k in range(per)], label_time)
    held = labelled([generate(f, base + 500, **SIZES[f]) for f in FAMILIES], label_time)
    t_label = time.perf_counter() - t0
    t0 = time.perf_counter()
    net = fmip.train_fmip(train, epochs=epochs, seed=seed, log=log)
    t_train = time.perf_counter() - t0
    rows = held_out_rows(net, held, seed)
    log(f"\nlabels {t_label:.1f}s  training {t_train:.1f}s  ({len(train)} instances, {epochs} epochs)")
    _table(rows, log)
    result: dict[str, Any] = {"n_train": len(train), "per_family": per, "families": list(FAMILIES),
                              "epochs": epochs, "label_time_s": label_time,
                              "label_s": t_label, "train_s": t_train, "held_out": rows}
    if before is not None:
        result["compare"] = str(compare)
        result["held_out_compare"] = held_out_rows(before, held, seed)
        log(f"\nthe same held-out instances with the earlier weights {compare}:")
        _table(result["held_out_compare"], log)
    result["wall_s"] = time.perf_counter() - start
    if save:
        fmip.save_model(net, weights, meta={"epochs": epochs, "n_train": len(train), "seed": seed,
                                            "families": list(FAMILIES),
                                            "sizes": {f: SIZES[f] for f in FAMILIES},
                                            "per_family": per, "label_time_s": label_time})
        result["weights"] = str(weights)
    return result
