"""`KnowledgeBase`: the persistent store of design principles, one SQLite file.

Every public mutation runs in its own ``BEGIN IMMEDIATE`` transaction and is committed before the method
returns (WAL, ``synchronous=FULL``), so a crash loses nothing that a call reported as done, and several
processes may open the same file at once (writers queue on the busy timeout).  Principles are never
deleted: duplicates are merged and harmful ones retired.  Ranking (`recall`) is described in
`hifo.knowledge_base.ranking`, credit arithmetic in `hifo.knowledge_base.credit`, near-duplicate detection in
`hifo.knowledge_base.similarity`.
"""

from __future__ import annotations

import builtins

import json
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import _rows, _transfer, bandit, pool
from ._rows import PrincipleNotFound
from ._schema import SCHEMA_VERSION, KnowledgeBaseError, connect, default_kb_path
from .credit import DEFAULT_ALPHA, update_utility
from .principle import Principle, Provenance, check_source, check_status
from .ranking import RecallWeights, normalise_relevance, rank
from .similarity import DEFAULT_MERGE_THRESHOLD, search_terms

__all__ = ["KnowledgeBase", "KnowledgeBaseError", "PrincipleNotFound", "default_kb_path"]


def _fts_query(terms: list[str], any_term: bool) -> str:
    # Each term is a double-quoted FTS5 string, so operators and column filters in user input are inert.
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms]
    return (" OR " if any_term else " AND ").join(quoted)


