"""The bounded active pool: probation for new principles, a cap, and where principles helped.

* **Probation.** A principle with fewer than ``PROBATION_USES`` credited uses is on probation: recall
  adds ``RecallWeights.probation · (1 - credit_n / PROBATION_USES)`` to its score
  (`hifo.knowledge_base.ranking`), so new principles reach the recalled pool and get tried, and
  the per-prompt Thompson draw (`hifo.knowledge_base.bandit`) explores them further (wide posterior).
* **Cap.** `enforce` keeps at most ``cap`` *graduated* principles (out of probation) in recall.  When
  there are more, those with the lowest lower confidence bound on their mean centred credit,
  ``mean - z·sd/√n`` (`hifo.knowledge_base.bandit.lower_bound`), move to *inactive* (table
  ``pool_inactive``): they keep their status ``active``, their statistics and their record, they are
  only left out of `KnowledgeBase.recall`.  Principles on probation are not counted and never moved
  (they have not been judged yet; the probation bonus gets them tried, after which they count), so
  recall sees at most ``cap`` judged principles plus the untried ones of recent runs.  When there is
  room again, inactive principles come back, highest bound first.  Nothing is deleted;
  retirement (confidently harmful) is separate (`KnowledgeBase.retire_harmful`).
* **Where it helped.** `KnowledgeBase.credit(..., problem=...)` also counts, per problem, the uses,
  wins and summed centred credit of each principle (table ``principle_use``); the problems it was
  *learnt on* are its provenance (`Principle.problems`).  `KnowledgeBase.helped_on` returns both.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from . import bandit

PROBATION_USES = 4
"""Credited uses after which a principle leaves probation (loses its recall bonus and may be moved out
of the pool by the cap)."""
POOL_CAP = 40
"""Default number of graduated principles kept in recall (the search recalls 3 · recall_k of them)."""

_INACTIVE = "SELECT principle_id FROM pool_inactive"


def record_use(conn: sqlite3.Connection, pid: str, problem: str, gain: float, won: bool) -> None:
    conn.execute(
        "INSERT INTO principle_use (principle_id, problem, uses, wins, credit_sum) VALUES (?, ?, 1, ?, ?) "
        "ON CONFLICT (principle_id, problem) DO UPDATE SET uses = uses + 1, wins = wins + excluded.wins, "
        "credit_sum = credit_sum + excluded.credit_sum",
        (pid, problem, int(bool(won)), float(gain)),
    )


def enforce(conn: sqlite3.Connection, cap: int, now: float, probation: int = PROBATION_USES,
            z: float = bandit.RETIRE_Z) -> dict[str, list[str]]:
    if cap < 1:
        raise ValueError("the pool cap must be >= 1")
    rows = conn.execute("SELECT id, credit_n, credit_sum, credit_sq, id IN (" + _INACTIVE + ") "
                        "FROM principles WHERE status = 'active' ORDER BY id").fetchall()
    lcb = {pid: bandit.lower_bound(n, s, q, z) for pid, n, s, q, _ in rows}
    in_pool = [r for r in rows if not r[4] and r[1] >= probation]  # graduated and in recall
    out: dict[str, list[str]] = {"demoted": [], "promoted": []}
    if len(in_pool) > cap:
        graduated = sorted(in_pool, key=lambda r: (lcb[r[0]], r[0]))
        out["demoted"] = [r[0] for r in graduated[: len(in_pool) - cap]]
        conn.executemany("INSERT OR REPLACE INTO pool_inactive VALUES (?, ?, ?)",
                         [(pid, now, lcb[pid]) for pid in out["demoted"]])
    elif len(in_pool) < cap:
        back = sorted((r for r in rows if r[4]), key=lambda r: (-lcb[r[0]], r[0]))[: cap - len(in_pool)]
        out["promoted"] = [r[0] for r in back]
        conn.executemany("DELETE FROM pool_inactive WHERE principle_id = ?", [(pid,) for pid in out["promoted"]])
    return out


def pool_state(status: str, credit_n: int, inactive: bool, probation: int = PROBATION_USES) -> str:
    """One word for where a principle stands: ``retired``, ``inactive`` (moved out of recall by the cap),
    ``probation`` (fewer than ``probation`` credited uses) or ``active``."""
    if status != "active":
        return status
    if inactive:
        return "inactive"
    return "probation" if credit_n < probation else "active"


def snapshot(conn: sqlite3.Connection) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, dict[str, Any]]]]:
    """The pool's tables for export: ``({id: {"since", "lower_bound"}}, {id: {problem: {"uses", "wins",
    "credit_sum"}}})``."""
    inactive = {pid: {"since": at, "lower_bound": lb}
                for pid, at, lb in conn.execute("SELECT principle_id, inactive_at, lower_bound FROM pool_inactive")}
    used: dict[str, dict[str, dict[str, Any]]] = {}
    for pid, prob, u, w, c in conn.execute(
            "SELECT principle_id, problem, uses, wins, credit_sum FROM principle_use ORDER BY principle_id, problem"):
        used.setdefault(pid, {})[prob] = {"uses": u, "wins": w, "credit_sum": c}
    return inactive, used


def restore(conn: sqlite3.Connection, pid: str, inactive: dict[str, Any] | None,
            used_on: dict[str, dict[str, Any]]) -> None:
    """Replace ``pid``'s pool rows with an export's: its inactive mark (None: in the pool) and its
    per-problem use."""
    conn.execute("DELETE FROM pool_inactive WHERE principle_id = ?", (pid,))
    if inactive is not None:
        conn.execute("INSERT INTO pool_inactive VALUES (?, ?, ?)", (pid, inactive["since"], inactive["lower_bound"]))
    conn.execute("DELETE FROM principle_use WHERE principle_id = ?", (pid,))
    conn.executemany(
        "INSERT INTO principle_use (principle_id, problem, uses, wins, credit_sum) VALUES (?, ?, ?, ?, ?)",
        [(pid, prob, d["uses"], d["wins"], d["credit_sum"]) for prob, d in used_on.items()])


class PoolMixin:
    """`KnowledgeBase` methods for the bounded pool (see the module docstring)."""

    _write: Any
    _read: Any
    _clock: Any

    def enforce_pool(self, cap: int = POOL_CAP, *, probation: int = PROBATION_USES) -> dict[str, list[str]]:
        """Keep at most ``cap`` graduated principles in recall; returns ``{"demoted": ids, "promoted": ids}``."""
        with self._write() as conn:
            return enforce(conn, cap, self._clock(), probation)

    def inactive(self) -> list[str]:
        """Ids of the active principles the cap moved out of recall, sorted."""
        with self._read() as conn:
            return sorted(r[0] for r in conn.execute(_INACTIVE))

    def helped_on(self, principle_id: str) -> dict[str, Any]:
        """``{"learnt_on": [problems], "used_on": {problem: {"uses", "wins", "credit_sum"}},
        "helped_on": [problems with positive summed credit]}``."""
        from . import _rows

        with self._read() as conn:
            p = _rows.must(conn, _rows.resolve_id(conn, principle_id))
            used = {prob: {"uses": u, "wins": w, "credit_sum": c} for prob, u, w, c in conn.execute(
                "SELECT problem, uses, wins, credit_sum FROM principle_use WHERE principle_id = ? ORDER BY problem",
                (p.id,))}
        return {"learnt_on": p.problems, "used_on": used,
                "helped_on": [prob for prob, d in used.items() if d["credit_sum"] > 0]}

    def pool_states(self) -> dict[str, str]:
        """`pool_state` of every principle, by id."""
        with self._read() as conn:
            return {pid: pool_state(status, n, bool(off)) for pid, status, n, off in conn.execute(
                "SELECT id, status, credit_n, id IN (" + _INACTIVE + ") FROM principles ORDER BY id")}

    def pool_counts(self) -> dict[str, int]:
        """How many active principles are on probation, and how many the cap moved out of recall."""
        states = list(self.pool_states().values())
        return {"probation": states.count("probation"), "inactive": states.count("inactive")}

    def used_on_all(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Per-problem use of every principle that was credited on a named problem (`helped_on`'s
        ``used_on``, for all of them at once)."""
        with self._read() as conn:
            return snapshot(conn)[1]
