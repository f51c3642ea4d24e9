"""Row-level helpers shared by the store and the importer.  Every function takes an open connection
inside a transaction the caller owns; none commits."""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ._schema import KnowledgeBaseError
from .principle import Principle, Provenance, check_source, check_status, clean_tags
from .similarity import Fingerprint, fingerprint, similarity

MAX_TEXT_CHARS = 4000
COLUMNS = (
    "id, text, tags, problem, source, utility, uses, wins, support, "
    "created_at, updated_at, last_used_at, status, merged_into, credit_n, credit_sum, credit_sq"
)
_MAX_MERGE_HOPS = 64


class PrincipleNotFound(LookupError):
    """No principle has this id (or the prefix is ambiguous)."""


def _row_to_principle(row: tuple, provenance: list[Provenance]) -> Principle:
    (pid, text, tags, problem, source, utility, uses, wins, support,
     created_at, updated_at, last_used_at, status, merged_into, credit_n, credit_sum, credit_sq) = row
    return Principle(
        id=pid, text=text, tags=json.loads(tags), problem=problem, source=source,
        provenance=provenance, utility=utility, uses=uses, wins=wins, support=support,
        created_at=created_at, updated_at=updated_at, last_used_at=last_used_at,
        status=status, merged_into=merged_into, credit_n=credit_n, credit_sum=credit_sum, credit_sq=credit_sq,
    )


def provenance_of(conn: sqlite3.Connection, ids: list[str]) -> dict[str, list[Provenance]]:
    out: dict[str, list[Provenance]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for pid, run_id, gen, cands, problem, source, at in conn.execute(
            "SELECT principle_id, run_id, generation, candidate_ids, problem, source, recorded_at "
            f"FROM provenance WHERE principle_id IN ({marks}) ORDER BY pk",
            chunk,
        ):
            out.setdefault(pid, []).append(Provenance(run_id, gen, tuple(json.loads(cands)), problem, source, at))
    return out


def load(conn: sqlite3.Connection, where: str = "", params: Iterable[Any] = ()) -> list[Principle]:
    rows = conn.execute(f"SELECT {COLUMNS} FROM principles {where}", tuple(params)).fetchall()
    provenance = provenance_of(conn, [r[0] for r in rows])
    return [_row_to_principle(r, provenance.get(r[0], [])) for r in rows]


def one(conn: sqlite3.Connection, pid: str) -> Principle | None:
    found = load(conn, "WHERE id = ?", (pid,))
    return found[0] if found else None


def must(conn: sqlite3.Connection, pid: str) -> Principle:
    """The principle with id ``pid``; raises `PrincipleNotFound` when there is none."""
    p = one(conn, pid)
    if p is None:
        raise PrincipleNotFound(f"no principle with id {pid!r}")
    return p


def resolve_id(conn: sqlite3.Connection, pid: str) -> str:
    """Follow ``merged_into`` from ``pid`` to the principle that absorbed it."""
    current = pid
    for _ in range(_MAX_MERGE_HOPS):
        row = conn.execute("SELECT merged_into FROM principles WHERE id = ?", (current,)).fetchone()
        if row is None:
            raise PrincipleNotFound(f"no principle with id {pid!r}")
        if row[0] is None:
            return current
        current = row[0]
    raise KnowledgeBaseError(f"merge chain from {pid!r} is longer than {_MAX_MERGE_HOPS} (a cycle?)")


def insert_provenance(conn: sqlite3.Connection, pid: str, prov: Provenance) -> bool:
    """Attach a statement to ``pid``; False when this exact statement is already there."""
    key = json.dumps([prov.run_id, prov.generation, list(prov.candidate_ids), prov.problem, prov.source])
    cur = conn.execute(
        "INSERT OR IGNORE INTO provenance (principle_id, key, run_id, generation, candidate_ids, "
        "problem, source, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (pid, key, prov.run_id, prov.generation, json.dumps(list(prov.candidate_ids)),
         prov.problem, prov.source, prov.recorded_at),
    )
    return cur.rowcount == 1


def absorb(conn: sqlite3.Connection, pid: str, tags: list[str], prov: Provenance, now: float) -> bool:
    """Fold one more statement into ``pid``: keep its provenance, union tags, bump support and
    ``updated_at``.  A replayed statement (same provenance) changes nothing.  Returns whether it changed."""
    if not insert_provenance(conn, pid, prov):
        return False
    (old_tags,) = conn.execute("SELECT tags FROM principles WHERE id = ?", (pid,)).fetchone()
    conn.execute(
        "UPDATE principles SET support = support + 1, updated_at = ?, tags = ? WHERE id = ?",
        (now, json.dumps(clean_tags(json.loads(old_tags) + list(tags))), pid),
    )
    return True


