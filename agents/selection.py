"""The ``select`` node of the search graph and the routing after a generation (a mixin of
:class:`hifo.agents.search.SearchNodes`, kept apart to keep each file short)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hifo.agents import hyper
from hifo.agents.eoh_selection import pop_greedy
from hifo.agents.rundb import CandidateRow
from hifo.agents.runtime import RunState


def _fit(c: CandidateRow | None) -> float:
    """A candidate's fitness for ranking: -inf for one without a score (or no candidate)."""
    return c.fitness if c is not None and c.fitness is not None else -math.inf


class SelectNode:
    rt: Any
    cfg: Any
    ev: Any

    def _pop(self, ids: list[str]) -> list[CandidateRow]:
        raise NotImplementedError

    def _vector(self, c: CandidateRow) -> list[float]:
        raise NotImplementedError

    def wall_used(self) -> float:
        raise NotImplementedError

    def test_reserve(self) -> float:
        raise NotImplementedError

    def _wall_reason(self) -> str:
        raise NotImplementedError

    def select(self, state: RunState) -> RunState:
        gen, store = state["generation"], self.rt.store
        new = [c for c in store.candidates(generation=gen, status="evaluated") if c.ok]
        pool = {c.id: c for c in self._pop(state.get("population", [])) + new}
        if self.cfg.selection == "eoh":  # EoH's pop_greedy: equal objectives dropped, best distinct kept
            population = pop_greedy(list(pool.values()), self.cfg.population, lambda c: c.fitness)
        else:
            population = self._hifo_survivors(pool.values())
        if not store.marker(f"hyper_told:{gen}"):
            by_parent: dict[str, list[CandidateRow]] = {}
            for c in store.candidates(generation=gen, operator="hyper", status="evaluated"):
                by_parent.setdefault(c.parents[0], []).append(c)
            for pid, kids in by_parent.items():
                parent = store.candidate(pid)
                wins = sum(1 for k in kids if k.ok and _fit(k) > _fit(parent))
                st = hyper.HyperState(**(store.marker(f"hyper:{parent.code_hash}") or {}))
                store.mark(f"hyper:{parent.code_hash}", hyper.tell(st, len(kids), wins).to_dict())
            store.mark(f"hyper_told:{gen}")
        history = list(state.get("best_history", []))
        if population:
            best = population[0]
            if not history or _fit(best) > max(history):
                (self.rt.run_dir / "best.py").write_text(
                    f"# hifo run {self.rt.run_id}, candidate {best.id}, generation {best.generation}, "
                    f"{self.ev.primary_metric} = {best.objective:.6g} on '{self.rt.scorer.instance_set}'\n{best.code}")
            history.append(max([_fit(best), *history]))
        self.rt.emit("select", generation=gen, population=[c.id for c in population],
                     best=population[0].objective if population else None,
                     best_id=population[0].id if population else None)
        return {"population": [c.id for c in population], "best_history": history}

    def _hifo_survivors(self, pool: Any) -> list[CandidateRow]:
        ranked = sorted(pool, key=lambda c: (-_fit(c), c.id))
        kept: list[CandidateRow] = []
        clones: list[CandidateRow] = []
        for c in ranked:  # diversity protection: behavioural clones only fill leftover slots
            vec = self._vector(c)
            if any(np.allclose(vec, self._vector(k), rtol=1e-12, atol=1e-12) for k in kept):
                clones.append(c)
            else:
                kept.append(c)
        return (kept + clones)[: self.cfg.population]

    def _early_stop(self, history: list[float]) -> str | None:
        """--target: the best reached the value; --patience: no new best for that many generations
        (``history`` is the running best fitness, one entry per generation)."""
        cfg, metric = self.cfg, self.ev.primary_metric
        if cfg.target is not None and history and history[-1] >= self.ev.fitness({metric: cfg.target}):
            return f"target {metric} = {cfg.target:g} reached"
        if cfg.patience is not None and len(history) > cfg.patience and history[-1] <= history[-1 - cfg.patience]:
            return f"no new best for {cfg.patience} generation(s) (--patience)"
        return None

    def route(self, state: RunState) -> str:
        cfg = self.cfg
        reason = state.get("stop_reason")
        if reason is None and state["generation"] > cfg.generations:
            reason = f"{cfg.generations} generation(s) done"
        if reason is None and cfg.max_evaluations is not None and state.get("evaluations", 0) >= cfg.max_evaluations:
            reason = f"evaluation budget ({cfg.max_evaluations}) spent"
        if reason is None and cfg.max_wall_s is not None and self.wall_used() >= cfg.max_wall_s - self.test_reserve():
            reason = self._wall_reason()
        reason = reason or self._early_stop(state.get("best_history", []))
        if reason:
            self.rt.store.set_meta("stop_reason", reason)
            return "end"
        return "continue"
