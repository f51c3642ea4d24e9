"""The ``evaluate`` node of the search graph and the run's wall-clock budget (a mixin of
:class:`hifo.agents.search.SearchNodes`, kept apart to keep each file short): how much of ``--max-wall`` is left,
the reserve kept for the final test-set evaluation, and scoring the pending candidates within what is left."""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, wait
from typing import TYPE_CHECKING, Any

from hifo.agents.pipeline import EarlyEvaluations, GenerationClock
from hifo.agents.rundb import CandidateRow
from hifo.agents.runtime import RunState

if TYPE_CHECKING:
    from hifo.agents.config import RunConfig
    from hifo.agents.runtime import Runtime
    from hifo.evaluators.base import Evaluator


class EvaluateNode:
    """Mixed into :class:`hifo.agents.search.SearchNodes` (first, so its methods are the ones the other mixins'
    declarations resolve to)."""

    rt: Runtime
    cfg: RunConfig
    ev: Evaluator
    _reserve: float | None
    _clock: GenerationClock | None
    _early: EarlyEvaluations | None

    def wall_used(self) -> float:
        return float(self.rt.store.get_meta("wall_before", 0.0)) + (time.time() - self.rt.started)

    def wall_left(self) -> float | None:
        """Seconds left of ``max_wall_s`` for the search (None without one), less :meth:`test_reserve`; every
        node that waits bounds its wait by it."""
        return None if self.cfg.max_wall_s is None else self.cfg.max_wall_s - self.wall_used() - self.test_reserve()

    def wall_left_total(self) -> float | None:
        """Seconds left of ``max_wall_s`` with the test reserve: what the final test-set evaluation may use."""
        return None if self.cfg.max_wall_s is None else self.cfg.max_wall_s - self.wall_used()

    def test_reserve(self) -> float:
        """Seconds of the wall budget kept for scoring the best candidate on the held-out set at the end, so
        a run with ``--max-wall`` still reports its test score: 3x the median train evaluation of the
        baselines plus 2 s (a test set is usually a few times the train set) plus the median model call (a call
        in flight at the search's deadline can still end after it: with 2 s calls the test set once got 0.7 s
        of a 3 s reserve), the evaluation part twice for a secret test set (the best baseline is scored on the
        same draw), at most a quarter of the budget; 0 without a wall budget, before the baselines are
        scored, or when no test set will be evaluated. Fixed once a model call has been timed."""
        if self.cfg.max_wall_s is None:
            return 0.0
        test_set = self.cfg.test_set or self.ev.default_test_set
        if not test_set or test_set == self.rt.scorer.instance_set:
            return 0.0
        if self._reserve is None:
            walls = sorted(c.wall_s for c in self.rt.store.candidates(operator="baseline", status="evaluated")
                           if c.ok and c.wall_s)
            if not walls:
                return 0.0
            calls = sorted(float((p["usage"] or {}).get("latency_s") or 0.0) for p in self.rt.store.prompts()
                           if "error" not in (p["usage"] or {}))
            call_s = calls[len(calls) // 2] if calls else 0.0
            # a secret test set is scored twice: the best candidate, then the best baseline on the same draw
            evals = 2 if self.ev.seeds_secret(test_set) else 1
            reserve = min(evals * 3.0 * walls[len(walls) // 2] + 2.0 + call_s, 0.25 * self.cfg.max_wall_s)
            if not calls:
                return reserve  # no call timed yet: recomputed until one is
            self._reserve = reserve
        return self._reserve

    def _wall_reason(self) -> str:
        reserve = self.test_reserve()
        return f"wall-time budget ({self.cfg.max_wall_s:g} s) spent" + (
            f" (the last {reserve:.0f} s kept for the test set)" if reserve else "")

    # ---- the evaluate node ---------------------------------------------------------------------
    def evaluate(self, state: RunState) -> RunState:
        gen = state["generation"]
        clock, early = self._clock, self._early
        if clock is None or early is None or clock.generation != gen:  # propose ran before a resume
            clock = GenerationClock(gen, resumed=True)
            early = EarlyEvaluations(self.rt.scorer, clock, 0)
        self._clock = self._early = None
        out = self._evaluate_pending(state, clock, early)
        if self.cfg.repair and not out.get("stop_reason") and not state.get("stop_reason"):
            # run-time error feedback: failing candidates go back to the model once, fixes are scored now
            from hifo.agents.runtime_repair import feed_back_runtime_errors

            n_new, stop = feed_back_runtime_errors(self, state)
            if n_new:
                out = self._evaluate_pending(state, clock, early)
            if stop and not out.get("stop_reason"):
                out["stop_reason"] = stop
        timing = clock.summary()
        self.rt.store.record_timing(gen, timing)
        self.rt.emit("timing", generation=gen, **timing)
        return out

    def _evaluate_pending(self, state: RunState, clock: GenerationClock, early: EarlyEvaluations) -> RunState:
        store = self.rt.store
        pending = store.pending()
        cap = self.cfg.max_evaluations
        if cap is not None:
            room = max(0, cap - store.count_evaluated())
            store.expire([c.id for c in pending[room:]], "not evaluated: evaluation budget spent")
            pending = pending[:room]
        left = self.wall_left()
        if left is not None and left <= 0:
            pending, late = [], pending
        else:
            late = []
        futs: dict[Any, CandidateRow] = {}
        for c in pending:  # most were started by propose; the rest start now
            f = early.take(c.id)
            futs[f if f is not None else clock.track(self.rt.scorer.submit(c.code, c.id))] = c
        early.cancel_all("not evaluated")  # started early but no longer pending (none in a normal run)
        done = 0
        waiting = set(futs)
        while waiting:
            finished, waiting = wait(waiting, timeout=self.wall_left(), return_when=FIRST_COMPLETED)
            for f in sorted(finished, key=lambda f: futs[f].id):
                c = futs[f]
                score = f.result()
                store.record_score(c.id, score.to_dict())
                done += 1
                self.rt.emit("evaluated", generation=c.generation, id=c.id, operator=c.operator,
                             feasible=score.feasible, objective=score.objective, error=score.error, done=done,
                             total=len(futs))
            left = self.wall_left()
            if waiting and left is not None and left <= 0:
                # the wall budget is spent: cancel what is queued, kill what runs, keep what finished
                for f in waiting:
                    self.rt.scorer.cancel(f, self._wall_reason())
                late += [futs[f] for f in waiting]
                waiting = set()
        if late:  # left pending they would be evaluated by a resume; the run is over, so say why
            store.expire([c.id for c in late], f"not evaluated: {self._wall_reason()}")
        out: RunState = {"evaluations": store.count_evaluated()}
        if cap is not None and out["evaluations"] >= cap and not state.get("stop_reason"):
            out["stop_reason"] = f"evaluation budget ({cap}) spent"  # the model is asked nothing more
        if late:
            self.rt.emit("budget", reason=self._wall_reason(), cancelled=[c.id for c in late])
            out["stop_reason"] = self._wall_reason()
        return out