class KnowledgeBase(pool.PoolMixin):
    """Principles in one SQLite file (default `default_kb_path()`).

    ``merge_threshold`` is the `similarity` at which a new principle is merged into an existing one;
    ``alpha`` the utility EMA rate; ``weights`` the recall weights; ``clock`` returns Unix seconds
    (injectable for tests).  ``create=False`` raises FileNotFoundError instead of creating a new file.
    Usable as a context manager; one instance may be shared between threads.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        create: bool = True,
        merge_threshold: float = DEFAULT_MERGE_THRESHOLD,
        alpha: float = DEFAULT_ALPHA,
        weights: RecallWeights | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._deduper = _rows.Deduper(merge_threshold)
        update_utility(0.0, 0.0, alpha)  # validates alpha
        self.path = Path(path).expanduser() if path is not None else default_kb_path()
        self.merge_threshold = merge_threshold
        self.alpha = alpha
        self.weights = weights or RecallWeights()
        self._clock = clock
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = connect(self.path, create=create)

    # ------------------------------------------------------------------ lifecycle and transactions
    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"KnowledgeBase({str(self.path)!r})"

    @contextmanager
    def _transaction(self, mode: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise KnowledgeBaseError(f"knowledge base {self.path} is closed")
            self._conn.execute(f"BEGIN {mode}")
            try:
                yield self._conn
                # Inside the try: a failing COMMIT (a deferred foreign key) leaves the transaction open.
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def _write(self):
        return self._transaction("IMMEDIATE")

    def _read(self):
        return self._transaction("DEFERRED")

    # ------------------------------------------------------------------ public mutations
    def add(
        self,
        text: str,
        tags: Iterable[str] | str | None = (),
        problem: str | None = None,
        source: str = "model",
        provenance: Provenance | Mapping[str, Any] | None = None,
    ) -> Principle:
        """Store a principle, or merge it into a near-duplicate and return that one.

        A merge keeps the new statement's provenance next to the old ones, unions the tags and bumps
        ``support`` and ``updated_at``; the existing text and statistics stay.  Adding the same text with
        the same provenance again changes nothing (safe to replay).  Restating a *retired* principle merges
        into it without reviving it: check ``status`` of the result, or call `reactivate`.
        """
        with self._write() as conn:
            pid, _ = _rows.add_principle(
                conn, self._deduper, text=text, tags=tags, problem=problem, source=source,
                provenance=provenance, now=self._clock(),
            )
            return _rows.must(conn, pid)

    def credit(
        self, principle_ids: Iterable[str], gain: float, won: bool, *, key: str | None = None,
        problem: str | None = None,
    ) -> list[Principle]:
        """Credit the principles that were in an offspring's prompt with its gain.

        For each distinct principle (merged ids are followed to the survivor): ``uses += 1``,
        ``wins += won``, ``utility = utility + alpha · (clip(gain, -1, 1) - utility)``, the credit
        statistics ``credit_n``/``credit_sum``/``credit_sq`` take ``clip(gain, -1, 1)``, and
        ``last_used_at = updated_at = now``.  ``gain`` should be centred against a fair reference
        (`hifo.knowledge_base.bandit.credit_generation` does that).  With a ``key``, a second call with the same key is a no-op
        (a resumed run may replay its step).  Unknown ids raise `PrincipleNotFound` and credit nothing.
        """
        ids = [principle_ids] if isinstance(principle_ids, str) else list(principle_ids)
        if gain is None or not math.isfinite(gain):
            raise ValueError(f"gain must be a finite number, got {gain!r}")
        with self._write() as conn:
            if key is not None and conn.execute("SELECT 1 FROM credit_log WHERE key = ?", (key,)).fetchone():
                return [_rows.must(conn, _rows.resolve_id(conn, pid)) for pid in dict.fromkeys(ids)]
            now = self._clock()
            targets = list(dict.fromkeys(_rows.resolve_id(conn, pid) for pid in ids))
            for pid in targets:
                (utility,) = conn.execute("SELECT utility FROM principles WHERE id = ?", (pid,)).fetchone()
                g = max(-1.0, min(1.0, float(gain)))
                conn.execute(
                    "UPDATE principles SET uses = uses + 1, wins = wins + ?, utility = ?, "
                    "credit_n = credit_n + 1, credit_sum = credit_sum + ?, credit_sq = credit_sq + ?, "
                    "last_used_at = ?, updated_at = ? WHERE id = ?",
                    (int(bool(won)), update_utility(utility, gain, self.alpha), g, g * g, now, now, pid),
                )
                if problem:  # where it was used (and helped): hifo.knowledge_base.pool
                    pool.record_use(conn, pid, problem, g, won)
            if key is not None:
                conn.execute(
                    "INSERT INTO credit_log (key, principle_ids, gain, won, applied_at) VALUES (?, ?, ?, ?, ?)",
                    (key, json.dumps(targets), float(gain), int(bool(won)), now),
                )
            return [_rows.must(conn, pid) for pid in targets]

    def decay(self, factor: float) -> int:
        """Shrink every active principle's utility toward 0 (neutral): ``utility *= factor``.

        Use it between runs so that old evidence fades; counts (uses, wins) and timestamps are left alone.
        Returns the number of principles touched."""
        if not 0.0 < factor <= 1.0:
            raise ValueError(f"decay factor must lie in (0, 1], got {factor!r}")
        with self._write() as conn:
            return conn.execute(
                "UPDATE principles SET utility = utility * ? WHERE status = 'active'", (factor,)
            ).rowcount

    def prune(self, min_uses: int = 5, max_utility: float = 0.0, *, dry_run: bool = False) -> list[str]:
        """Retire (never delete) active principles used at least ``min_uses`` times whose utility is
        at most ``max_utility``; returns their ids, sorted.  ``dry_run`` only reports them.  A manual
        tool (``hifo principles prune``); searches use `retire_harmful`, which needs statistical evidence."""
        if min_uses < 1:
            raise ValueError("min_uses must be >= 1: a principle never tried has not failed yet")
        with self._write() as conn:
            ids = [row[0] for row in conn.execute(
                "SELECT id FROM principles WHERE status = 'active' AND uses >= ? AND utility <= ? ORDER BY id",
                (min_uses, max_utility),
            )]
            if not dry_run:
                _rows.set_status(conn, ids, "retired", self._clock())
            return ids

    def retire_harmful(self, min_uses: int = bandit.RETIRE_MIN_USES, z: float = bandit.RETIRE_Z, *,
                       dry_run: bool = False) -> list[str]:
        """Retire (never delete) active principles whose centred credit is confidently negative:
        at least ``min_uses`` credited uses (across runs) and ``mean + z·sd/√n < 0``
        (`hifo.knowledge_base.bandit.is_harmful`).  Returns their ids, sorted."""
        if min_uses < 2:
            raise ValueError("min_uses must be >= 2: a confidence bound needs a spread")
        with self._write() as conn:
            rows = conn.execute("SELECT id, credit_n, credit_sum, credit_sq FROM principles "
                                "WHERE status = 'active' ORDER BY id").fetchall()
            ids = [pid for pid, n, s, q in rows if bandit.is_harmful(n, s, q, min_uses=min_uses, z=z)]
            if not dry_run:
                _rows.set_status(conn, ids, "retired", self._clock())
            return ids

    def retire(self, principle_ids: Iterable[str]) -> list[str]:
        """Retire the given principles by hand (unknown ids raise `PrincipleNotFound`)."""
        ids = [principle_ids] if isinstance(principle_ids, str) else list(principle_ids)
        with self._write() as conn:
            for pid in ids:
                _rows.resolve_id(conn, pid)
            _rows.set_status(conn, ids, "retired", self._clock())
        return ids

    def reactivate(self, principle_id: str) -> Principle:
        """Bring a retired (but not merged) principle back into recall."""
        with self._write() as conn:
            p = _rows.one(conn, principle_id)
            if p is None:
                raise PrincipleNotFound(f"no principle with id {principle_id!r}")
            if p.merged_into is not None:
                raise ValueError(f"{principle_id} was merged into {p.merged_into}; reactivate that one")
            _rows.set_status(conn, [principle_id], "active", self._clock())
            return _rows.must(conn, principle_id)

    # ------------------------------------------------------------------ queries
    def get(self, principle_id: str) -> Principle | None:
        """The principle with exactly this id, or None.  A merged duplicate is returned as stored;
        `resolve` follows ``merged_into``."""
        with self._read() as conn:
            return _rows.one(conn, principle_id)

    def resolve(self, principle_id: str) -> Principle:
        """The live principle for ``principle_id``, following merges; raises `PrincipleNotFound`."""
        with self._read() as conn:
            return _rows.must(conn, _rows.resolve_id(conn, principle_id))

    def find_id(self, prefix: str) -> str:
        """The id equal to ``prefix`` or, failing that, the only id starting with it."""
        with self._read() as conn:
            if conn.execute("SELECT 1 FROM principles WHERE id = ?", (prefix,)).fetchone():
                return prefix
            escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM principles WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6", (escaped + "%",)
            )]
        if not prefix or not ids:
            raise PrincipleNotFound(f"no principle with id {prefix!r}")
        if len(ids) > 1:
            raise PrincipleNotFound(f"id prefix {prefix!r} is ambiguous: {', '.join(ids[:5])}, …")
        return ids[0]

    def list(
        self,
        status: str | None = "active",
        problem: str | None = None,
        limit: int | None = None,
        *,
        source: str | None = None,
    ) -> builtins.list[Principle]:
        """Principles, best utility first (then id).  ``status=None`` lists every status; ``problem``
        filters on the problem of origin; ``source`` on who stated it."""
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        if status is not None:
            clauses.append("status = ?")
            params.append(check_status(status))
        if problem is not None:
            clauses.append("problem = ?")
            params.append(problem)
        if source is not None:
            clauses.append("source = ?")
            params.append(check_source(source))
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        where += " ORDER BY utility DESC, uses DESC, id"
        if limit is not None:
            where += " LIMIT ?"
            params.append(max(0, int(limit)))
        with self._read() as conn:
            return _rows.load(conn, where, params)

    def search(
        self, query: str, limit: int = 20, *, status: str | None = "active", any_term: bool = False
    ) -> builtins.list[Principle]:
        """Full-text search over text and tags, best bm25 first.  Every content word of ``query`` must
        match (``any_term=True``: at least one); the query is tokenised and quoted, so FTS5 syntax in it
        is treated as plain words.  Words are stemmed (Porter)."""
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        sql = (
            "SELECT p.id FROM principles_fts JOIN principles p ON p.pk = principles_fts.rowid "
            "WHERE principles_fts MATCH ?"
        )
        params: builtins.list[Any] = [_fts_query(terms, any_term)]
        if status is not None:
            sql += " AND p.status = ?"
            params.append(check_status(status))
        sql += " ORDER BY bm25(principles_fts, 1.0, 0.5), p.id LIMIT ?"
        params.append(int(limit))
        with self._read() as conn:
            ids = [r[0] for r in conn.execute(sql, params)]
            found = {p.id: p for p in _rows.load(conn, f"WHERE id IN ({','.join('?' * len(ids))})", ids)}
        return [found[pid] for pid in ids]

    def recall_scored(
        self, problem: str | None, description: str = "", k: int = 5, cross_problem: bool = True
    ) -> builtins.list[tuple[float, Principle]]:
        """`recall` with each principle's score (see `hifo.knowledge_base.ranking`)."""
        if k < 0:
            raise ValueError("k must be >= 0")
        terms = search_terms(f"{problem or ''} {description}")
        with self._read() as conn:
            candidates = _rows.load(conn, "WHERE status = 'active' AND id NOT IN (" + pool._INACTIVE + ")")
            raw: dict[str, float] = {}
            if terms:
                for pid, score in conn.execute(
                    "SELECT p.id, bm25(principles_fts, 1.0, 0.5) FROM principles_fts "
                    "JOIN principles p ON p.pk = principles_fts.rowid "
                    "WHERE principles_fts MATCH ? AND p.status = 'active'",
                    (_fts_query(terms, any_term=True),),
                ):
                    raw[pid] = -score
        if not cross_problem:
            candidates = [p for p in candidates if not p.problems or problem in p.problems]
        return rank(
            candidates, problem=problem, relevance=normalise_relevance(raw), now=self._clock(), k=k,
            weights=self.weights,
        )

    def recall(
        self, problem: str | None, description: str = "", k: int = 5, cross_problem: bool = True
    ) -> builtins.list[Principle]:
        """The ``k`` active principles most worth putting in a prompt for ``problem``.

        Ranks by quality (smoothed win rate and utility), relevance (bm25 of the problem name and
        ``description`` against the principle), recency and a same-problem bonus; with
        ``cross_problem=False`` only principles of this problem (and general ones without a problem)
        qualify.  Read-only: credit is given later with `credit`."""
        return [p for _, p in self.recall_scored(problem, description, k, cross_problem)]

    def stats(self) -> dict[str, Any]:
        """Counts and aggregates, JSON-serialisable."""
        counts = self.pool_counts()
        with self._read() as conn:
            def scalar(sql: str) -> Any:
                return conn.execute(sql).fetchone()[0]

            return {
                "path": str(self.path),
                "schema_version": SCHEMA_VERSION,
                "principles": scalar("SELECT count(*) FROM principles"),
                "active": scalar("SELECT count(*) FROM principles WHERE status = 'active'"),
                "retired": scalar("SELECT count(*) FROM principles WHERE status = 'retired'"),
                **counts,  # of the active ones: on probation, moved out of recall by the cap
                "merged": scalar("SELECT count(*) FROM principles WHERE merged_into IS NOT NULL"),
                "provenance_records": scalar("SELECT count(*) FROM provenance"),
                "uses": scalar("SELECT coalesce(sum(uses), 0) FROM principles"),
                "wins": scalar("SELECT coalesce(sum(wins), 0) FROM principles"),
                "mean_utility_active": scalar("SELECT avg(utility) FROM principles WHERE status = 'active'"),
                "by_source": dict(conn.execute(
                    "SELECT source, count(*) FROM principles WHERE status = 'active' GROUP BY source ORDER BY source"
                ).fetchall()),
                "by_problem": dict(conn.execute(
                    "SELECT coalesce(problem, '(general)'), count(*) FROM principles WHERE status = 'active' "
                    "GROUP BY problem ORDER BY problem"
                ).fetchall()),
            }

    # ------------------------------------------------------------------ export / import
    def export_json(self, path: str | Path) -> int:
        """Write every principle (all statuses, with provenance, inactive mark and per-problem use) to
        ``path`` as JSON, atomically.
        Returns how many were written.  The format is described in `hifo.knowledge_base._transfer`."""
        with self._read() as conn:
            principles = _rows.load(conn, "ORDER BY created_at, id")
            inactive, used = pool.snapshot(conn)
        _transfer.write_export(Path(path), principles, exported_at=self._clock(), inactive=inactive, used=used)
        return len(principles)

    def import_json(self, path: str | Path) -> dict[str, int]:
        """Merge a file written by `export_json` (or a plain list of texts) into this store, in one
        transaction; importing the same file twice changes nothing the second time.  Returns counts
        ``{"inserted", "merged", "updated", "unchanged"}``; see `hifo.knowledge_base._transfer` for the rules."""
        full, plain, pools = _transfer.read_import(Path(path))
        with self._write() as conn:
            return _transfer.apply_import(conn, self._deduper, full, plain, now=self._clock(), pools=pools)
