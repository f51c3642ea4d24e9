"""What the report page and the live dashboard show of one run, as plain JSON-able data, read from
``run.sqlite`` (read-only) and ``summary.json``. The page (``agents/web/report.js``) draws everything
from this one dictionary, so the static ``report.html`` and ``hifo ui`` show the same thing.

The numbers are computed here, not in the browser, so tests check them directly:

- ``curve``: the best so far as a running best by fitness after each evaluation (a generation of bad
  candidates cannot lower it), against the evaluation count and the model calls made by then;
- ``medians``: each generation's median of the primary metric over its feasible candidates;
- ``baselines``: each hand-written baseline's score, drawn as a horizontal line;
- ``best``: the best candidate's train score and, once the run has scored it, its held-out test score;
- ``candidates``: every candidate with its code, score per instance, operator, parents, the principles in
  its prompt and its error or failure reason;
- ``principles``: each recalled principle's text, its utility (credit) at each recall, and its uses.

Every string is passed through as written; the page shows it as text (never as markup).
"""

from __future__ import annotations

import bisect
import functools
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


class RunViewError(RuntimeError):
    """A folder that is not a readable run; the message names the path."""


def _open_store(run_dir: Path) -> Any:
    from hifo.agents.rundb import RunStore, RunStoreError

    db = run_dir / "run.sqlite"
    if not db.is_file():
        raise RunViewError(f"{run_dir} is not a hifo run directory (no run.sqlite)")
    try:
        return RunStore(db, readonly=True)
    except RunStoreError as exc:
        raise RunViewError(str(exc)) from exc


def change_stamp(run_dir: str | Path) -> str:
    """A short text that changes whenever the run writes anything the page shows."""
    import sqlite3

    run_dir = Path(run_dir)
    store = _open_store(run_dir)
    try:
        stamp = store.change_stamp()
    except sqlite3.DatabaseError as exc:
        raise RunViewError(f"{run_dir / 'run.sqlite'}: not a readable run store ({exc})") from exc
    finally:
        store.close()
    summary = run_dir / "summary.json"
    return json.dumps([*stamp, summary.stat().st_mtime if summary.is_file() else None], default=str)


def failure_reason(c: Any) -> str:
    """Why a candidate has no score, in a few words (the full error is in ``error``); '' when it has one."""
    if c.status == "evaluated":
        if c.ok:
            return ""
        return (c.error or "infeasible").split(":")[0][:60] or "infeasible"
    if c.status == "pending":
        return "pending"
    first = (c.error or "").split(":")[0][:60]
    return first if first.startswith(c.status) else f"{c.status}: {first}".rstrip(": ")


@functools.lru_cache(maxsize=32)
def _metric_of(problem: str) -> tuple[str, str | None]:
    """The evaluator's primary metric and direction; ("objective", None) when its class cannot be loaded
    here (a plug-in file that moved): the page then labels the score by the column's name."""
    from hifo.evaluators.registry import get_evaluator_class

    try:
        cls = get_evaluator_class(problem)
        return cls.primary_metric or "objective", cls.direction
    except Exception:  # noqa: BLE001 - a label only; the scores themselves come from the store
        return "objective", None


