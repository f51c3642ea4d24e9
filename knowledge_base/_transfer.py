"""JSON export and import of principles (``hifo principles export/import``).

Export format (version 2)::

    {"format": "hifo-principles", "version": 2, "schema_version": 4, "exported_at": <unix s>,
     "principles": [<Principle.to_dict()> + {"inactive": null | {"since": <unix s>, "lower_bound": x},
                                             "used_on": {problem: {"uses", "wins", "credit_sum"}},
                                             "pool_state": "active" | "probation" | "inactive" | "retired"},
                    ...]}

Every principle is written, retired and merged ones included, with all of its provenance records
(the problems it was *learnt on*), exact timestamps and statistics, its mark in the bounded pool
(``inactive``: moved out of recall by the cap, `hifo.knowledge_base.pool`) and its per-problem use
(``used_on``: where it was used and helped, `KnowledgeBase.helped_on`), so exporting and importing into
an empty store reproduces it.  Probation is not stored: it follows from ``credit_n``, which is exported.
``pool_state`` is written for people reading the file and ignored on import.  Not exported: the
idempotency log of `KnowledgeBase.credit` (keys of one run's credit steps).

Version 1 files (no ``inactive`` / ``used_on``) still import: their principles enter the pool and have
no per-problem use (an existing principle keeps its own).  A file whose version is newer than
``EXPORT_VERSION`` is refused with an error that says so.

Import accepts that format or a plain JSON list whose items are strings or ``{"text", "tags"?,
"problem"?, "provenance"?}`` objects without an ``id`` (hand-written lists).  Rules, applied in one
transaction after the whole file has been validated (a malformed file changes nothing):

* a record whose id already exists: its provenance records are added (duplicates ignored) and, when the
  record's ``updated_at`` is newer, its fields, inactive mark and per-problem use replace the stored
  ones — except that a local merge (``merged_into``) is kept (and such an alias has no inactive mark);
* a new active record that is a near-duplicate of a principle already in the store (and not in the
  file) is stored as a retired alias with ``merged_into`` set (keeping its own statistics and
  per-problem use, but no inactive mark), and its provenance and tags are folded into the existing
  principle — whose statistics are not changed;
* any other new record is inserted as it is (same id, source, statistics, timestamps, status,
  inactive mark, per-problem use);
* a plain record goes through `KnowledgeBase.add` with source ``"import"``.

A second import of the same file finds every id present and nothing newer: nothing changes.
"""

from __future__ import annotations

import json
import os
import tempfile
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _rows, pool
from ._schema import SCHEMA_VERSION
from .principle import Principle, Provenance, clean_tags

if TYPE_CHECKING:
    import sqlite3

    from ._rows import Deduper

EXPORT_FORMAT = "hifo-principles"
EXPORT_VERSION = 2
"""1: principles with provenance and statistics; 2: adds each principle's inactive mark and per-problem use."""
POOL_FIELDS = ("inactive", "used_on", "pool_state")


@dataclass(frozen=True)
class PoolRecord:
    """A principle's pool rows in an export: its inactive mark (None: in the pool) and per-problem use."""

    inactive: dict[str, Any] | None
    used_on: dict[str, dict[str, Any]]


def _record(p: Principle, inactive: dict[str, dict[str, Any]], used: dict[str, dict[str, dict[str, Any]]]
            ) -> dict[str, Any]:
    mark = inactive.get(p.id)
    return {**p.to_dict(), "inactive": mark, "used_on": used.get(p.id, {}),
            "pool_state": pool.pool_state(p.status, p.credit_n, mark is not None)}