def new_id(conn: sqlite3.Connection, text: str = "", problem: str | None = None) -> str:
    """A content-derived id: the same statement gets the same id in two fresh stores, so recall's
    tie-break by id (e.g. principles credited together share ``last_used_at``) orders them the same
    way in a recorded run and in its replay. A collision (different text, same digest) or an
    occupied id falls back to salted digests."""
    import hashlib

    for salt in range(1000):
        digest = hashlib.sha256(f"{problem or ''}\x00{text}\x00{salt}".encode()).hexdigest()
        pid = "p" + digest[:10]
        if conn.execute("SELECT 1 FROM principles WHERE id = ?", (pid,)).fetchone() is None:
            return pid
    while True:  # unreachable in practice
        pid = "p" + secrets.token_hex(5)
        if conn.execute("SELECT 1 FROM principles WHERE id = ?", (pid,)).fetchone() is None:
            return pid


def insert(conn: sqlite3.Connection, p: Principle) -> None:
    conn.execute(
        f"INSERT INTO principles ({COLUMNS}) VALUES ({', '.join('?' * 17)})",
        (p.id, p.text, json.dumps(p.tags), p.problem, p.source, p.utility, p.uses, p.wins, p.support,
         p.created_at, p.updated_at, p.last_used_at, p.status, p.merged_into, p.credit_n, p.credit_sum,
         p.credit_sq),
    )
    for prov in p.provenance:
        insert_provenance(conn, p.id, prov)


def set_status(conn: sqlite3.Connection, ids: list[str], status: str, now: float) -> None:
    check_status(status)
    conn.executemany(
        "UPDATE principles SET status = ?, updated_at = ? WHERE id = ?", [(status, now, pid) for pid in ids]
    )


class Deduper:
    """Finds the near-duplicate of a text among stored principles (`hifo.knowledge_base.similarity`),
    caching fingerprints by text."""

    def __init__(self, threshold: float) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("merge_threshold must lie in (0, 1]")
        self.threshold = threshold
        self._cache: dict[str, Fingerprint] = {}

    def _fingerprint(self, text: str) -> Fingerprint:
        fp = self._cache.get(text)
        if fp is None:
            if len(self._cache) > 50_000:
                self._cache.clear()
            fp = self._cache[text] = fingerprint(text)
        return fp

    def find(self, conn: sqlite3.Connection, text: str, exclude: frozenset[str] | set[str] = frozenset()) -> str | None:
        """The most similar unmerged principle at or above the threshold; ties go to active, then older."""
        target = self._fingerprint(text)
        best: tuple[float, bool, float, str] | None = None
        for pid, other, status, created in conn.execute(
            "SELECT id, text, status, created_at FROM principles WHERE merged_into IS NULL"
        ):
            if pid in exclude:
                continue
            score = similarity(target, self._fingerprint(other))
            if score >= self.threshold:
                key = (score, status == "active", -created, pid)
                if best is None or key[:3] > best[:3]:
                    best = key
        return None if best is None else best[3]


def add_principle(
    conn: sqlite3.Connection, deduper: Deduper, *, text: Any, tags: Any, problem: str | None, source: str,
    provenance: Any, now: float,
) -> tuple[str, bool]:
    """Insert a principle or merge it into its near-duplicate; returns (id, created)."""
    text = text.strip() if isinstance(text, str) else text
    if not isinstance(text, str) or not text:
        raise ValueError("a principle needs non-empty text")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"principle text is {len(text)} characters; the limit is {MAX_TEXT_CHARS}")
    check_source(source)
    tags = clean_tags(tags)
    prov = Provenance.coerce(provenance)
    prov = replace(
        prov,
        problem=prov.problem if prov.problem is not None else problem,
        source=prov.source or source,
        recorded_at=prov.recorded_at if prov.recorded_at is not None else now,
    )
    duplicate = deduper.find(conn, text)
    if duplicate is not None:
        absorb(conn, duplicate, tags, prov, now)
        return duplicate, False
    pid = new_id(conn, text, problem)
    insert(conn, Principle(
        id=pid, text=text, tags=tags, problem=problem, source=source, provenance=[prov],
        created_at=now, updated_at=now,
    ))
    return pid, True
