"""The distill node (hindsight): credit this generation's offspring to the principles their prompts
carried, derive contrast principles (elites against failures, no model needed) and, for chat models,
ask the model for principles. Candidate output reaches the prompt only as a short scrubbed excerpt."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from hifo.agents.learning import credit_offspring
from hifo.agents.llm.base import BudgetExceeded, LLMError
from hifo.agents.prompting import ParentView, parse_principles, render_distill
from hifo.agents.rundb import CandidateRow
from hifo.agents.runtime import RunState, _stop_reason
from hifo.knowledge_base import contrast_principles
from hifo.sandbox._scrub import scrub

if TYPE_CHECKING:
    from hifo.agents.config import RunConfig
    from hifo.agents.runtime import Runtime
    from hifo.evaluators.base import Evaluator

# a short, scrubbed excerpt of a candidate's error is all a prompt carries of its output
DISTILL_ERROR_CHARS = 300


def _view(c: CandidateRow) -> ParentView:
    return ParentView(c.code, c.thought, c.objective, c.fitness if c.fitness is not None else -math.inf)


class DistillNode:
    """Mixed into :class:`hifo.agents.search.SearchNodes`."""

    rt: Runtime
    cfg: RunConfig
    ev: Evaluator
    style: str

    def _pop(self, ids: list[str]) -> list[CandidateRow]:
        raise NotImplementedError

    def _call(self, messages: list[dict], seed: int, stop: list[str]) -> Any:
        raise NotImplementedError

    def wall_used(self) -> float:
        raise NotImplementedError

    def distill(self, state: RunState) -> RunState:
        gen, store, kb = state["generation"], self.rt.store, self.rt.kb
        pop = self._pop(state.get("population", []))
        run = self.rt.run_id
        if not store.marker(f"credited:{gen}"):
            arms = credit_offspring(store, kb, gen, [c.fitness for c in pop], key_prefix=f"{run}:{gen}",
                                    problem=self.ev.name)
            store.mark(f"credited:{gen}", arms)
            self.rt.emit("credit", generation=gen, **arms)
        if store.marker(f"distilled:{gen}"):
            return {"generation": gen + 1}
        this_gen = store.candidates(up_to_generation=gen, status=("evaluated", "invalid"))
        elite_ids = {c.id for c in pop[: max(2, len(pop) // 2)]}
        elites = [c for c in pop if c.id in elite_ids]
        weak = [c for c in this_gen if c.id not in elite_ids and (not c.ok or c.id not in {p.id for p in pop})]
        def as_dict(c: CandidateRow) -> dict[str, Any]:
            return {"id": c.id, "code": c.code, "fitness": c.fitness if c.ok else None,
                    "error": scrub(c.error, limit=DISTILL_ERROR_CHARS), "metrics": c.metrics}
        added = []
        for text, tags, evidence in contrast_principles([as_dict(c) for c in elites], [as_dict(c) for c in weak]):
            ids = list(evidence.get("candidate_ids") or [c.id for c in elites])[:10]
            p = kb.add(text, tags=list(tags), problem=self.ev.name, source="contrast",
                       provenance={"run_id": run, "generation": gen, "candidate_ids": ids})
            added.append(p.id)
        # a run that is stopping (a budget spent) asks the model nothing more
        if self.cfg.distill and elites and self._model_principles() and not state.get("stop_reason"):
            pr = render_distill(self.style, evaluator=self.ev, elites=[_view(c) for c in elites[:3]],
                                weak=[(c.code, scrub(c.error, limit=DISTILL_ERROR_CHARS)
                                       or f"{self.ev.primary_metric} = {c.objective}")
                                      for c in weak[-2:] if c.code])
            try:
                rep = self._call(pr.messages, self.cfg.seed * 7919 + gen, pr.stop)
                store.add_prompt(generation=gen, operator="distill", messages=pr.messages, principle_ids=[],
                                 reply=rep.text, usage={k: v for k, v in rep.to_dict().items() if k != "text"})
                for text in parse_principles(rep.text, pr.prefix):
                    p = kb.add(text, tags=[self.ev.name, "model"], problem=self.ev.name, source="model",
                               provenance={"run_id": run, "generation": gen,
                                           "candidate_ids": [c.id for c in elites]})
                    added.append(p.id)
            except BudgetExceeded as exc:
                self.rt.emit("budget", reason=str(exc))
                store.mark(f"distilled:{gen}", added)
                return {"generation": gen + 1, "stop_reason": _stop_reason(exc)}
            except LLMError as exc:
                self.rt.emit("distill_failed", generation=gen, error=str(exc))
        store.mark(f"distilled:{gen}", added)
        store.set_meta("wall_before", self.wall_used())
        self.rt.started = time.time()
        self.rt.emit("distill", generation=gen, principles=added)
        return {"generation": gen + 1}

    def _model_principles(self) -> bool:
        """Model-written principles: on for chat models; off by default for small base models,
        whose prose we measured to be mostly noise (contrast principles are always derived)."""
        mode = self.cfg.model_principles
        return mode == "on" or (mode == "auto" and self.style == "chat")
