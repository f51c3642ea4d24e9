"""Head-to-head arms at an equal budget of model calls: does hindsight / foresight help discovery?

    python -m benchmarks.discovery [--calls 16] [--seeds 0] [--problems bpp_online tsp_construct]
                                   [--model local] [--out benchmarks/results/discovery.json]

Arms (every arm: the same model, ``--calls`` model calls, population 4, 4 offspring per generation,
no constant-tuning operator so that only model calls buy candidates, a fresh knowledge base):

* ``full``          hindsight (recall, per-prompt principle subsets, credit, contrast principles) and
                    foresight (regime sentence + directive in every prompt);
* ``no_hindsight``  ``recall_k = 0`` and no distillation: no principle reaches a prompt;
* ``no_foresight``  ``foresight = False``: no regime, no directive, fixed operator weights;
* ``best_of_n``     repeated sampling without evolution: generation 0 only, ``--calls`` samples.

Per arm and seed it records the best training objective against model calls (the curve), the
best candidate's test-set objective, whether the best is a model-written candidate better than every
seeded baseline on the training set, the valid-candidate rate (model-written candidates that were
evaluated and feasible, out of all model replies), and the principles credited.  Results go to
``benchmarks/results/discovery.json``.  Not covered (see the JSON's ``not_covered``): EoH's own
operators and selection as an arm, the transfer arm, plots.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from hifo.agents.config import RunConfig
from hifo.agents.graph import start_run
from hifo.agents.rundb import RunStore
from hifo.knowledge_base import KnowledgeBase

RESULTS = Path(__file__).resolve().parent / "results" / "discovery.json"
ARMS: dict[str, dict[str, Any]] = {
    "full": {},
    "no_hindsight": {"recall_k": 0, "distill": False},
    "no_foresight": {"foresight": False},
    "best_of_n": {"generations": 0},
}
PROBLEM_ARMS = {"bpp_online": list(ARMS), "tsp_construct": ["full", "best_of_n"]}


def arm_config(problem: str, arm: str, seed: int, calls: int, model: str, work: Path, **extra: Any) -> RunConfig:
    kw: dict[str, Any] = dict(problem=problem, model=model, seed=seed, max_calls=calls, population=4, offspring=4,
                              init_samples=4, hyper_lambda=0, generations=1000, recall_k=3, workers=2,
                              kb=str(work / f"kb-{problem}-{arm}-{seed}.sqlite"),
                              run_dir=str(work / f"{problem}-{arm}-{seed}"), llm_cache=False)
    kw.update(ARMS[arm])
    if arm == "best_of_n":
        kw["init_samples"] = calls
    kw.update(extra)
    return RunConfig(**kw)


def measure(run_dir: Path, summary: dict[str, Any], kb_path: Path) -> dict[str, Any]:
    """What one run shows: curve, test objective, valid rate, credited principles.  ``model_calls`` counts
    operator prompts; a chat model's distillation calls also spend the budget."""
    store = RunStore(run_dir / "run.sqlite")
    try:
        direction = summary["direction"]
        better = (lambda a, b: a < b) if direction == "minimize" else (lambda a, b: a > b)
        base = [c for c in store.candidates(operator="baseline") if c.ok]
        best_base = min(base, key=lambda c: -c.fitness) if base else None
        model_made = [c for c in store.candidates(not_operator=("baseline", "hyper"))]
        n_calls = len([p for p in store.prompts() if p["operator"] != "distill"])
        valid = [c for c in model_made if c.ok]
        errors: dict[str, int] = {}
        for c in model_made:
            if not c.ok and c.error:  # first words of the reason: "undefined name(s)", "error: TypeError", ...
                kind = re.split(r"[:(]", c.error.replace("error: ", "", 1), maxsplit=1)[0].strip()[:60]
                errors[kind] = errors.get(kind, 0) + 1
        curve, best = [], best_base.objective if best_base else None
        by_prompt = {c.prompt_id: c for c in model_made if c.prompt_id}
        for i, p in enumerate([p for p in store.prompts() if p["operator"] != "distill"], 1):
            c = by_prompt.get(p["id"])
            if c is not None and c.ok and (best is None or better(c.objective, best)):
                best = c.objective
            curve.append([i, best])
        top = summary.get("best") or {}
        beat = bool(top) and not str(top.get("id", "")).startswith("base-") and best_base is not None \
            and better(top["objective"], best_base.objective)
    finally:
        store.close()
    with KnowledgeBase(kb_path) as kb:
        credited = [{"id": p.id, "text": p.text[:160], "source": p.source, "uses": p.credit_n,
                     "mean_credit": round(p.credit_mean, 4), "status": p.status}
                    for p in kb.list(status=None) if p.credit_n]
    return {"model_calls": n_calls, "replies": len(model_made), "valid": len(valid),
            "valid_rate": len(valid) / len(model_made) if model_made else None,
            "failures": dict(sorted(errors.items(), key=lambda kv: -kv[1])),
            "best_train": top.get("objective"), "best_id": top.get("id"),
            "best_baseline": best_base.thought if best_base else None,
            "best_baseline_train": best_base.objective if best_base else None,
            "beat_baseline_on_train": beat, "test": top.get("test"), "curve": curve,
            "principles_credited": sorted(credited, key=lambda r: -r["mean_credit"])[:10],
            "stop_reason": summary.get("stop_reason")}


