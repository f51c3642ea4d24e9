"""Byzantine-robust federated learning: test accuracy of each aggregation rule per attack and share
of malicious clients, the learnable weights of Parsa et al. (arXiv 2511.03529) side by side with what a
user would pick instead (FedAvg, Krum, Multi-Krum, Bulyan, geometric median, coordinate median, trimmed
mean, centred clipping).

    python -m benchmarks.byzantine_fl            # 6 attacks x {10, 20, 30, 40} % + no attack, seeds 0-2
    python -m benchmarks.byzantine_fl --quick    # seed 0 only

Setting (:mod:`hifo.problems.byzantine_fl`): softmax regression on scikit-learn's digits (1397 train /
400 test), 20 clients with a Dirichlet(0.5) label split, 30 rounds of 5 local full-batch gradient
steps; every rule is told the number f of malicious clients. Accuracy is on the 400 held-out digits,
averaged over seeds (the seed draws the split and which clients are malicious). Results go to
``benchmarks/results/byzantine_fl.json`` (``--quick``: ``byzantine_fl_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hifo.problems.byzantine_fl import RULES, FLConfig, make_setup, run_fl

RESULTS = Path(__file__).parent / "results"
ATTACKS = ("sign_flip", "alie", "ipm", "label_flip", "min_max", "min_sum")
FRACTIONS = (0.1, 0.2, 0.3, 0.4)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="seed 0 only")
    args = ap.parse_args(argv)
    seeds = (0,) if args.quick else (0, 1, 2)
    cases = [("none", 0.0)] + [(a, fr) for a in ATTACKS for fr in FRACTIONS]
    t0 = time.perf_counter()
    table: dict[str, dict[str, float]] = {}
    per_case: dict[str, dict[str, list[float]]] = {}
    attacker_weight: dict[str, float] = {}
    print(f"{'attack':>10} {'mal.':>5} " + " ".join(f"{r[:12]:>12}" for r in RULES))
    for attack, frac in cases:
        key = f"{attack}/{frac:.1f}"
        accs: dict[str, list[float]] = {r: [] for r in RULES}
        law_bad: list[float] = []
        for seed in seeds:
            cfg = FLConfig(attack, frac, seed)
            for name, rule in RULES.items():
                run = run_fl(cfg, rule)
                accs[name].append(run.test_acc)
                if name == "learnable_weights" and attack != "none":
                    law_bad.append(float(run.memories[-1]["w"][make_setup(cfg).malicious].sum()))
        table[key] = {r: float(np.mean(v)) for r, v in accs.items()}
        if law_bad:
            attacker_weight[key] = float(np.mean(law_bad))
        print(f"{attack:>10} {frac:5.0%} " + " ".join(f"{table[key][r]:12.3f}" for r in RULES), flush=True)
        if attack != "none":
            per_case[key] = accs
    means = {r: float(np.mean([table[k][r] for k in table if not k.startswith("none")])) for r in RULES}
    # seed-to-seed noise of the mean under attack: its standard deviation over the seeds (full run only)
    seed_means = {r: [float(np.mean([per_case[k][r][i] for k in per_case])) for i in range(len(seeds))] for r in RULES}
    seed_std = {r: float(np.std(v, ddof=1)) if len(v) > 1 else float("nan") for r, v in seed_means.items()}
    wins = {r: int(sum(table[k][r] >= max(table[k].values()) - 1e-12 for k in table if not k.startswith("none")))
            for r in RULES}
    print(f"{'mean':>10} {'':>5} " + " ".join(f"{means[r]:12.3f}" for r in RULES))
    print(f"{'seed std':>10} {'':>5} " + " ".join(f"{seed_std[r]:12.3f}" for r in RULES))
    print(f"{'best on':>10} {'':>5} " + " ".join(f"{wins[r]:12d}" for r in RULES))
    print("learnable_weights' final weight on the malicious clients: "
          + ", ".join(f"{k} {v:.3f}" for k, v in attacker_weight.items()))
    result = {"seeds": list(seeds), "rules": list(RULES), "accuracy": table, "mean_under_attack": means,
              "mean_under_attack_per_seed": seed_means, "mean_under_attack_seed_std": seed_std,
              "best_count": wins, "learnable_weights_malicious_weight": attacker_weight,
              "wall_s": round(time.perf_counter() - t0, 1)}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("byzantine_fl_quick.json" if args.quick else "byzantine_fl.json")
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} ({result['wall_s']} s)")
    return result


if __name__ == "__main__":
    main()
