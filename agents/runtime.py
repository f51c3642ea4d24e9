"""What a run holds outside the graph state: the runtime (model client, knowledge base, run store,
scorer) and the small, serialisable graph state itself."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from hifo.agents.config import RunConfig
from hifo.agents.evaluation import CandidateEvaluator
from hifo.agents.llm.base import BudgetExceeded, LLMClient
from hifo.agents.rundb import RunStore
from hifo.evaluators.base import Evaluator
from hifo.knowledge_base import KnowledgeBase
from hifo.sandbox._scrub import scrub

if TYPE_CHECKING:
    from hifo.sandbox.executor import Executor


class WallTimeSpent(BudgetExceeded):
    """The run's wall-clock budget (``max_wall_s``) is spent: no new model call or evaluation starts."""


def _stop_reason(exc: BudgetExceeded) -> str:
    return str(exc) if isinstance(exc, WallTimeSpent) else f"model budget spent: {exc}"


class RunState(TypedDict, total=False):
    generation: int
    population: list[str]
    best_history: list[float]
    evaluations: int
    regime: str
    directive: str
    weights: dict[str, float]
    recalled: list[str]
    stop_reason: str | None


@dataclass
class Runtime:
    """The non-serialisable parts of a run, held outside the graph state."""

    run_id: str
    run_dir: Path
    config: RunConfig
    evaluator: Evaluator
    client: LLMClient
    kb: KnowledgeBase
    store: RunStore
    scorer: CandidateEvaluator
    on_event: Callable[[str, dict], None] = lambda kind, data: None
    started: float = field(default_factory=time.time)
    owned_executor: Executor | None = None  # the executor this run made (and closes)

    def emit(self, kind: str, **data: Any) -> None:
        if isinstance(data.get("error"), str):  # candidate-made text: scrubbed before it is stored
            data["error"] = scrub(data["error"], limit=4000)
        self.store.event(kind, **data)
        with (self.run_dir / "events.jsonl").open("a") as fh:
            fh.write(json.dumps({"ts": time.time(), "kind": kind, **data}, default=str) + "\n")
        self.on_event(kind, data)
