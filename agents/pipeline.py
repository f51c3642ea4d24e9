"""Model and sandbox busy at the same time.

``propose`` hands each candidate to the sandbox as soon as its reply is parsed and recorded
(:class:`EarlyEvaluations`), while the model writes the next reply; ``evaluate`` then only collects
the scores (and submits whatever was not started early, e.g. the pending candidates a resumed run
finds). Scores are still written to the run store by ``evaluate`` alone, in the order it always
used, so a run killed during ``propose`` loses no recorded evaluation (``propose`` discards its
half-written batch and re-proposes it whole, as before) and replay/resume give the same records.

:class:`GenerationClock` measures, per generation, from the start of ``propose`` to the end of
``evaluate``:

- ``model_s``: the time during which at least one model call was in flight (union of the call
  intervals; parallel chat calls are not summed);
- ``eval_s``: the time during which at least one evaluation was outstanding (union of the intervals
  from a candidate's submission to the sandbox to its score arriving; a job queued behind a busy
  worker counts as outstanding);
- ``wall_s``: the whole span; with the two overlapped it approaches ``max(model_s, eval_s)``,
  run one after the other it is their sum.

Distillation (after ``select``) is not part of the span.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any, Callable


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by the intervals (overlaps counted once)."""
    total, end = 0.0, -float("inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


class GenerationClock:
    """Model-call and evaluation intervals of one generation (thread-safe: model calls run in a pool,
    scores arrive on executor threads)."""

    def __init__(self, generation: int, clock: Callable[[], float] = time.perf_counter, resumed: bool = False):
        self.generation = generation
        self.clock = clock
        self.start = clock()
        self.resumed = resumed  # the generation's propose ran in an earlier process: its span is unknown
        self._lock = threading.Lock()
        self.model: list[tuple[float, float]] = []
        self.evals: list[tuple[float, float]] = []

    def model_call(self, fn: Callable[[], Any]) -> Any:
        t0 = self.clock()
        try:
            return fn()
        finally:
            t1 = self.clock()
            with self._lock:
                self.model.append((t0, t1))

    def track(self, fut: Future) -> Future:
        """Count ``fut`` (a submitted evaluation) as outstanding from now until it completes."""
        t0 = self.clock()

        def _done(_: Future) -> None:
            t1 = self.clock()
            with self._lock:
                self.evals.append((t0, t1))

        fut.add_done_callback(_done)
        return fut

    def summary(self) -> dict[str, Any]:
        end = self.clock()
        with self._lock:
            model, evals = list(self.model), list(self.evals)
        m, e = union_length(model), union_length(evals)
        return {"model_s": round(m, 4), "eval_s": round(e, 4), "wall_s": round(end - self.start, 4),
                "overlap_s": round(m + e - union_length(model + evals), 4), "model_calls": len(model),
                "evaluations": len(evals), "resumed": self.resumed}


class EarlyEvaluations:
    """Evaluations started from ``propose``: at most ``room`` of them (what is left of
    ``max_evaluations``; None: no cap), in the order candidates became pending, which is the order
    ``evaluate`` takes them in, so the same candidates are evaluated as without early starts."""

    def __init__(self, scorer: Any, clock: GenerationClock, room: int | None):
        self.scorer = scorer
        self.clock = clock
        self.room = room
        self.futures: dict[str, Future] = {}

    def start(self, cid: str, code: str) -> bool:
        if cid in self.futures or (self.room is not None and len(self.futures) >= self.room):
            return False
        self.futures[cid] = self.clock.track(self.scorer.submit(code, cid))
        return True

    def take(self, cid: str) -> Future | None:
        return self.futures.pop(cid, None)

    def cancel_all(self, reason: str) -> None:
        """Stop every early evaluation nobody will collect (the batch is discarded)."""
        for fut in self.futures.values():
            self.scorer.cancel(fut, reason)
        self.futures.clear()