def run_all(problems: list[str], seeds: list[int], calls: int, model: str, work: Path,
            client_factory: Callable[[], Any] | None = None, arms: list[str] | None = None,
            log: Callable[[str], None] = print, **extra: Any) -> dict[str, Any]:
    from hifo.sandbox import LocalExecutor

    rows = []
    with LocalExecutor(max_workers=2) as ex:
        for problem in problems:
            for arm in [a for a in PROBLEM_ARMS[problem] if arms is None or a in arms]:
                for seed in seeds:
                    cfg = arm_config(problem, arm, seed, calls, model, work, **extra)
                    t0 = time.time()
                    client = None
                    if client_factory:  # a client given directly gets the same call budget as a named model
                        from hifo.agents.llm.factory import wrap_client

                        client = wrap_client(client_factory(), max_calls=calls, seed=seed)
                    run_dir, summary = start_run(cfg, client=client, executor=ex)
                    row = {"problem": problem, "arm": arm, "seed": seed, "wall_s": round(time.time() - t0, 1),
                           **measure(run_dir, summary, Path(cfg.kb))}
                    rows.append(row)
                    log(f"{problem:<14}{arm:<14}seed {seed}: calls {row['model_calls']:>3}  valid "
                        f"{row['valid']}/{row['replies']}  best {row['best_train']}  (baseline "
                        f"{row['best_baseline']} {row['best_baseline_train']})  beat={row['beat_baseline_on_train']}"
                        f"  {row['wall_s']} s")
    return {"rows": rows, "summary": summarise(rows)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in rows:
        out.setdefault(r["problem"], {}).setdefault(r["arm"], []).append(r)
    table: dict[str, Any] = {}
    for problem, arms in out.items():
        for arm, rs in arms.items():
            bests = [r["best_train"] for r in rs if r["best_train"] is not None]
            valid = sum(r["valid"] for r in rs)
            replies = sum(r["replies"] for r in rs)
            table.setdefault(problem, {})[arm] = {
                "seeds": len(rs), "median_best_train": statistics.median(bests) if bests else None,
                "beat_baseline_seeds": sum(r["beat_baseline_on_train"] for r in rs),
                "valid_rate": valid / replies if replies else None, "valid": valid, "replies": replies}
    return table


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=16, help="model calls per arm and seed")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--problems", nargs="+", default=list(PROBLEM_ARMS), choices=list(PROBLEM_ARMS))
    ap.add_argument("--arms", nargs="+", default=None, choices=list(ARMS))
    ap.add_argument("--model", default="local")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hifo-discovery-") as tmp:
        result = run_all(args.problems, args.seeds, args.calls, args.model, Path(tmp), arms=args.arms)
    result.update({"calls_per_arm": args.calls, "seeds": args.seeds, "model": args.model,
                   "machine": platform.platform(), "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "not_covered": ["EoH-mode arm (EoH operators and selection)", "transfer arm (tsp after bpp)",
                                   "PNG plot", "about 120 calls per arm and 3 seeds (the runs here are small)"]})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str))
    for problem, arms in result["summary"].items():
        for arm, s in arms.items():
            print(f"{problem:<14}{arm:<14}median best {s['median_best_train']}  beat baseline in "
                  f"{s['beat_baseline_seeds']}/{s['seeds']} seed(s)  valid {s['valid']}/{s['replies']}")
    return result


if __name__ == "__main__":
    main()
