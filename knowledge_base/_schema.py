"""SQLite schema, connection settings and version handling for the knowledge base file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 4
BUSY_TIMEOUT_S = 30.0


class KnowledgeBaseError(RuntimeError):
    """The knowledge base file cannot be used (missing FTS5, newer schema, not a database, …)."""


_DDL_V1 = """
CREATE TABLE principles (
    pk           INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    text         TEXT    NOT NULL,
    tags         TEXT    NOT NULL DEFAULT '[]',
    problem      TEXT,
    source       TEXT    NOT NULL CHECK (source IN ('model', 'contrast', 'user', 'import')),
    utility      REAL    NOT NULL DEFAULT 0.0,
    uses         INTEGER NOT NULL DEFAULT 0,
    wins         INTEGER NOT NULL DEFAULT 0,
    support      INTEGER NOT NULL DEFAULT 1,
    created_at   REAL    NOT NULL,
    updated_at   REAL    NOT NULL,
    last_used_at REAL,
    status       TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'retired')),
    merged_into  TEXT    REFERENCES principles(id) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX principles_status_problem ON principles(status, problem);

CREATE TABLE provenance (
    pk            INTEGER PRIMARY KEY,
    principle_id  TEXT NOT NULL REFERENCES principles(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    key           TEXT NOT NULL,
    run_id        TEXT,
    generation    INTEGER,
    candidate_ids TEXT NOT NULL DEFAULT '[]',
    problem       TEXT,
    source        TEXT,
    recorded_at   REAL,
    UNIQUE (principle_id, key)
);
CREATE INDEX provenance_run ON provenance(run_id, generation);

-- Idempotency log for KnowledgeBase.credit(..., key=...): a resumed run replaying a step is not
-- credited twice.
CREATE TABLE credit_log (
    key           TEXT PRIMARY KEY,
    principle_ids TEXT NOT NULL,
    gain          REAL NOT NULL,
    won           INTEGER NOT NULL,
    applied_at    REAL NOT NULL
);

CREATE VIRTUAL TABLE principles_fts USING fts5(
    text, tags, content='principles', content_rowid='pk', tokenize='porter unicode61'
);
CREATE TRIGGER principles_fts_insert AFTER INSERT ON principles BEGIN
    INSERT INTO principles_fts(rowid, text, tags) VALUES (new.pk, new.text, new.tags);
END;
CREATE TRIGGER principles_fts_delete AFTER DELETE ON principles BEGIN
    INSERT INTO principles_fts(principles_fts, rowid, text, tags) VALUES ('delete', old.pk, old.text, old.tags);
END;
CREATE TRIGGER principles_fts_update AFTER UPDATE OF text, tags ON principles BEGIN
    INSERT INTO principles_fts(principles_fts, rowid, text, tags) VALUES ('delete', old.pk, old.text, old.tags);
    INSERT INTO principles_fts(rowid, text, tags) VALUES (new.pk, new.text, new.tags);
END;
"""

# v2: sufficient statistics of the centred credit each principle received (count, sum, sum of squares),
# so that sampling (`hifo.knowledge_base.bandit`) and retirement can use a mean and its uncertainty.
_DDL_V2 = """
ALTER TABLE principles ADD COLUMN credit_n INTEGER NOT NULL DEFAULT 0;
ALTER TABLE principles ADD COLUMN credit_sum REAL NOT NULL DEFAULT 0.0;
ALTER TABLE principles ADD COLUMN credit_sq REAL NOT NULL DEFAULT 0.0;
"""

# v3: the bounded active pool (`hifo.knowledge_base.pool`): principles moved out of recall by the pool
# cap (never deleted, brought back when there is room), and per-problem use of each principle, so that
# "learnt on" (provenance) and "helped later on" can be told apart.
_DDL_V3 = """
CREATE TABLE pool_inactive (
    principle_id TEXT PRIMARY KEY REFERENCES principles(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    inactive_at  REAL NOT NULL,
    lower_bound  REAL
);
CREATE TABLE principle_use (
    principle_id TEXT NOT NULL REFERENCES principles(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    problem      TEXT NOT NULL,
    uses         INTEGER NOT NULL DEFAULT 0,
    wins         INTEGER NOT NULL DEFAULT 0,
    credit_sum   REAL NOT NULL DEFAULT 0.0,
    PRIMARY KEY (principle_id, problem)
);
"""



def _allow_seed_source(conn: sqlite3.Connection) -> None:
    """v4: the source 'seed' (the generic principles an empty store starts with; they were stated as 'user').

    Only the CHECK list of ``principles.source`` widens, which changes no stored row, so the table is not
    rebuilt (a rebuild would cascade deletes through the provenance and use tables): the table's SQL is
    edited in place as SQLite documents for such changes (https://www.sqlite.org/lang_altertable.html,
    "simpler procedure"), the schema cookie bumped and the file's integrity checked, all inside the
    migration's transaction. Seed principles already stored keep the source 'user'."""
    old = "CHECK (source IN ('model', 'contrast', 'user', 'import'))"
    new = "CHECK (source IN ('model', 'contrast', 'user', 'import', 'seed'))"
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'principles'").fetchone()
    if new in sql:
        return
    if old not in sql:
        raise KnowledgeBaseError(f"unexpected principles table, cannot add the source 'seed': {sql}")
    cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    try:
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'principles'",
                     (sql.replace(old, new),))
        conn.execute(f"PRAGMA schema_version = {cookie + 1}")
    finally:
        conn.execute("PRAGMA writable_schema = OFF")
    problems = conn.execute("PRAGMA integrity_check").fetchall()
    if problems != [("ok",)]:
        raise KnowledgeBaseError(f"integrity check after adding the source 'seed' failed: {problems[:3]}")


# version reached -> script (or function) that upgrades from the version before it
_MIGRATIONS: dict[int, Any] = {1: _DDL_V1, 2: _DDL_V2, 3: _DDL_V3, 4: _allow_seed_source}


def default_kb_path() -> Path:
    """``$HIFO_KB`` if set, else ``$XDG_DATA_HOME/hifo/knowledge.sqlite`` (XDG's default is
    ``~/.local/share``)."""
    explicit = os.environ.get("HIFO_KB")
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "hifo" / "knowledge.sqlite"


def require_fts5() -> None:
    """Raise `KnowledgeBaseError` when this Python's SQLite was compiled without FTS5."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
    except sqlite3.OperationalError as exc:
        raise KnowledgeBaseError(
            f"SQLite {sqlite3.sqlite_version} in this Python has no FTS5 full-text search ({exc}); "
            "the knowledge base needs it. Use a Python whose sqlite3 is built with FTS5 "
            "(python.org, Debian/Ubuntu and conda builds are)."
        ) from exc
    finally:
        probe.close()


def connect(path: Path, *, create: bool) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode (the store issues its own BEGIN/COMMIT) with WAL, a busy timeout,
    full fsync and foreign keys; create and migrate the schema when needed."""
    require_fts5()
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.exists():
        raise FileNotFoundError(f"knowledge base {path} does not exist")
    conn = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal" and str(path) != ":memory:":
            raise KnowledgeBaseError(f"could not put {path} in WAL mode (journal_mode is {mode})")
        # FULL: every committed mutation survives a power cut, not just a process crash.  Writes are rare.
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        _migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise KnowledgeBaseError(f"{path} is not a usable knowledge base: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise KnowledgeBaseError(
            f"{path} has knowledge-base schema v{version}, newer than this hifo understands "
            f"(v{SCHEMA_VERSION}); upgrade hifo"
        )
    # IMMEDIATE: two processes opening a fresh file at once must not both create the tables.
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            foreign = conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
            ).fetchone()[0]
            if foreign:
                raise KnowledgeBaseError(f"{path} is an SQLite file but not a hifo knowledge base")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            step = _MIGRATIONS[target]
            if callable(step):
                step(conn)
                continue
            for statement in _split(step):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _split(script: str) -> list[str]:
    """Split a DDL script into statements, keeping trigger bodies (which contain ';') whole."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete DDL statement: {buffer.strip()[:80]}")
    return statements
