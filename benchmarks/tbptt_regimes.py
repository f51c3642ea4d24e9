"""Where does the burn-in schedule matter more than the data? A screen of truncated-BPTT settings for the
``tbptt_burnin`` evaluator (issue 29): per setting, the test RMSE of each schedule on ``--n`` data seeds (one
initialisation seed), and the paired per-run differences between schedules.

    python -m benchmarks.tbptt_regimes '{"window": 100, "epochs": 60, "n_train": 5000, "n_test": 5000, "lr": 0.01}' \\
        half,ramp,no_burn_in [--out benchmarks/results/tbptt_regimes.jsonl]

The setting is JSON: ``window``, ``epochs`` (10 Adam steps each unless ``steps``), ``n_train`` / ``n_test`` (record
lengths), optional ``lr`` (0.02), ``batch`` (32), ``hidden`` (12), ``seed0`` (100: data seeds seed0 .. seed0+n-1),
``n`` (8), ``init`` (0). Schedules: ``no_burn_in``, ``quarter``, ``half`` (the paper's fixed burn-in, window/2),
``ramp`` (0 -> 3/4 of the window over the epochs, ours), ``mK`` (a fixed burn-in of K). The LSTM and the training
are :func:`hifo.problems.tbptt.train_tbptt`, as in the evaluator; training uses one torch thread with torch's own
kernels (the evaluator pins them, about 3x slower at window 200), so ``sec_per_run`` understates the evaluator's cost.
One JSON line per setting is appended to ``--out``: each schedule's mean and sd over the runs, and for each pair the
mean, sd and t of the paired difference and in how many runs the first was lower (``neg``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hifo.problems.tbptt import make_data, train_tbptt

RESULTS = Path(__file__).parent / "results" / "tbptt_regimes.jsonl"


def schedule(name: str, window: int, epochs: int) -> list[int]:
    if name == "no_burn_in":
        return [0] * epochs
    if name == "quarter":
        return [window // 4] * epochs
    if name == "half":
        return [window // 2] * epochs
    if name == "ramp":
        return [int(0.75 * (window - 1) * e / max(epochs - 1, 1)) for e in range(epochs)]
    if name.startswith("m") and name[1:].isdigit():
        return [int(name[1:])] * epochs
    raise ValueError(f"unknown schedule {name!r}: no_burn_in, quarter, half, ramp or mK")


def screen(cfg: dict[str, Any], names: list[str]) -> dict[str, Any]:
    torch.set_num_threads(1)
    seed0, n = cfg.get("seed0", 100), cfg.get("n", 8)
    window, epochs = cfg["window"], cfg["epochs"]
    res: dict[str, list[float]] = {k: [] for k in names}
    t0 = time.time()
    for s in range(seed0, seed0 + n):
        data = make_data(s, n_train=cfg["n_train"], n_test=cfg["n_test"])
        for k in names:
            run = train_tbptt(data, window=window, epochs=epochs, steps=cfg.get("steps", 10), batch=cfg.get("batch", 32),
                              hidden=cfg.get("hidden", 12), lr=cfg.get("lr", 2e-2), seed=1000 * s + cfg.get("init", 0),
                              cell="lstm", burn_ins=schedule(k, window, epochs))
            res[k].append(run.test_rmse)
    out: dict[str, Any] = {"cfg": cfg, "sec_per_run": round((time.time() - t0) / (len(names) * n), 2)}
    for k in names:
        out[k] = {"mean": round(float(np.mean(res[k])), 4), "sd": round(float(np.std(res[k], ddof=1)), 4)}
    for a in names:
        for b in names:
            if a < b:
                d = np.subtract(res[a], res[b])
                sd = float(d.std(ddof=1))
                out[f"{a}-{b}"] = {"mean": round(float(d.mean()), 4), "sd": round(sd, 4),
                                   "t": round(float(d.mean() / (sd / np.sqrt(len(d)))), 2) if sd > 0 else None,
                                   "neg": int((d < 0).sum())}
    out["per_run"] = {k: np.round(res[k], 4).tolist() for k in names}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("setting", help="JSON object (see above)")
    ap.add_argument("schedules", help="comma-separated schedule names")
    ap.add_argument("--out", default=str(RESULTS))
    a = ap.parse_args(argv)
    try:
        cfg = json.loads(a.setting)
        names = [x for x in a.schedules.split(",") if x]
        for k in names:
            schedule(k, 2, 1)
        if not isinstance(cfg, dict) or not {"window", "epochs", "n_train", "n_test"} <= set(cfg):
            raise ValueError("the setting needs window, epochs, n_train and n_test")
    except ValueError as exc:
        ap.error(str(exc))
    row = screen(cfg, names)
    print(json.dumps({k: v for k, v in row.items() if k != "per_run"}), flush=True)
    with Path(a.out).open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
