"""How often does the embedded model write a candidate that evaluates (issue 12, item 5)?

    python -m benchmarks.valid_rate [--calls 16] [--seed 0] [--problems bpp_online tsp_construct]
                                    [--model local] [--label after] [--out benchmarks/results/valid_rate.json]

Each problem gets one real search (the ``full`` arm of `benchmarks.discovery`: population 4, 4 offspring
per generation, error-feedback repair on, no constant tuning) limited to ``--calls`` model calls, so every
reply goes through the real prompt, parse, static repair and sandbox evaluation path.  Every model-made
candidate (operators i1/e1/e2/m1/m2/m3 and repair) is classified:

``valid`` (evaluated and feasible), ``parse_error`` (no usable function), ``undefined_name``,
``wrong_return`` (shape / type of the returned value), ``runtime:<Exception>``, ``infeasible``, ``timeout``,
``duplicate`` (rejected before evaluation), ``model_error``, ``pending`` (not evaluated when measured),
``other``.

The valid rate is valid / model-made candidates (less any still pending when measured); the run
record's ``fixes`` (static normalisations applied) are counted too.  Results are merged into
``--out`` under ``--label`` (e.g. ``before`` / ``after``).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from hifo.agents.rundb import CandidateRow, RunStore

RESULTS = Path(__file__).resolve().parent / "results" / "valid_rate.json"
_SHAPE = re.compile(r"shape|broadcast|must return|returned|return(s)? an?|expected .*array|length|ndarray|"
                    r"not a (number|permutation)|scalar|dtype", re.I)


def classify(c: CandidateRow) -> str:
    err = (c.error or "").strip().split("\n")[0]  # the message, not the quoted source line
    low = err.lower()
    if c.ok:
        return "valid"
    if c.status == "pending":
        return "pending"  # not evaluated (yet): a run measured while it was still going
    if c.status == "duplicate":
        return "duplicate"
    if c.status == "invalid":
        if low.startswith("model call failed"):
            return "model_error"
        if "undefined name" in low:
            return "undefined_name"
        return "parse_error"
    if "timeout" in low or "overtime" in low or "time limit" in low or "timed out" in low:
        return "timeout"
    if c.status == "evaluated" and not c.feasible:
        if low.startswith("invalid") or "infeasible" in low:
            return "wrong_return" if _SHAPE.search(low) else "infeasible"
    m = re.search(r"\b([A-Z][A-Za-z]*(Error|Exception))\b", err)
    if m:
        if m.group(1) == "NameError":
            return "undefined_name"
        return "wrong_return" if _SHAPE.search(low) else f"runtime:{m.group(1)}"
    if _SHAPE.search(low):
        return "wrong_return"
    return "infeasible" if c.status == "evaluated" else "other"


def measure(run_dir: Path) -> dict[str, Any]:
    store = RunStore(run_dir / "run.sqlite")
    try:
        made = store.candidates(not_operator=("baseline", "hyper"))
        classes: dict[str, int] = {}
        fixes: dict[str, int] = {}
        examples: dict[str, str] = {}
        for c in made:
            k = classify(c)
            classes[k] = classes.get(k, 0) + 1
            if k != "valid" and k not in examples:
                examples[k] = " ".join((c.error or "").split())[:240]
        for ev in store.events("repaired"):
            for f in ev.get("fixes", []):
                key = re.sub(r"\d+", "N", f.split(":")[0])[:60]
                fixes[key] = fixes.get(key, 0) + 1
        n_prompts = len([p for p in store.prompts() if p["operator"] != "distill"])
        valid = classes.get("valid", 0)
        by_op: dict[str, list[int]] = {}
        for c in made:
            v = by_op.setdefault(c.operator, [0, 0])
            v[0] += c.ok
            v[1] += 1
        from hifo.agents.call_stats import per_generation

        calls = per_generation(store)
        timed = [r for r in calls if r["prompt_eval_s"] is not None]
        speed = {"median_call_s_by_generation": [r["median_call_s"] for r in calls],
                 "prompt_eval_s": round(sum(r["prompt_eval_s"] for r in timed), 1),
                 "decode_s": round(sum(r["decode_s"] for r in timed), 1),
                 "prompt_tokens": sum(r["prompt_tokens"] for r in timed),
                 "prompt_evaluated_tokens": sum(r["prompt_evaluated_tokens"] for r in timed),
                 "completion_tokens": sum(r["completion_tokens"] for r in timed)} if timed else {}
        return {"model_calls": n_prompts, "candidates": len(made), "valid": valid, "speed": speed,
                "duplicates_redrawn": sum(r["redraws"] for r in calls),
                "valid_rate": round(valid / decided, 3) if (decided := len(made) - classes.get("pending", 0)) else None,
                "classes": dict(sorted(classes.items(), key=lambda kv: -kv[1])),
                "by_operator": {k: f"{a}/{b}" for k, (a, b) in sorted(by_op.items())},
                "fixes": fixes, "examples": examples}
    finally:
        store.close()


def best_vs_baseline(run_dir: Path, problem: str, executor: Any = None) -> dict[str, Any]:
    """The best model-made candidate's and the best baseline's training objective (the run's own scores),
    and with ``executor`` both re-scored on the evaluator's test set."""
    store = RunStore(run_dir / "run.sqlite")
    try:
        def best(rows: list[CandidateRow]) -> CandidateRow | None:
            ok = [c for c in rows if c.ok]
            return max(ok, key=lambda c: c.fitness) if ok else None

        made, base = best(store.candidates(not_operator=("baseline", "hyper"))), best(store.candidates(operator="baseline"))
        valid = [c for c in store.candidates(not_operator=("baseline", "hyper")) if c.ok]
        # valid is not new: how many valid candidates score differently from each other and from the baseline
        distinct = {round(c.objective, 6) for c in valid}
        out: dict[str, Any] = {"valid_distinct_objectives": len(distinct),
                               "valid_scoring_as_baseline": sum(base is not None and round(c.objective, 6)
                                                                == round(base.objective, 6) for c in valid),
                               "best_train": made and round(made.objective, 4),
                               "baseline_train": base and round(base.objective, 4),
                               "best_code": made and made.code}
        if executor is not None:
            from hifo.agents.evaluation import CandidateEvaluator
            from hifo.evaluators import get_evaluator

            from benchmarks.discovery import PUBLISHED_TEST

            ev = get_evaluator(problem)  # the published test set, as the committed rows (bpp_online: Weibull 5k)
            tester = CandidateEvaluator(ev, PUBLISHED_TEST.get(problem, ev.default_test_set), executor)
            for key, c in (("best_test", made), ("baseline_test", base)):
                s = tester.evaluate(c.code) if c is not None else None
                out[key] = round(s.objective, 4) if s is not None and s.feasible else None
        return out
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--problems", nargs="+", default=["bpp_online", "tsp_construct"])
    ap.add_argument("--model", default="local")
    ap.add_argument("--label", default="current")
    ap.add_argument("--temperature", type=float, default=None, help="override the run's sampling temperature")
    ap.add_argument("--grammar", choices=("on", "off"), default="on",
                    help="grammar-constrained decoding of the embedded model (RunConfig.grammar; default on)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--measure", nargs="+", metavar="RUN_DIR",
                    help="only classify existing run directories (e.g. a run stopped early) and print JSON")
    a = ap.parse_args(argv)
    if a.measure:
        print(json.dumps({d: measure(Path(d)) for d in a.measure}, indent=1))
        return 0
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    from benchmarks.discovery import arm_config
    from hifo.agents.graph import start_run
    from hifo.sandbox import LocalExecutor

    rows = {}
    with tempfile.TemporaryDirectory() as tmp, LocalExecutor(max_workers=2) as ex:
        for problem in a.problems:
            extra: dict[str, Any] = {"grammar": a.grammar == "on"}
            if a.temperature is not None:
                extra["temperature"] = a.temperature
            cfg = arm_config(problem, "full", a.seed, a.calls, a.model, Path(tmp), workers=1, **extra)
            t0 = time.time()
            run_dir, _ = start_run(cfg, executor=ex)
            row = {**measure(run_dir), "wall_s": round(time.time() - t0, 1), **best_vs_baseline(run_dir, problem, ex)}
            rows[problem] = row
            print(f"{problem:<14} valid {row['valid']}/{row['candidates']} ({row['valid_rate']})  {row['classes']}  "
                  f"{row['wall_s']} s  best {row['best_train']} vs baseline {row['baseline_train']} (train), "
                  f"{row['best_test']} vs {row['baseline_test']} (test); valid: {row['valid_distinct_objectives']} distinct "
                  f"objectives, {row['valid_scoring_as_baseline']} scoring as the baseline", flush=True)
    out = Path(a.out)
    data = json.loads(out.read_text()) if out.exists() else {}
    data[a.label] = {"command": "python -m benchmarks.valid_rate " + " ".join(argv or __import__("sys").argv[1:]),
                     "calls": a.calls, "seed": a.seed, "model": a.model, "grammar": a.grammar,
                     "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "problems": rows}
    out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
