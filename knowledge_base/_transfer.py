"""JSON export and import of principles (``hifo principles export/import``).

Export format::

    {"format": "hifo-principles", "version": 1, "schema_version": 1, "exported_at": <unix s>,
     "principles": [<Principle.to_dict()>, ...]}

Every principle is written, retired and merged ones included, with all of its provenance records and
exact timestamps, so exporting and importing into an empty store reproduces it.

Import accepts that format or a plain JSON list whose items are strings or ``{"text", "tags"?,
"problem"?, "provenance"?}`` objects without an ``id`` (hand-written lists).  Rules, applied in one
transaction after the whole file has been validated (a malformed file changes nothing):

* a record whose id already exists: its provenance records are added (duplicates ignored) and, when the
  record's ``updated_at`` is newer, its fields replace the stored ones — except that a local merge
  (``merged_into``) is kept;
* a new active record that is a near-duplicate of a principle already in the store (and not in the
  file) is stored as a retired alias with ``merged_into`` set, and its provenance and tags are folded
  into the existing principle — whose statistics are not changed;
* any other new record is inserted as it is (same id, source, statistics, timestamps, status);
* a plain record goes through `KnowledgeBase.add` with source ``"import"``.

A second import of the same file finds every id present and nothing newer: nothing changes.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _rows
from ._schema import SCHEMA_VERSION
from .principle import Principle, Provenance, clean_tags

if TYPE_CHECKING:
    import sqlite3

    from ._rows import Deduper

EXPORT_FORMAT = "hifo-principles"
EXPORT_VERSION = 1


def write_export(path: Path, principles: list[Principle], *, exported_at: float) -> None:
    document = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "exported_at": exported_at,
        "principles": [p.to_dict() for p in principles],
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


def read_import(path: Path) -> tuple[list[Principle], list[dict[str, Any]]]:
    """Parse and validate a file; returns (full records, plain records).  Raises ValueError."""
    try:
        document = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    if isinstance(document, list):
        items = document
    elif isinstance(document, dict) and document.get("format") == EXPORT_FORMAT:
        if document.get("version", 0) > EXPORT_VERSION:
            raise ValueError(f"{path} is export version {document['version']}; this hifo reads {EXPORT_VERSION}")
        listed = document.get("principles")
        if not isinstance(listed, list):
            raise ValueError(f"{path}: 'principles' must be a list")
        items = listed
    else:
        raise ValueError(f"{path} is neither a hifo principles export nor a JSON list of principles")
    full: list[Principle] = []
    plain: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if isinstance(item, dict) and "id" in item:
            try:
                full.append(Principle.from_dict(item))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"item {index}: {exc}") from exc
        else:
            plain.append(_plain(item, index))
    ids = [p.id for p in full]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path} lists the same principle id twice")
    return full, plain


def apply_import(
    conn: sqlite3.Connection, deduper: Deduper, full: list[Principle], plain: list[dict[str, Any]], *, now: float
) -> dict[str, int]:
    """Apply validated records inside the caller's transaction; returns the counts by outcome."""
    report = {"inserted": 0, "merged": 0, "updated": 0, "unchanged": 0}
    file_ids = {p.id for p in full}
    existing_ids = {row[0] for row in conn.execute("SELECT id FROM principles")}
    for p in full:
        if p.merged_into is not None and p.merged_into not in file_ids | existing_ids:
            raise ValueError(f"principle {p.id} is merged into {p.merged_into}, which is in neither file nor store")

    for record in full:
        if record.id in existing_ids:
            report[_update(conn, _rows.must(conn, record.id), record, now)] += 1
            continue
        duplicate = None
        if record.status == "active" and record.merged_into is None:
            duplicate = deduper.find(conn, record.text, exclude=file_ids)
        if duplicate is None:
            _rows.insert(conn, record)
            report["inserted"] += 1
            continue
        _rows.insert(conn, replace(record, status="retired", merged_into=duplicate))
        for prov in record.provenance:
            _rows.absorb(conn, duplicate, record.tags, prov, now)
        report["merged"] += 1

    for item in plain:
        _, created = _rows.add_principle(conn, deduper, source="import", now=now, **item)
        report["inserted" if created else "merged"] += 1
    return report


def _update(conn: sqlite3.Connection, current: Principle, record: Principle, now: float) -> str:
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
        changed = True
    return "updated" if changed else "unchanged"
