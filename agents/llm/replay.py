"""Cassettes: record every model call to JSONL and play it back, so a run can be reproduced exactly and
tests need no network; plus :class:`ScriptedClient`, a fake model for tests.

A cassette is one JSON object per line: a ``header`` line (model, style) each time a recorder opens
it, then one ``call`` line per request with the canonical request, its key, and either the completions
the caller received or the error it got. A recorded search also writes one ``kb_snapshot`` line: the
knowledge base as the run read it, which its replay uses instead of the live store
(:mod:`hifo.agents.run_kb`), and one ``probe`` line per behaviour-probe verdict (a candidate's normalised code
hash and its behaviour fingerprint, or null where the probe gave no fingerprint: :mod:`hifo.agents.probe`), which
its replay takes instead of running the probe again, whose time limit makes its verdict depend on load.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from hifo.agents.llm._common import Wrapper, canonical_request, flatten_messages, request_key
from hifo.agents.llm.base import Completion, LLMClient, LLMError, Message


def recorded_temperature(cassette_path: str | os.PathLike) -> float | None:
    """The sampling temperature a cassette was recorded with: the run's own, written with its knowledge-base
    snapshot; for a cassette without one (recorded before), the most common ``temperature`` of its ``call``
    lines — a guess that fails when novelty re-draws (at higher temperatures) outnumber the first calls, as
    they can with a model that repeats itself. None when the file is missing or holds no call."""
    counts: dict[float, int] = defaultdict(int)
    try:
        with Path(cassette_path).open(encoding="utf-8") as fh:
            for raw in fh:
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(obj, dict) and obj.get("type") == "kb_snapshot" \
                        and isinstance(obj.get("temperature"), (int, float)):
                    return float(obj["temperature"])
                if isinstance(obj, dict) and obj.get("type") == "call":
                    t = (obj.get("request") or {}).get("temperature")
                    if isinstance(t, (int, float)):
                        counts[float(t)] += 1
    except OSError:
        return None
    return max(counts, key=lambda t: counts[t]) if counts else None


class ReplayMismatch(RuntimeError):
    """A strict replay was asked for a request the cassette does not hold (the run diverged).

    Deliberately not an :class:`LLMError`: the agent treats those as a failed model call and carries on,
    which would hide the divergence."""


class RecordingClient(Wrapper):
    """Passes calls to ``inner`` and appends each request with its outcome to a JSONL cassette,
    flushed and fsynced per call so a killed run loses nothing it already received."""

    def __init__(self, inner: LLMClient, cassette_path: str | os.PathLike):
        super().__init__(inner)
        self.path = Path(cassette_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fh = self.path.open("a", encoding="utf-8")
        self._write({"type": "header", "model": self.model, "style": self.style, "ts": time.time()})

    def _write(self, obj: dict[str, Any]) -> None:
        with self._lock:
            self._fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def write_kb_snapshot(self, snapshot: dict[str, Any]) -> None:
        """Store the knowledge base the recorded run starts from (``clock`` and ``export``)."""
        self._write({"type": "kb_snapshot", "ts": time.time(), **snapshot})

    def write_probe(self, code_hash: str, fingerprint: str | None) -> None:
        """Store the behaviour probe's verdict on a candidate (``fingerprint`` None: the probe gave none)."""
        self._write({"type": "probe", "code": code_hash, "fingerprint": fingerprint, "ts": time.time()})

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        req = canonical_request(messages, n, temperature, seed, max_tokens, stop)
        line = {"type": "call", "key": request_key(req), "request": req, "ts": time.time()}
        try:
            out = self.inner.complete(messages, n=n, temperature=temperature, seed=seed,
                                      max_tokens=max_tokens, stop=stop)
        except LLMError as exc:  # a failed call is part of the run too: replay raises it again
            self._write({**line, "error": str(exc)})
            raise
        self._write({**line, "completions": [c.to_dict() for c in out]})
        return out

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()
        super().close()


