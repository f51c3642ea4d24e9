"""The discovery benchmark's rows: how a finished run is counted (distinct behaviours, repeats of working
programs) and how the checkpoint of finished rows is read back (``--resume``: which rows are comparable, the
backfill of counts added after a row was written). ``benchmarks/discovery.py`` runs the arms and writes the rows."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

from hifo.agents.rundb import RunStore


def distinct_behaviours(candidates: list[Any], metric: str) -> int:
    """How many different behaviours the valid candidates show: distinct vectors of their per-instance primary
    metric (rounded to 9 digits) over the train set; two programs that score alike on every instance count once."""
    return len({tuple(round(float(m.get(metric, float("nan"))), 9) for m in (c.per_instance or []))
                for c in candidates if c.ok and c.per_instance})


def repeat_counts(candidates: list[Any], model_made: list[Any]) -> dict[str, Any]:
    """Valid counts that see through novelty before evaluation: a reply whose code (normalised) or behaviour on
    the probe equals an earlier candidate's is recorded as a duplicate and never evaluated, so ``valid`` misses it
    even when it is a working program. ``repeats_of_valid`` counts the duplicates whose earlier candidate (the one
    named by the probe, else the first candidate with the same code hash) is valid, a baseline included: programs
    that work but bring nothing new. ``valid_or_repeat`` = ``valid`` + ``repeats_of_valid`` is issue 27's "valid"
    (a working program, new or not); ``distinct_share`` = ``distinct_valid`` / ``valid_or_repeat`` its "distinct
    in behaviour" share."""
    by_id = {c.id: c for c in candidates}
    first: dict[str, Any] = {}
    for c in candidates:  # in the order they were recorded
        if c.code_hash and c.status != "duplicate" and c.code_hash not in first:
            first[c.code_hash] = c
    duplicates = [c for c in model_made if c.status == "duplicate"]
    repeats = 0
    for c in duplicates:
        named = re.search(r"behaves like (\S+) on the probe", c.error or "")
        earlier = by_id.get(named.group(1)) if named else first.get(c.code_hash or "")
        repeats += earlier is not None and bool(earlier.ok)
    valid = sum(1 for c in model_made if c.ok)
    return {"duplicates": len(duplicates), "repeats_of_valid": repeats, "valid_or_repeat": valid + repeats,
            "valid_or_repeat_rate": (valid + repeats) / len(model_made) if model_made else None}


def settings(row: dict[str, Any]) -> tuple[bool, bool]:
    """A row's novelty settings: the behaviour probe and re-draw feedback (rows written before one was recorded
    ran without it)."""
    return bool(row.get("probe_novelty", False)), bool(row.get("redraw_feedback", False))


def load_done(path: Path | None, calls: int, probe: bool = False,
              feedback: bool = False) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Rows already finished by an earlier invocation (``--resume``): one JSON object per line of the
    checkpoint file, keyed by (problem, arm, seed); rows of another ``--calls`` budget, or run with the behaviour
    probe or re-draw feedback set otherwise (:func:`settings`), are ignored."""
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    if path is None or not path.exists():
        return done
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:  # a line cut by a crash while it was written
            print(f"checkpoint {path} line {n} unreadable ({exc}); that arm runs again")
            continue
        if row.get("calls_budget") == calls and settings(row) == (probe, feedback):
            done[(row["problem"], row["arm"], row["seed"])] = row
    return done


def backfill_repeats(row: dict[str, Any], run_dir: Path, log: Callable[[str], None]) -> int:
    """Add :func:`repeat_counts`' fields to a reused row from its run folder (kept with ``--work``); 0 when the
    folder is gone (the row then keeps only ``valid``)."""
    store_path = run_dir / "run.sqlite"
    if not store_path.exists():
        log(f"  {run_dir}: no run store, so no repeat counts for this row")
        return 0
    store = RunStore(store_path)
    try:
        model_made = store.candidates(not_operator=("baseline", "hyper"))
        row.update(repeat_counts(store.candidates(), model_made))
        if row.get("distinct_valid") is None:  # rows written before distinct_valid existed
            from hifo.evaluators.registry import get_evaluator

            metric = get_evaluator(row["problem"]).primary_metric
            row["distinct_valid"] = distinct_behaviours([c for c in model_made if c.ok], metric)
    finally:
        store.close()
    row["distinct_share"] = row["distinct_valid"] / row["valid_or_repeat"] if row.get("valid_or_repeat") else None
    return 1


def load_all(path: Path, reused: dict[tuple[str, str, int], dict[str, Any]]) -> list[dict[str, Any]]:
    """Every row of the checkpoint, in its order, a reused row replaced by its (updated) object."""
    out = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        key = (row.get("problem"), row.get("arm"), row.get("seed"))
        same = reused.get(key)  # type: ignore[arg-type]
        out.append(same if same is not None and same.get("calls_budget") == row.get("calls_budget")
                   and settings(same) == settings(row) else row)
    return out