def write_export(path: Path, principles: list[Principle], *, exported_at: float,
                 inactive: dict[str, dict[str, Any]], used: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Write ``principles`` with their pool rows (`hifo.knowledge_base.pool.snapshot`) atomically."""
    document = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "exported_at": exported_at,
        "principles": [_record(p, inactive, used) for p in principles],
    }
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename: a crash never leaves a half-written export.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(document, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _plain(item: Any, index: int) -> dict[str, Any]:
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
        raise ValueError(f"item {index}: expected a string or an object with a non-empty 'text'")
    unknown = set(item) - {"text", "tags", "problem", "provenance"}
    if unknown:
        raise ValueError(f"item {index}: unknown field(s) {', '.join(sorted(unknown))}")
    return {
        "text": item["text"],
        "tags": clean_tags(item.get("tags")),
        "problem": item.get("problem"),
        "provenance": Provenance.coerce(item.get("provenance")),
    }


def _number(value: Any, what: str, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{what} must be a number, got {value!r}")
    return float(value)


def _pool_record(item: dict[str, Any]) -> PoolRecord:
    """Validate (and remove from ``item``) the pool fields of an exported record."""
    pid = item.get("id")
    mark = item.pop("inactive", None)
    used_on = item.pop("used_on", None) or {}
    item.pop("pool_state", None)
    if mark is not None:
        if not isinstance(mark, dict) or set(mark) != {"since", "lower_bound"}:
            raise ValueError(f"principle {pid}: 'inactive' must be null or {{\"since\", \"lower_bound\"}}")
        mark = {"since": _number(mark["since"], f"principle {pid}: inactive.since"),
                "lower_bound": _number(mark["lower_bound"], f"principle {pid}: inactive.lower_bound", allow_none=True)}
    if not isinstance(used_on, dict):
        raise ValueError(f"principle {pid}: 'used_on' must be an object keyed by problem")
    clean: dict[str, dict[str, Any]] = {}
    for problem, row in used_on.items():
        if not isinstance(row, dict) or set(row) != {"uses", "wins", "credit_sum"}:
            raise ValueError(f"principle {pid}: used_on[{problem!r}] needs exactly uses, wins, credit_sum")
        uses, wins = row["uses"], row["wins"]
        if not (isinstance(uses, int) and isinstance(wins, int) and 0 <= wins <= uses):
            raise ValueError(f"principle {pid}: used_on[{problem!r}] needs integers 0 <= wins <= uses")
        total = _number(row["credit_sum"], f"principle {pid}: used_on[{problem!r}].credit_sum")
        clean[str(problem)] = {"uses": uses, "wins": wins, "credit_sum": total}
    return PoolRecord(mark, clean)


def _version(path: Path, document: dict[str, Any]) -> int:
    version = document.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"{path}: export 'version' must be a positive integer, got {version!r}")
    if version > EXPORT_VERSION:
        raise ValueError(f"{path} is export version {version}, written by a newer hifo; this hifo reads "
                         f"versions 1 to {EXPORT_VERSION}: upgrade hifo to import it")
    return version


def read_import(path: Path) -> tuple[list[Principle], list[dict[str, Any]], dict[str, PoolRecord]]:
    """Parse and validate a file; returns (full records, plain records, pool rows by id of the full
    records that carry them).  Raises ValueError."""
    try:
        document = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    if isinstance(document, list):
        items, pool_fields = document, True
    elif isinstance(document, dict) and document.get("format") == EXPORT_FORMAT:
        pool_fields = _version(path, document) >= 2
        listed = document.get("principles")
        if not isinstance(listed, list):
            raise ValueError(f"{path}: 'principles' must be a list")
        items = listed
    else:
        raise ValueError(f"{path} is neither a hifo principles export nor a JSON list of principles")
    full: list[Principle] = []
    plain: list[dict[str, Any]] = []
    pools: dict[str, PoolRecord] = {}
    for index, item in enumerate(items):
        if isinstance(item, dict) and "id" in item:
            try:
                if pool_fields and any(f in item for f in POOL_FIELDS):
                    item = dict(item)
                    pools[str(item["id"])] = _pool_record(item)
                full.append(Principle.from_dict(item))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"item {index}: {exc}") from exc
        else:
            plain.append(_plain(item, index))
    ids = [p.id for p in full]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path} lists the same principle id twice")
    return full, plain, pools


def apply_import(
    conn: sqlite3.Connection, deduper: Deduper, full: list[Principle], plain: list[dict[str, Any]], *, now: float,
    pools: dict[str, PoolRecord] | None = None,
) -> dict[str, int]:
    """Apply validated records inside the caller's transaction; returns the counts by outcome."""
    report = {"inserted": 0, "merged": 0, "updated": 0, "unchanged": 0}
    pools = pools or {}
    file_ids = {p.id for p in full}
    existing_ids = {row[0] for row in conn.execute("SELECT id FROM principles")}
    for p in full:
        if p.merged_into is not None and p.merged_into not in file_ids | existing_ids:
            raise ValueError(f"principle {p.id} is merged into {p.merged_into}, which is in neither file nor store")

    for record in full:
        rows = pools.get(record.id)
        if record.id in existing_ids:
            report[_update(conn, _rows.must(conn, record.id), record, now, rows)] += 1
            continue
        duplicate = None
        if record.status == "active" and record.merged_into is None:
            duplicate = deduper.find(conn, record.text, exclude=file_ids)
        if duplicate is None:
            _rows.insert(conn, record)
            if rows is not None:
                pool.restore(conn, record.id, rows.inactive, rows.used_on)
            report["inserted"] += 1
            continue
        _rows.insert(conn, replace(record, status="retired", merged_into=duplicate))
        if rows is not None:
            pool.restore(conn, record.id, None, rows.used_on)
        for prov in record.provenance:
            _rows.absorb(conn, duplicate, record.tags, prov, now)
        report["merged"] += 1

    for item in plain:
        _, created = _rows.add_principle(conn, deduper, source="import", now=now, **item)
        report["inserted" if created else "merged"] += 1
    return report


def _update(conn: sqlite3.Connection, current: Principle, record: Principle, now: float,
            rows: PoolRecord | None) -> str:
    changed = False
    target = _rows.resolve_id(conn, current.id)
    for prov in record.provenance:
        if _rows.insert_provenance(conn, current.id, prov):
            changed = True
            if target != current.id:  # a local alias: the survivor learns of the new statement too
                _rows.absorb(conn, target, record.tags, prov, now)
    if record.updated_at > current.updated_at:
        keep_local_merge = current.merged_into is not None and record.merged_into is None
        status = current.status if keep_local_merge else record.status
        merged_into = current.merged_into if keep_local_merge else record.merged_into
        conn.execute(
            "UPDATE principles SET text = ?, tags = ?, problem = ?, source = ?, utility = ?, uses = ?, "
            "wins = ?, support = ?, created_at = ?, updated_at = ?, last_used_at = ?, status = ?, "
            "merged_into = ?, credit_n = ?, credit_sum = ?, credit_sq = ? WHERE id = ?",
            (record.text, json.dumps(record.tags), record.problem, record.source, record.utility, record.uses,
             record.wins, record.support, record.created_at, record.updated_at, record.last_used_at,
             status, merged_into, record.credit_n, record.credit_sum, record.credit_sq, current.id),
        )
        if rows is not None:  # a version-1 record says nothing about the pool: the local rows stay
            pool.restore(conn, current.id, None if merged_into is not None else rows.inactive, rows.used_on)
        changed = True
    return "updated" if changed else "unchanged"
