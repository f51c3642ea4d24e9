"""A persistent response cache in SQLite (WAL, safe to share between runs and threads).

Policy: only **seeded** requests are cached. A seeded request names one particular draw from the model
(for the embedded model exactly: sample i uses seed+i), so answering it from the cache returns what the
model would have said and a rerun with the same seed costs nothing. A request without a seed asks for a
*fresh* sample; caching it would hand back the same text every time and quietly remove the diversity the
caller asked for, so those always go to the model. (Reproducing an unseeded run is what a replay
cassette is for.) The key is the replay key of the request plus the model name.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from hifo.agents.llm._common import Wrapper, canonical_request, request_key
from hifo.agents.llm.base import Completion, LLMClient, Message

_SCHEMA = """CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, request TEXT NOT NULL, completions TEXT NOT NULL,
    created_at REAL NOT NULL)"""


class CachedClient(Wrapper):
    """Answers seeded requests from ``path`` when it can; hits come back with ``cached=True``, zero cost
    and the token counts of the original call. ``hits``/``misses``/``skipped`` count what happened."""

    def __init__(self, inner: LLMClient, path: str | os.PathLike):
        super().__init__(inner)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._db.commit()
        self.hits = self.misses = self.skipped = 0

    def _key(self, messages: list[Message], n: int, temperature: float, seed: int | None, max_tokens: int,
             stop: list[str] | None) -> tuple[str, dict] | None:
        if seed is None:
            return None
        req = canonical_request(messages, n, temperature, seed, max_tokens, stop)
        return request_key(req, model=self.model), req

    def _lookup(self, key: str) -> list[Completion] | None:
        with self._lock:
            row = self._db.execute("SELECT completions FROM responses WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        return [Completion.from_dict(d) for d in json.loads(row[0])]

    def is_cached(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                  max_tokens: int = 512, stop: list[str] | None = None) -> bool:
        k = self._key(messages, n, temperature, seed, max_tokens, stop)
        return k is not None and self._lookup(k[0]) is not None

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        k = self._key(messages, n, temperature, seed, max_tokens, stop)
        if k is not None:
            got = self._lookup(k[0])
            if got is not None:
                with self._lock:
                    self.hits += 1
                for c in got:
                    c.cached, c.cost_usd, c.cost_known, c.latency_s = True, 0.0, True, 0.0
                return got
        out = self.inner.complete(messages, n=n, temperature=temperature, seed=seed, max_tokens=max_tokens,
                                  stop=stop)
        with self._lock:
            if k is None:
                self.skipped += 1
                return out
            self.misses += 1
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?)",
                             (k[0], self.model, json.dumps(k[1], ensure_ascii=False),
                              json.dumps([c.to_dict() for c in out], ensure_ascii=False), time.time()))
            self._db.commit()
        return out

    def stats(self) -> dict[str, int]:
        with self._lock:
            size = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return {"hits": self.hits, "misses": self.misses, "skipped": self.skipped, "entries": size}

    def close(self) -> None:
        with self._lock:
            self._db.close()
        super().close()