def _num(x: Any) -> float | None:
    """A finite float or None (JSON has no NaN or infinity)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v and abs(v) != float("inf") else None


def _candidate(c: Any, metric: str) -> dict[str, Any]:
    per_instance = [_num(row.get(metric)) if isinstance(row, dict) else None for row in c.per_instance or []]
    return {"id": c.id, "generation": c.generation, "operator": c.operator, "regime": c.regime,
            "parents": list(c.parents), "principles": [str(p) for p in c.principle_ids], "status": c.status,
            "ok": c.ok, "fitness": _num(c.fitness), "objective": _num(c.objective), "per_instance": per_instance,
            "per_instance_metrics": c.per_instance, "error": c.error or "", "reason": failure_reason(c),
            "code": c.code, "thought": c.thought, "prompt_id": c.prompt_id, "wall_s": _num(c.wall_s),
            "evaluated_at": c.evaluated_at}


def running_best(evaluated: list[Any]) -> list[Any]:
    """After each evaluation, the candidate of highest fitness so far (None before the first feasible
    one): a running best, so a generation of bad candidates never lowers the curve."""
    best = None
    out: list[Any] = []
    for c in evaluated:
        if c.ok and (best is None or c.fitness > best.fitness):
            best = c
        out.append(best)
    return out


def load_view(run_dir: str | Path, *, prompts: bool = True) -> dict[str, Any]:
    """Everything the page shows of the run at ``run_dir``. ``prompts``: include every prompt and reply
    (the static report does; the dashboard fetches one at a time with :func:`load_prompt`)."""
    import sqlite3

    run_dir = Path(run_dir)
    store = _open_store(run_dir)
    try:
        config = store.get_meta("config", {}) or {}
        status = store.get_meta("status", None) or "starting"
        stop_reason = store.get_meta("stop_reason")
        cands = store.candidates(order="timeline")
        prompt_rows = store.prompts() if prompts else []
        usage = store.prompt_usage()
        prompt_times = sorted(p["created_at"] or 0.0 for p in usage)
        foresight = store.foresight()
        recalls = store.events("recall")
        tested = store.marker("tested")
        counts = store.status_counts()
    except sqlite3.DatabaseError as exc:
        raise RunViewError(f"{run_dir / 'run.sqlite'}: not a readable run store ({exc})") from exc
    finally:
        store.close()
    summary_path = run_dir / "summary.json"
    try:
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    except ValueError:
        summary = {}
    metric, direction = summary.get("primary_metric"), summary.get("direction")
    if not metric:  # a run still going has no summary yet: the evaluator says what its objective is
        metric, direction = _metric_of(str(config.get("problem") or ""))
    evaluated = [c for c in cands if c.status == "evaluated"]
    bests = running_best(evaluated)
    curve = {"evaluations": list(range(1, len(evaluated) + 1)),
             "calls": [bisect.bisect_right(prompt_times, c.evaluated_at or 0.0) for c in evaluated],
             "best": [None if b is None else _num(b.objective) for b in bests],
             "best_id": [None if b is None else b.id for b in bests]}
    spans: dict[int, list[int]] = defaultdict(list)
    scores: dict[int, list[float]] = defaultdict(list)
    for i, c in enumerate(evaluated, 1):
        spans[c.generation].append(i)
        if c.ok and _num(c.objective) is not None:
            scores[c.generation].append(float(c.objective))  # type: ignore[arg-type]
    regimes = {f["generation"]: f["regime"] for f in foresight}
    generations = [{"generation": g, "x0": min(v) - 0.5, "x1": max(v) + 0.5,
                    "regime": regimes.get(g, "baseline" if g == 0 else "?"),
                    "median": statistics.median(scores[g]) if scores[g] else None} for g, v in sorted(spans.items())]
    best = bests[-1] if bests else None
    best_view: dict[str, Any] | None = None
    if best is not None:
        best_view = {"id": best.id, "generation": best.generation, "operator": best.operator,
                     "train": _num(best.objective), "train_set": summary.get("train_set") or config.get("train_set")}
        test = (summary.get("best") or {}).get("test") if (summary.get("best") or {}).get("id") == best.id else None
        if test is None and tested:
            score = tested.get("score") or {}
            test = {"set": tested.get("set"), "skipped": tested.get("skipped"), "objective": score.get("objective"),
                    "error": score.get("error"), "secret": tested.get("secret"), "baseline": tested.get("baseline")}
        if test:
            note = test.get("skipped") or test.get("error") or ""
            if test.get("secret"):  # a draw of this run's own: the best baseline on the same draw is the comparison
                base = test.get("baseline") or {}
                note = "; ".join(x for x in (note, "secret draw for this run") if x)
                if base.get("objective") is not None:
                    note += f"; {base.get('name')} on the same draw: {base['objective']:.6g}"
            best_view["test"] = {"set": test.get("set"), "objective": _num(test.get("objective")), "note": note}
    baselines = [{"name": c.thought or c.id, "id": c.id, "objective": _num(c.objective)}
                 for c in cands if c.operator == "baseline" and c.ok]
    texts: dict[str, str] = {}
    utility: dict[str, dict[int, float]] = defaultdict(dict)
    for ev in recalls:
        for p in ev.get("principles", []):
            pid = str(p.get("id"))
            texts[pid] = str(p.get("text", ""))
            utility[pid][int(ev.get("generation", 0))] = float(p.get("utility", 0.0))
    uses = Counter(str(pid) for c in cands for pid in c.principle_ids)
    principles = [{"id": pid, "text": texts.get(pid, ""), "uses": uses[pid],
                   "utility": [[g, u] for g, u in sorted(utility[pid].items())]}
                  for pid in sorted(set(texts) | set(uses), key=lambda p: (-uses[p], p))]
    tokens: dict[int, int] = defaultdict(int)
    cost: dict[int, float] = defaultdict(float)
    for row in usage:
        u = row["usage"] or {}
        tokens[row["generation"]] += int(u.get("prompt_tokens") or 0) + int(u.get("completion_tokens") or 0)
        cost[row["generation"]] += float(u.get("cost_usd") or 0.0)
    return {
        "run": run_dir.name, "dir": str(run_dir), "problem": config.get("problem"), "model": config.get("model"),
        "status": status, "stop_reason": stop_reason, "metric": metric, "direction": direction,
        "counts": counts, "evaluations": len(evaluated), "model_calls": len(prompt_times),
        "best": best_view, "baselines": baselines, "curve": curve, "generations": generations,
        "foresight": foresight, "principles": principles,
        "spend": [{"generation": g, "tokens": tokens[g], "cost_usd": round(cost[g], 6)} for g in sorted(tokens)],
        "candidates": [_candidate(c, metric) for c in cands],
        "prompts": {p["id"]: _prompt(p) for p in prompt_rows} if prompts else None,
    }


def _prompt(p: dict[str, Any]) -> dict[str, Any]:
    return {"id": p["id"], "generation": p["generation"], "operator": p["operator"],
            "principles": [str(i) for i in p["principle_ids"]], "messages": p["messages"], "reply": p["reply"] or ""}


def load_prompt(run_dir: str | Path, prompt_id: str) -> dict[str, Any] | None:
    """One prompt (its messages and the model's reply) of the run, or None if there is none by that id."""
    store = _open_store(Path(run_dir))
    try:
        row = store.prompt(prompt_id)
    finally:
        store.close()
    return None if row is None else _prompt(row)


def _finite(x: Any) -> Any:
    """JSON has no NaN or infinity: a metric that is one (a candidate's, say) is shown as the text 'nan'/'inf'."""
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return str(x)
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def page_json(data: Any) -> str:
    """JSON safe to put inside a ``<script type="application/json">`` element: no ``<`` survives, so
    text such as ``</script>`` in a candidate's code cannot end the element."""
    return json.dumps(_finite(data), allow_nan=False, default=str).replace("<", "\\u003c").replace("&", "\\u0026")
