"""The nodes of the HiFo search graph: seed, foresight, recall, propose, evaluate, select,
distill, report. Each node reads the small graph state (ids and numbers), does its work
against the run store / knowledge base / sandbox, and returns a state update.

The nodes live in mixins kept apart to keep each file short: ``evaluate`` and the wall-clock budget in
:mod:`hifo.agents.evaluate_node`, ``propose`` (with novelty before evaluation and repair) in
:mod:`hifo.agents.propose_node`, ``select`` in :mod:`hifo.agents.selection`, ``distill`` in :mod:`hifo.agents.distill`.

Every node is safe to re-run after a crash (``hifo resume``): side effects are guarded by
markers in the run store, ``propose`` discards a half-finished batch (model replies come
back from the response cache), and ``evaluate`` only scores candidates still pending.
"""

from __future__ import annotations

import math

from hifo.agents.code import check_source, normalized_hash
from hifo.agents.distill import DISTILL_ERROR_CHARS, DistillNode
from hifo.agents.evaluate_node import EvaluateNode
from hifo.agents.foresight import decide, without_foresight
from hifo.agents.pipeline import EarlyEvaluations, GenerationClock
from hifo.agents.probe import BehaviourProbe
from hifo.agents.propose_node import ProposeNode
from hifo.agents.rundb import CandidateRow
from hifo.agents.runtime import RunState, Runtime, WallTimeSpent
from hifo.agents.selection import SelectNode
from hifo.knowledge_base.seeds import seed_if_empty


__all__ = ["DISTILL_ERROR_CHARS", "RunState", "Runtime", "SearchNodes", "WallTimeSpent"]


class SearchNodes(EvaluateNode, ProposeNode, DistillNode, SelectNode):
    def __init__(self, rt: Runtime):
        self.rt = rt
        self.cfg = rt.config
        self._reserve: float | None = None  # seconds kept for the final test-set evaluation (test_reserve)
        self.ev = rt.evaluator
        self.style = rt.client.style
        self._clock: GenerationClock | None = None  # this generation's model / evaluation / wall times
        self._early: EarlyEvaluations | None = None  # evaluations started while the model still writes
        self._last_duplicate = False  # set by _add_parsed: the last parsed reply repeated an earlier candidate
        self._last_reply = self._last_reason = ""  # that reply's text and why it was a duplicate (re-draw feedback)
        self._n_duplicates = self._n_redraws = self._n_behaviour = 0
        self._probe: BehaviourProbe | None | bool = False  # False: not built yet (agents/probe.py)
        self._baselines_probed = False

    # ---- helpers ---------------------------------------------------------------------------
    def _pop(self, ids: list[str]) -> list[CandidateRow]:
        return [self.rt.store.candidate(i) for i in ids]

    def _vector(self, c: CandidateRow) -> list[float]:
        return [m.get(self.ev.primary_metric, math.nan) for m in c.per_instance]

    # ---- nodes -------------------------------------------------------------------------------
    def seed(self, state: RunState) -> RunState:
        store = self.rt.store
        if not store.marker("seeded"):
            sources = {**self.ev.baselines, "template_baseline": self.ev.template.baseline_source()}
            for name, code in sources.items():
                h = normalized_hash(code)
                if store.has_hash(h):
                    continue
                check_source(code, self.ev.template.name)
                store.add_candidate(generation=0, operator="baseline", code=code, code_hash=h, thought=name,
                                    cid=f"base-{name}")
            seeded = seed_if_empty(self.rt.kb) if self.cfg.recall_k > 0 else []
            store.mark("seeded")
            self.rt.emit("seed", baselines=sorted(sources), seed_principles=len(seeded))
        return {"generation": 0, "population": [], "best_history": [], "evaluations": 0, "recalled": [],
                "stop_reason": None}

    def foresight(self, state: RunState) -> RunState:
        gen = state["generation"]
        pop = self._pop(state.get("population", []))
        prev = [c for c in self.rt.store.candidates(generation=gen - 1, not_operator="baseline")]
        failure_rate = (sum(1 for c in prev if not c.ok) / len(prev)) if prev else None
        d = decide(gen, state.get("best_history", []), [c.code for c in pop], [self._vector(c) for c in pop],
                   failure_rate) if self.cfg.foresight else without_foresight(gen)
        self.rt.store.add_foresight(d.to_dict())
        self.rt.emit("foresight", generation=gen, regime=d.regime, reason=d.reason, directive=d.directive,
                     numbers=d.numbers)
        return {"regime": d.regime, "directive": d.directive, "weights": d.weights}

    def recall(self, state: RunState) -> RunState:
        if self.cfg.recall_k <= 0:
            return {"recalled": []}
        # principles that keep hurting (credited at least 5 times, utility below the floor) stay
        # in the store, with their record, but are not shown again; prune retires them at the end
        got = [p for p in self.rt.kb.recall(self.ev.name, self.ev.description, k=3 * self.cfg.recall_k,
                                            cross_problem=self.cfg.cross_problem)
               if not (p.uses >= 5 and p.utility < self.cfg.recall_min_utility)][: 2 * self.cfg.recall_k]
        # the pool is twice recall_k: propose gives each prompt its own Thompson-sampled recall_k of it
        self.rt.emit("recall", generation=state["generation"],
                     principles=[{"id": p.id, "problem": p.problem, "utility": round(p.utility, 4), "text": p.text}
                                 for p in got])
        return {"recalled": [p.id for p in got]}

