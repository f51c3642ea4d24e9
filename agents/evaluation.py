"""Trusted side of an evaluation: send a candidate through the sandbox, then score the
returned solutions with the evaluator's own ``score`` (feasibility checked here, in the
parent, from the solution alone)."""

from __future__ import annotations

import math
import time
from concurrent.futures import Future
from typing import Any

from hifo.evaluators.base import Evaluator, InfeasibleSolution, Score
from hifo.evaluators.registry import plugin_sys_path
from hifo.sandbox.job import Job, JobLimits, SandboxResult


def make_job(evaluator: Evaluator, code: str, instances: list[Any], job_id: str = "") -> Job:
    lim = evaluator.limits
    return Job(
        code=code,
        entry=evaluator.template.name,
        solver=evaluator.entry_point(),
        instances=instances,
        limits=JobLimits(timeout_s=lim.timeout_s, cpu_s=lim.cpu_s, memory_mb=lim.memory_mb,
                         max_output_bytes=lim.max_output_bytes, max_solution_bytes=lim.max_solution_bytes),
        job_id=job_id,
        sys_path=plugin_sys_path(type(evaluator)),
    )


def score_result(evaluator: Evaluator, instances: list[Any], result: SandboxResult) -> Score:
    """Turn a sandbox result into a :class:`Score`; never raises for candidate faults."""
    out = (result.stdout or "")[-2000:]
    if not result.ok:
        return Score.failed(f"{result.status}: {result.error or 'no reason given'}", result.wall_s, out)
    sols = result.solutions
    if not isinstance(sols, list) or len(sols) != len(instances):
        return Score.failed(f"invalid: expected {len(instances)} solutions, got "
                            f"{len(sols) if isinstance(sols, list) else type(sols).__name__}", result.wall_s, out)
    per: list[dict[str, float]] = []
    for i, (inst, sol) in enumerate(zip(instances, sols)):
        try:
            metrics = evaluator.score(inst, sol)
        except InfeasibleSolution as exc:
            return Score.failed(f"infeasible on instance {i}: {exc}", result.wall_s, out)
        except Exception as exc:  # a malformed solution may break the checker: still the candidate's fault
            return Score.failed(f"infeasible on instance {i}: malformed solution ({type(exc).__name__}: {exc})",
                                result.wall_s, out)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in metrics.values()):
            return Score.failed(f"invalid: non-finite metric on instance {i}: {metrics}", result.wall_s, out)
        per.append({k: float(v) for k, v in metrics.items()})
    agg = evaluator.aggregate(per)
    fit = evaluator.fitness(agg)
    if not math.isfinite(fit):
        return Score.failed(f"invalid: non-finite fitness {fit}", result.wall_s, out)
    return Score(feasible=True, fitness=fit, objective=float(agg[evaluator.primary_metric]), metrics=agg,
                 per_instance=per, wall_s=result.wall_s, stdout=out)


class CandidateEvaluator:
    """Scores candidate sources on one instance set through any executor with ``submit``."""

    def __init__(self, evaluator: Evaluator, instance_set: str, executor: Any):
        self.evaluator = evaluator
        self.instance_set = instance_set
        self.instances = evaluator.load_instances(instance_set)
        if not self.instances:
            raise ValueError(f"instance set {instance_set!r} of {evaluator.name} is empty")
        self.executor = executor
        self._jobs: dict[Future, Future] = {}  # outer (Score) future -> the executor's future, until done

    def submit(self, code: str, job_id: str = "") -> "Future[Score]":
        t0 = time.perf_counter()
        inner = self.executor.submit(make_job(self.evaluator, code, self.instances, job_id))
        outer: Future[Score] = Future()
        self._jobs[outer] = inner

        def _done(f: Future) -> None:
            self._jobs.pop(outer, None)
            try:
                res = f.result()
                score = score_result(self.evaluator, self.instances, res)
            except Exception as exc:  # executor failure: report it as this candidate's failure
                score = Score.failed(f"sandbox error: {type(exc).__name__}: {exc}", time.perf_counter() - t0)
            outer.set_result(score)

        inner.add_done_callback(_done)
        return outer

    def cancel(self, future: "Future[Score]", reason: str = "cancelled") -> None:
        """Stop a submitted evaluation: a queued job never starts; a running one is killed when the
        executor can (``executor.cancel(future, reason)``), else left to finish while nobody waits."""
        inner = self._jobs.get(future)
        if inner is None or inner.cancel():
            return
        kill = getattr(self.executor, "cancel", None)
        if kill is not None:
            kill(inner, reason)

    def evaluate(self, code: str) -> Score:
        return self.submit(code).result()
