"""The run's own SQLite store: candidates (code, lineage, operator, regime, prompt, usage,
score), prompts, foresight decisions and events. The LangGraph state only carries ids and
small numbers; everything else lives here, committed as soon as it is known, so a killed
run loses at most the evaluations in flight.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

from hifo.sandbox._scrub import scrub

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS candidates (
    id TEXT PRIMARY KEY, generation INTEGER NOT NULL, operator TEXT NOT NULL, regime TEXT,
    parents TEXT NOT NULL DEFAULT '[]', code TEXT NOT NULL, code_hash TEXT, thought TEXT,
    principle_ids TEXT NOT NULL DEFAULT '[]', prompt_id TEXT, usage TEXT,
    status TEXT NOT NULL,            -- pending | evaluated | invalid | duplicate
    feasible INTEGER, fitness REAL, objective REAL, metrics TEXT, per_instance TEXT,
    error TEXT, wall_s REAL, created_at REAL NOT NULL, evaluated_at REAL,
    node TEXT, isolation TEXT         -- where it ran (host / Ray node) and the sandbox layers it got there
);
CREATE INDEX IF NOT EXISTS cand_gen ON candidates(generation);
CREATE INDEX IF NOT EXISTS cand_hash ON candidates(code_hash);
CREATE TABLE IF NOT EXISTS prompts (
    id TEXT PRIMARY KEY, generation INTEGER, operator TEXT, messages TEXT NOT NULL,
    principle_ids TEXT NOT NULL DEFAULT '[]', reply TEXT, usage TEXT, created_at REAL
);
CREATE TABLE IF NOT EXISTS foresight (
    generation INTEGER PRIMARY KEY, regime TEXT, directive TEXT, reason TEXT, weights TEXT, numbers TEXT
);
CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL, kind TEXT, data TEXT);
CREATE TABLE IF NOT EXISTS markers (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS timings (generation INTEGER PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS behaviours (  -- agents/probe.py: behaviour fingerprint -> the first candidate with it
    fingerprint TEXT PRIMARY KEY, cid TEXT NOT NULL, generation INTEGER NOT NULL
);
"""


@dataclass
class CandidateRow:
    id: str
    generation: int
    operator: str
    regime: str | None
    parents: list[str]
    code: str
    code_hash: str | None
    thought: str
    principle_ids: list[str]
    status: str
    feasible: bool | None = None
    fitness: float | None = None
    objective: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    per_instance: list[dict[str, float]] = field(default_factory=list)
    error: str | None = None
    wall_s: float | None = None
    prompt_id: str | None = None
    usage: dict[str, Any] | None = None
    node: str | None = None
    isolation: dict[str, Any] = field(default_factory=dict)
    evaluated_at: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "evaluated" and bool(self.feasible) and self.fitness is not None


