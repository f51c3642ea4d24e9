"""Train FMIP's joint flow model on the CPU and commit small weights.

    python -m benchmarks.train_fmip            # 12 instances per family, writes the weights
    python -m benchmarks.train_fmip --quick    # 3 per family, 5 epochs, weights not written

Labels are HiGHS's best solutions within ``--label-time`` seconds (FMIP trains on solver
solutions too). After training, one held-out instance per family (unseen seeds) is sampled
with and without guidance, reporting the agreement of the sampled integers with HiGHS's
label, the total row violation of the raw sample (before any repair) and its objective. Writes
``benchmarks/results/milp_train_fmip.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from hifo.problems.milp import COLLECTIONS, FAMILIES, SIZES, generate, solve_highs, solve_lp
from hifo.problems.milp import fmip

OUT = Path(__file__).parent / "results" / "milp_train_fmip.json"


def labelled(instances, label_time):
    data = []
    for inst in instances:
        r = solve_highs(inst, time_limit=label_time)
        if r.x is not None:
            data.append((inst, solve_lp(inst).x, r.x))
    return data


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--per-family", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--label-time", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # 2 shared cores: threads only add contention for these sizes
    per = args.per_family or (3 if args.quick else COLLECTIONS["fmip_data"][1])
    epochs = args.epochs or (5 if args.quick else 40)
    base = COLLECTIONS["fmip_data"][0]
    t0 = time.perf_counter()
    train = labelled([generate(f, base + k, **SIZES[f]) for f in FAMILIES for k in range(per)],
                     args.label_time)
    held = labelled([generate(f, base + 500 + k, **SIZES[f]) for f in FAMILIES for k in range(1)],
                    args.label_time)
    t_label = time.perf_counter() - t0
    t0 = time.perf_counter()
    net = fmip.train_fmip(train, epochs=epochs, seed=args.seed, log=print)
    t_train = time.perf_counter() - t0
    rows = []
    for inst, x_lp, label in held:
        row = {"family": inst.family, "instance": inst.name}
        for mode, guidance in (("unguided", {"weight_obj": 0.0, "weight_viol": 0.0}), ("guided", None)):
            s = fmip.guided_sample(net, inst, guidance=guidance, x_lp=x_lp, seed=args.seed)
            ints = inst.is_int
            row[f"{mode}_int_acc"] = float(np.mean(np.round(s.values[ints]) == np.round(label[ints])))
            row[f"{mode}_viol"] = inst.total_violation(s.values)
            row[f"{mode}_obj"] = inst.user_objective(s.values)
        row["label_obj"] = inst.user_objective(label)
        rows.append(row)
    print(f"\nlabels {t_label:.1f}s  training {t_train:.1f}s  ({len(train)} instances, {epochs} epochs)")
    print(f"{'family':10s} {'acc(unguided)':>13s} {'acc(guided)':>11s} {'viol(ung.)':>10s} "
          f"{'viol(gui.)':>10s} {'obj(gui.)':>10s} {'label obj':>10s}")
    for r in rows:
        print(f"{r['family']:10s} {r['unguided_int_acc']:13.3f} {r['guided_int_acc']:11.3f} "
              f"{r['unguided_viol']:10.2f} {r['guided_viol']:10.2f} {r['guided_obj']:10.1f} {r['label_obj']:10.1f}")
    result = {"command": "python -m benchmarks.train_fmip" + (" --quick" if args.quick else ""),
              "n_train": len(train), "epochs": epochs, "label_time_s": args.label_time,
              "label_s": t_label, "train_s": t_train, "held_out": rows}
    if not args.quick and not args.no_save:
        fmip.save_model(net, meta={"epochs": epochs, "n_train": len(train), "seed": args.seed,
                                   "families": list(FAMILIES)})
        result["weights"] = str(fmip.WEIGHTS)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(result, indent=1))
    elif args.quick:
        OUT.with_name("milp_train_fmip_quick.json").write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
