"""Stored reference figures with their seed-to-seed noise, for evaluators whose instances are drawn from seeds.

``python -m hifo.evaluators.NAME`` (for the evaluators that use this) measures every baseline on the published
seeds of each instance set (the figures ``hifo evaluate`` reproduces, checked by the evaluator's tests) and,
on each secret set, on ``draws`` further draws of the set made the way a run makes them (another secret key
per draw; here the keys are fixed, so the file is the same on every machine). The spread of the primary metric
over those draws is the evaluator's seed-to-seed noise: a gap between two heuristics smaller than it says
nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from hifo.evaluators.base import Evaluator, measured_figures


def _compiled(source: str, entry: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # trusted: the evaluator's own baselines
    return namespace[entry]


def make_refs(ev_type: type[Evaluator], draws: int = 8) -> dict[str, Any]:
    """{baseline: {set: figures on the published seeds}, "_seed_noise": {baseline: {set: {draws, mean, sd}}}}."""
    out: dict[str, Any] = {}
    noise: dict[str, dict[str, dict[str, float]]] = {}
    public = ev_type()
    public.public_seeds = True
    for name, source in sorted(public.baselines.items()):
        heuristic = _compiled(source, public.template.name)
        out[name] = {s: measured_figures(public, heuristic, s) for s in public.instance_sets}
        for instance_set in public.secret_sets:
            values = []
            for draw in range(draws):
                ev = ev_type()
                ev.__dict__["_secret_key"] = hashlib.blake2b(f"seed-noise draw {draw}".encode()).digest()[:32]
                values.append(measured_figures(ev, heuristic, instance_set)[public.primary_metric])
            noise.setdefault(name, {})[instance_set] = {
                "draws": draws, "mean": round(float(np.mean(values)), 6), "sd": round(float(np.std(values, ddof=1)), 6)}
    out["_seed_noise"] = noise
    return out


def write_refs(ev_type: type[Evaluator], path: Path, draws: int = 8) -> None:
    refs = make_refs(ev_type, draws)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(refs, indent=1, sort_keys=True) + "\n")
    print(json.dumps(refs, indent=1, sort_keys=True))
    print(f"wrote {path}")


def load_figures(path: Path) -> dict[str, Any]:
    """The stored file without its ``_seed_noise`` entry ({} when it has not been made yet)."""
    if not path.exists():
        return {}
    return {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("_")}


def baselines_per_instance(ev: Evaluator, baseline_on: Any, jobs: int = 1
                           ) -> tuple[dict[str, Any], dict[tuple[str, str, int], dict[str, float]]]:
    """Every baseline of ``ev`` on every instance of every set, as ``baseline_on((name, set, index))`` measures
    it (a module-level function: with ``jobs`` > 1 it runs in that many spawned processes; every figure is one
    deterministic run, so the split changes nothing). Returns ({baseline: {set: ev.aggregate of its
    instances, rounded to 6 digits}}, {(baseline, set, index): that instance's metrics})."""
    work = [(n, s, k) for n in ev.baselines for s in ev.instance_sets for k in range(len(ev.load_instances(s)))]
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = dict(zip(work, pool.map(baseline_on, work, chunksize=1)))
    else:
        results = {w: baseline_on(w) for w in work}
    out: dict[str, Any] = {}
    for n in ev.baselines:
        for s in ev.instance_sets:
            per = [results[(n, s, k)] for k in range(len(ev.load_instances(s)))]
            out.setdefault(n, {})[s] = {k: round(v, 6) for k, v in ev.aggregate(per).items()}
    return out, results


def rank_agreement(out: dict[str, Any], names: list[str], metric: str) -> dict[str, Any]:
    """The baselines' ``metric`` on train and test, and the Spearman correlation of their ranks."""
    from scipy.stats import spearmanr

    train = [out[n]["train"][metric] for n in names]
    test = [out[n]["test"][metric] for n in names]
    return {"baselines": names, "train": train, "test": test,
            "spearman": round(float(spearmanr(train, test).statistic), 6)}