def _j(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def _loads(text: str | None, default: Any) -> Any:
    """JSON from a column a report reads; a damaged value reads as the default instead of failing the report."""
    try:
        return json.loads(text) if text else default
    except (TypeError, ValueError):
        return default


# the orders a caller may ask for, by name (never pasted from the caller)
Order = Literal["created", "id", "fitness", "timeline"]
_ORDERS: dict[str, str] = {"created": "created_at, id", "id": "id", "fitness": "fitness DESC, id",
                           "timeline": "COALESCE(evaluated_at, created_at), id"}
Names = str | Iterable[str] | None


def _names(column: str, value: Names, negate: bool = False) -> tuple[str, list[Any]]:
    vals = [value] if isinstance(value, str) else list(value or ())
    marks = ",".join("?" * len(vals))
    return f"{column} {'NOT IN' if negate else 'IN'} ({marks})", vals


class RunStoreError(RuntimeError):
    """A run.sqlite that cannot be read (damaged, not a database); the message names the file."""


class RunStore:
    def __init__(self, path: str | Path, readonly: bool = False):
        """``readonly``: open without writing anything (``hifo runs``/``show``/``report``), so a run on a
        read-only mount or an archive can be read: SQLite ``mode=ro``, and ``immutable=1`` where even the
        WAL index cannot be made. A file that is not a readable run store raises :class:`RunStoreError`
        naming its path."""
        self.path = Path(path)
        self.readonly = readonly
        try:
            if readonly:
                self.db = self._connect_ro()
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(SCHEMA)
            self.db.row_factory = sqlite3.Row
            if not readonly:
                self._migrate()
        except sqlite3.DatabaseError as exc:
            raise RunStoreError(f"{self.path}: not a readable run store ({exc})") from exc

    def _connect_ro(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise sqlite3.OperationalError("no such file")
        uri = self.path.resolve().as_uri()
        try:
            db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30, check_same_thread=False)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:  # a WAL store in a read-only folder: its -shm cannot be made
            db = sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db

    def _migrate(self) -> None:
        """Add the columns later versions introduced to a store made by an earlier one."""
        have = {r[1] for r in self.db.execute("PRAGMA table_info(candidates)")}
        for column in ("node", "isolation"):
            if column not in have:
                self.db.execute(f"ALTER TABLE candidates ADD COLUMN {column} TEXT")

    def close(self) -> None:
        self.db.close()

    # ---- meta / markers ------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, _j(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def mark(self, key: str, value: Any = True) -> None:
        self.db.execute("INSERT OR REPLACE INTO markers VALUES (?, ?)", (key, _j(value)))

    def unmark(self, key: str) -> None:
        self.db.execute("DELETE FROM markers WHERE key=?", (key,))

    def marker(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM markers WHERE key=?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    # ---- candidates --------------------------------------------------------------------
    def add_candidate(self, *, generation: int, operator: str, code: str, code_hash: str | None,
                      parents: Iterable[str] = (), regime: str | None = None, thought: str = "",
                      principle_ids: Iterable[str] = (), prompt_id: str | None = None,
                      usage: dict | None = None, status: str = "pending", error: str | None = None,
                      cid: str | None = None) -> str:
        cid = cid or uuid.uuid4().hex[:12]
        self.db.execute(
            "INSERT INTO candidates (id, generation, operator, regime, parents, code, code_hash, thought,"
            " principle_ids, prompt_id, usage, status, error, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (cid, generation, operator, regime, _j(list(parents)), code, code_hash, thought,
             _j(list(principle_ids)), prompt_id, _j(usage or {}), status, scrub(error, limit=4000), time.time()))
        return cid

    def record_score(self, cid: str, score: dict[str, Any]) -> None:
        self.db.execute(
            "UPDATE candidates SET status='evaluated', feasible=?, fitness=?, objective=?, metrics=?,"
            " per_instance=?, error=?, wall_s=?, evaluated_at=?, node=?, isolation=? WHERE id=?",
            (int(bool(score["feasible"])), score.get("fitness"), score.get("objective"),
             _j(score.get("metrics") or {}), _j(score.get("per_instance") or []), scrub(score.get("error"), limit=4000),
             score.get("wall_s"), time.time(), score.get("node"), _j(score.get("isolation") or {}), cid))

    def _row(self, r: sqlite3.Row) -> CandidateRow:
        return CandidateRow(
            id=r["id"], generation=r["generation"], operator=r["operator"], regime=r["regime"],
            parents=json.loads(r["parents"]), code=r["code"], code_hash=r["code_hash"],
            thought=r["thought"] or "", principle_ids=json.loads(r["principle_ids"]), status=r["status"],
            feasible=None if r["feasible"] is None else bool(r["feasible"]), fitness=r["fitness"],
            objective=r["objective"], metrics=json.loads(r["metrics"] or "{}"),
            per_instance=json.loads(r["per_instance"] or "[]"), error=r["error"], wall_s=r["wall_s"],
            prompt_id=r["prompt_id"], usage=json.loads(r["usage"] or "{}"), node=r["node"],
            isolation=json.loads(r["isolation"] or "{}"), evaluated_at=r["evaluated_at"])

    def placements(self) -> list[dict[str, Any]]:
        """Where the evaluated candidates ran: one row per (node, isolation level, layers) with a count."""
        rows = self.db.execute("SELECT node, isolation, COUNT(*) AS n FROM candidates WHERE status='evaluated'"
                               " GROUP BY node, isolation ORDER BY n DESC").fetchall()
        out = []
        for r in rows:
            iso = json.loads(r["isolation"] or "{}")
            layers = iso.get("layers") or {}
            out.append({"node": r["node"], "level": iso.get("level"),
                        "layers": sorted(k for k, v in layers.items() if v),
                        "warm_worker": iso.get("warm_worker"), "candidates": r["n"]})
        return out

    def candidate(self, cid: str) -> CandidateRow:
        r = self.db.execute("SELECT * FROM candidates WHERE id=?", (cid,)).fetchone()
        if r is None:
            raise KeyError(f"no candidate {cid!r}")
        return self._row(r)

    def candidates(self, *, generation: int | None = None,
                   up_to_generation: int | None = None, operator: Names = None, not_operator: Names = None,
                   status: Names = None, feasible: bool | None = None, order: Order = "created",
                   limit: int | None = None) -> list[CandidateRow]:
        """The candidates matching every filter given (a name filter takes one name or several),
        in a named order; no SQL leaves this class."""
        conds: list[str] = []
        vals: list[Any] = []
        for column, value, negate in (("operator", operator, False), ("operator", not_operator, True),
                                      ("status", status, False)):
            if value is not None:
                cond, v = _names(column, value, negate)
                conds.append(cond)
                vals += v
        if generation is not None:
            conds.append("generation=?")
            vals.append(generation)
        if up_to_generation is not None:
            conds.append("generation<=?")
            vals.append(up_to_generation)
        if feasible is not None:
            conds.append("feasible=?")
            vals.append(int(feasible))
        if order not in _ORDERS:
            raise ValueError(f"unknown order {order!r}; one of {sorted(_ORDERS)}")
        by = _ORDERS[order]
        q = f"SELECT * FROM candidates WHERE {' AND '.join(conds) or '1=1'} ORDER BY {by}"
        if limit is not None:
            q += " LIMIT ?"
            vals.append(int(limit))
        return [self._row(r) for r in self.db.execute(q, vals).fetchall()]

    def pending(self) -> list[CandidateRow]:
        return self.candidates(status="pending")

    def best_feasible(self, n: int = 1) -> list[CandidateRow]:
        """The ``n`` evaluated feasible candidates of highest fitness (ties: by id)."""
        return self.candidates(status="evaluated", feasible=True, order="fitness", limit=n)

    def status_counts(self) -> dict[str, int]:
        """How many candidates have each status (pending, evaluated, invalid, duplicate)."""
        return {s: n for s, n in self.db.execute("SELECT status, COUNT(*) FROM candidates GROUP BY status")}

    def expire(self, cids: Iterable[str], reason: str) -> int:
        """Mark candidates that will not be evaluated (budget spent, run over) invalid, with the reason."""
        cur = self.db.executemany("UPDATE candidates SET status='invalid', error=? WHERE id=?",
                                  [(scrub(reason, limit=4000), cid) for cid in cids])
        return cur.rowcount

    def has_hash(self, code_hash: str) -> bool:
        return self.db.execute("SELECT 1 FROM candidates WHERE code_hash=? AND status IN"
                               " ('pending','evaluated') LIMIT 1", (code_hash,)).fetchone() is not None

    def behaviour_of(self, fingerprint: str) -> str | None:
        """The candidate that first showed this behaviour fingerprint (agents/probe.py), if any."""
        r = self.db.execute("SELECT cid FROM behaviours WHERE fingerprint=?", (fingerprint,)).fetchone()
        return None if r is None else str(r[0])

    def add_behaviour(self, fingerprint: str, cid: str, generation: int) -> None:
        self.db.execute("INSERT OR IGNORE INTO behaviours (fingerprint, cid, generation) VALUES (?,?,?)",
                        (fingerprint, cid, generation))

    def discard_proposals(self, generation: int) -> int:
        """Delete a generation's proposed batch (every candidate but the baselines), so that a batch
        half-written by a killed process is proposed again whole; returns how many rows went."""
        self.db.execute("DELETE FROM behaviours WHERE generation=? AND cid NOT IN"
                        " (SELECT id FROM candidates WHERE operator='baseline')", (generation,))
        return self.db.execute("DELETE FROM candidates WHERE generation=? AND operator!='baseline'",
                               (generation,)).rowcount

    def change_stamp(self) -> list[Any]:
        """A few numbers that change whenever the run writes something a report shows (the live dashboard
        polls this instead of reading the whole store every time)."""
        row = self.db.execute(
            "SELECT (SELECT COUNT(*) FROM candidates), (SELECT COUNT(*) FROM candidates WHERE status!='pending'),"
            " (SELECT MAX(COALESCE(evaluated_at, created_at)) FROM candidates), (SELECT COUNT(*) FROM prompts),"
            " (SELECT COUNT(*) FROM foresight), (SELECT COUNT(*) FROM events),"
            " (SELECT value FROM meta WHERE key='status'), (SELECT COUNT(*) FROM markers)").fetchone()
        return list(row)

    def count_evaluated(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM candidates WHERE status='evaluated'").fetchone()[0]

    # ---- prompts, foresight, events ------------------------------------------------------
    def add_prompt(self, *, generation: int, operator: str, messages: list[dict], principle_ids: list[str],
                   reply: str | None, usage: dict | None) -> str:
        pid = uuid.uuid4().hex[:12]
        self.db.execute("INSERT INTO prompts VALUES (?,?,?,?,?,?,?,?)",
                        (pid, generation, operator, _j(messages), _j(principle_ids), reply, _j(usage or {}),
                         time.time()))
        return pid

    def prompt_usage(self) -> list[dict[str, Any]]:
        """Each prompt's generation, operator, principle ids and usage (no messages), oldest first."""
        rows = self.db.execute("SELECT generation, operator, principle_ids, usage, created_at FROM prompts"
                               " ORDER BY created_at")
        return [{"generation": r["generation"], "operator": r["operator"], "created_at": r["created_at"],
                 "principle_ids": _loads(r["principle_ids"], []), "usage": _loads(r["usage"], {})}
                for r in rows.fetchall()]

    def prompt(self, prompt_id: str) -> dict[str, Any] | None:
        """One prompt by id (messages, principle ids, the reply), or None."""
        r = self.db.execute("SELECT * FROM prompts WHERE id=?", (prompt_id,)).fetchone()
        return None if r is None else {**dict(r), "messages": _loads(r["messages"], []),
                                       "principle_ids": _loads(r["principle_ids"], []),
                                       "usage": _loads(r["usage"], {})}

    def prompts(self, generation: int | None = None) -> list[dict[str, Any]]:
        q, a = ("SELECT * FROM prompts WHERE generation=? ORDER BY created_at", (generation,)) \
            if generation is not None else ("SELECT * FROM prompts ORDER BY created_at", ())
        return [{**dict(r), "messages": json.loads(r["messages"]), "principle_ids": json.loads(r["principle_ids"]),
                 "usage": json.loads(r["usage"] or "{}")} for r in self.db.execute(q, a).fetchall()]

    def add_foresight(self, d: dict[str, Any]) -> None:
        self.db.execute("INSERT OR REPLACE INTO foresight VALUES (?,?,?,?,?,?)",
                        (d["generation"], d["regime"], d["directive"], d["reason"], _j(d["weights"]),
                         _j(d["numbers"])))

    def foresight(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM foresight ORDER BY generation").fetchall()
        return [{**dict(r), "weights": json.loads(r["weights"]), "numbers": json.loads(r["numbers"])} for r in rows]

    def event(self, kind: str, **data: Any) -> None:
        self.db.execute("INSERT INTO events (ts, kind, data) VALUES (?,?,?)", (time.time(), kind, _j(data)))

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        q = "SELECT * FROM events" + (" WHERE kind=?" if kind else "") + " ORDER BY id"
        return [{"ts": r["ts"], "kind": r["kind"], **json.loads(r["data"])}
                for r in self.db.execute(q, (kind,) if kind else ()).fetchall()]

    # ---- per-generation times (model, evaluation, wall; see hifo.agents.pipeline) ------------
    def record_timing(self, generation: int, data: dict[str, Any]) -> None:
        """One generation's times; a generation run again (resume) replaces its row."""
        self.db.execute("INSERT OR REPLACE INTO timings VALUES (?, ?)", (generation, _j(data)))

    def timings(self) -> list[dict[str, Any]]:
        """Every generation's times, oldest first: ``{"generation": g, "model_s": ..., "eval_s": ..., ...}``."""
        rows = self.db.execute("SELECT generation, data FROM timings ORDER BY generation").fetchall()
        return [{"generation": r["generation"], **_loads(r["data"], {})} for r in rows]