class ReplayClient:
    """Plays a cassette back. Requests are matched by key; identical requests get their recorded
    replies in recorded order (an occurrence counter per key).

    strict: a request that was never recorded, or asked more often than recorded, raises
    :class:`ReplayMismatch`. Not strict: a repeat beyond the recording gets the last recorded reply, and
    an unknown request goes to ``fallback`` when one is given (else ReplayMismatch).
    """

    def __init__(self, cassette_path: str | os.PathLike, strict: bool = True, fallback: LLMClient | None = None):
        self.path = Path(cassette_path)
        if not self.path.is_file():
            raise FileNotFoundError(f"replay cassette not found: {self.path}")
        self.strict, self.fallback = strict, fallback
        self.model, self.style = "replay", "chat"
        self.kb_snapshot: dict[str, Any] | None = None  # the first recording's, like the header
        self._entries: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._used: dict[str, int] = defaultdict(int)
        self._probes: dict[str, list[str | None]] = defaultdict(list)
        self._probes_used: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        header_seen = False
        with self.path.open(encoding="utf-8") as fh:
            for lineno, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except json.JSONDecodeError:
                    if raw.endswith("\n"):
                        raise ValueError(f"{self.path}:{lineno}: not valid JSON") from None
                    break  # a torn last line from a killed recorder: everything before it is good
                if obj.get("type") == "header" and not header_seen:
                    self.model, self.style, header_seen = obj.get("model", "replay"), obj.get("style", "chat"), True
                elif obj.get("type") == "kb_snapshot" and self.kb_snapshot is None:
                    self.kb_snapshot = obj
                elif obj.get("type") == "call":
                    self._entries[obj["key"]].append(obj)
                elif obj.get("type") == "probe" and isinstance(obj.get("code"), str):
                    fp = obj.get("fingerprint")
                    self._probes[obj["code"]].append(fp if isinstance(fp, str) else None)

    @property
    def recorded_calls(self) -> int:
        return sum(len(v) for v in self._entries.values())

    def recorded_probe(self, code_hash: str) -> tuple[bool, str | None]:
        """The recorded behaviour-probe verdict on the candidate with this normalised code hash, in recorded order
        (the last one again when asked more often): ``(True, fingerprint or None)``, or ``(False, None)`` when the
        cassette holds none for it (recorded before verdicts were, or with the probe off)."""
        with self._lock:
            got = self._probes.get(code_hash)
            if not got:
                return False, None
            used = self._probes_used[code_hash]
            self._probes_used[code_hash] = used + 1
            return True, got[min(used, len(got) - 1)]

    def _take(self, key: str, peek: bool = False) -> dict[str, Any] | None:
        with self._lock:
            got, used = self._entries.get(key), self._used[key]
            if not got:
                return None
            if used >= len(got):
                return None if self.strict else got[-1]
            if not peek:
                self._used[key] = used + 1
            return got[used]

    def is_cached(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                  max_tokens: int = 512, stop: list[str] | None = None) -> bool:
        """True when the recorded reply was itself a cache hit, so a budget replays exactly as it ran."""
        entry = self._take(request_key(canonical_request(messages, n, temperature, seed, max_tokens, stop)), True)
        return bool(entry and entry.get("completions") and all(c.get("cached") for c in entry["completions"]))

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        req = canonical_request(messages, n, temperature, seed, max_tokens, stop)
        key = request_key(req)
        entry = self._take(key)
        if entry is None:
            if self.fallback is not None and not self.strict and key not in self._entries:
                return self.fallback.complete(messages, n=n, temperature=temperature, seed=seed,
                                              max_tokens=max_tokens, stop=stop)
            times = len(self._entries.get(key, []))
            first = flatten_messages(messages)[:120].replace("\n", " ")
            raise ReplayMismatch(
                f"replay of {self.path}: request not in the cassette (recorded {times} time(s), "
                f"asked again; n={n}, temperature={temperature}, seed={seed}, max_tokens={max_tokens}; "
                f"prompt starts {first!r}). The run diverged from the recording.")
        if "error" in entry:
            raise LLMError(entry["error"])
        return [Completion.from_dict(c) for c in entry["completions"]]


class ScriptedClient:
    """A fake model for tests: ``replies`` is a list of texts (cycled) or a function of the prompt text
    (``flatten_messages``) and the sample index. A list item that is an exception is raised instead.
    Token counts are whitespace splits; ``calls`` keeps every request for inspection."""

    def __init__(self, replies: list[str | BaseException] | Callable[[str, int], str | BaseException], *, model: str = "scripted",
                 style: str = "chat", cost_per_completion: float = 0.0):
        self.model, self.style, self.cost = model, style, cost_per_completion
        if callable(replies):
            self._fn = replies
        else:
            if not replies:
                raise ValueError("ScriptedClient needs at least one reply")
            cycle = itertools.cycle(list(replies))
            self._fn = lambda prompt, i: next(cycle)
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def complete(self, messages: list[Message], n: int = 1, temperature: float = 1.0, seed: int | None = None,
                 max_tokens: int = 512, stop: list[str] | None = None) -> list[Completion]:
        prompt = flatten_messages(messages)
        with self._lock:
            self.calls.append(canonical_request(messages, n, temperature, seed, max_tokens, stop))
            texts = [self._fn(prompt, i) for i in range(n)]
        out = []
        for text in texts:
            if isinstance(text, BaseException):
                raise text
            out.append(Completion(text=text, prompt_tokens=len(prompt.split()), completion_tokens=len(text.split()),
                                  cost_usd=self.cost, model=self.model, finish_reason="stop"))
        return out
