"""What the model calls cost and what they produced, per generation: read back from a run store.

Used by ``hifo show``, the run summary (``summary.json``) and the final lines of ``hifo run``:
- calls, median seconds per call, and for the embedded model the seconds of prompt evaluation and of
  generation and the share of prompt tokens llama.cpp reused from the previous call (its prefix cache);
- model-written candidates, how many were duplicates (not evaluated; by code, or by behaviour on the probe
  instances, agents/probe.py) and how many re-draws were asked;
- over the whole run: valid, distinct (by objective), and better than the best baseline.
"""

from __future__ import annotations

import statistics
from typing import Any

_MODEL_MADE = ("baseline", "hyper")


def per_generation(store: Any) -> list[dict[str, Any]]:
    """One row per generation with model calls (distillation included) or model-written candidates."""
    rows: dict[int, dict[str, Any]] = {}

    def row(g: int) -> dict[str, Any]:
        return rows.setdefault(g, {"generation": g, "calls": 0, "latencies": [], "prompt_eval_s": 0.0,
                                   "decode_s": 0.0, "prompt_tokens": 0, "prompt_evaluated_tokens": 0, "completion_tokens": 0,
                                   "timed": 0, "candidates": 0, "duplicates": 0, "behaviour_duplicates": 0,
                                   "redraws": 0})

    for p in store.prompts():
        u, r = p["usage"] or {}, row(p["generation"])
        if "error" in u:
            continue
        r["calls"] += 1
        r["latencies"].append(float(u.get("latency_s") or 0.0))
        if u.get("prompt_eval_s") is not None and not u.get("cached"):
            r["timed"] += 1
            r["prompt_eval_s"] += float(u["prompt_eval_s"])
            r["decode_s"] += float(u.get("decode_s") or 0.0)
            r["prompt_tokens"] += int(u.get("prompt_tokens") or 0)
            r["prompt_evaluated_tokens"] += int(u.get("prompt_evaluated_tokens") or 0)
            r["completion_tokens"] += int(u.get("completion_tokens") or 0)
    for ev in store.events("propose"):
        row(ev["generation"])["redraws"] += int(ev.get("redraws") or 0)
    for c in store.candidates(not_operator=_MODEL_MADE):
        r = row(c.generation)
        r["candidates"] += 1
        r["duplicates"] += c.status == "duplicate"
        r["behaviour_duplicates"] += is_behaviour_duplicate(c)
    out = []
    for g in sorted(rows):
        r = rows[g]
        lat = r.pop("latencies")
        timed = r.pop("timed")
        r["median_call_s"] = round(statistics.median(lat), 2) if lat else None
        r["prompt_eval_s"] = round(r["prompt_eval_s"], 2) if timed else None
        r["decode_s"] = round(r["decode_s"], 2) if timed else None
        reused = r["prompt_tokens"] - r["prompt_evaluated_tokens"]
        r["prompt_reuse"] = round(reused / r["prompt_tokens"], 3) if timed and r["prompt_tokens"] else None
        r["duplicate_rate"] = round(r["duplicates"] / r["candidates"], 3) if r["candidates"] else None
        out.append(r)
    return out


def is_behaviour_duplicate(c: Any) -> bool:
    """A duplicate found by the behaviour probe (agents/probe.py), not by its code."""
    return c.status == "duplicate" and (c.error or "").startswith("duplicate: behaves like")


def outcomes(store: Any, direction: str) -> dict[str, Any]:
    """Model-written candidates over the run: how many, valid, distinct objectives among the valid ones,
    and valid ones better than the best baseline (the baselines' own scores, same instances)."""
    made = store.candidates(not_operator=_MODEL_MADE)
    valid = [c for c in made if c.ok]
    base = [c.objective for c in store.candidates(operator="baseline") if c.ok and c.objective is not None]
    best_base = (min(base) if direction == "minimize" else max(base)) if base else None

    def better(x: float) -> bool:
        return best_base is not None and (x < best_base - 1e-9 if direction == "minimize" else x > best_base + 1e-9)

    return {"model_candidates": len(made), "valid": len(valid),
            "duplicates": sum(c.status == "duplicate" for c in made),
            "behaviour_duplicates": sum(is_behaviour_duplicate(c) for c in made),
            "distinct_valid": len({round(c.objective, 6) for c in valid if c.objective is not None}),
            "better_than_baseline": sum(better(c.objective) for c in valid if c.objective is not None),
            "best_baseline": best_base}
