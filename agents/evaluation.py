"""Trusted side of an evaluation: send a candidate through the sandbox, then score the
returned solutions with the evaluator's own ``score`` (feasibility checked here, in the
parent, from the solution alone)."""

from __future__ import annotations

import math
import socket
import time
from concurrent.futures import Future
from typing import Any

from hifo.evaluators.base import Evaluator, InfeasibleSolution, Score
from hifo.evaluators.registry import plugin_sys_path
from hifo.sandbox._scrub import scrub
from hifo.sandbox.executor import Executor
from hifo.sandbox.job import Job, JobLimits, SandboxResult

ERROR_CHARS = 4000  # what of a candidate's error text is kept (after scrubbing)


def make_job(evaluator: Evaluator, code: str, instances: list[Any], job_id: str = "") -> Job:
    lim = evaluator.limits
    return Job(
        code=code,
        entry=evaluator.template.name,
        fence={"imports": list(evaluator.slot_imports), "process": bool(evaluator.slot_process)},
        solver=evaluator.entry_point(),
        instances=instances,
        limits=JobLimits(timeout_s=lim.timeout_s, cpu_s=lim.cpu_s, memory_mb=lim.memory_mb,
                         max_output_bytes=lim.max_output_bytes, max_solution_bytes=lim.max_solution_bytes),
        job_id=job_id,
        sys_path=plugin_sys_path(type(evaluator)),
        # enforced live by the sandbox parent on its own clock (see check_instance_times for the rest)
        instance_limits_s=tuple(evaluator.instance_time_limit(inst) for inst in instances),
    )


def fence_refusal(evaluator: Evaluator, code: str) -> str | None:
    """The slot fence's static check, run in the parent first; None when the source passes it
    (a syntax error is left for the sandbox to report, as before)."""
    from hifo.sandbox import _fence

    try:
        _fence.check_source(code, tuple(evaluator.slot_imports))
    except _fence.FenceViolation as exc:
        return f"error: {exc}"
    except (SyntaxError, ValueError):
        return None
    return None


def check_instance_times(evaluator: Evaluator, instances: list[Any], times: list[float]) -> str | None:
    """The evaluator's per-instance time limit, enforced here in the parent (None when kept).

    ``times`` come from the sandbox parent's own clock (progress marks of the child, timestamped
    on arrival); the sandbox already kills a candidate whose instance runs past its limit, this
    check catches one that finished just before the kill arrived."""
    limits = [evaluator.instance_time_limit(inst) for inst in instances]
    if all(lim is None for lim in limits):
        return None
    if len(times) != len(instances):
        return f"invalid: {len(times)} instance timings for {len(instances)} instances"
    for i, (lim, spent) in enumerate(zip(limits, times)):
        if lim is not None and spent > lim:
            return f"overtime: instance {i} took {spent:.2f} s, over its {lim:.2f} s limit"
    return None


def score_result(evaluator: Evaluator, instances: list[Any], result: SandboxResult) -> Score:
    """Turn a sandbox result into a :class:`Score`; never raises for candidate faults.

    The score also says where the candidate ran: the node (a Ray node's host name; this machine for
    the local executor) and the isolation layers it got there."""
    score = _score(evaluator, instances, result)
    iso = dict(result.isolation or {})
    score.node = str(iso.get("node") or socket.gethostname())
    score.isolation = {k: v for k, v in iso.items() if k != "worker_pid"}
    return score


def _score(evaluator: Evaluator, instances: list[Any], result: SandboxResult) -> Score:
    out = (result.stdout or "")[-2000:]
    if not result.ok:
        return Score.failed(f"{result.status}: {result.error or 'no reason given'}", result.wall_s, out)
    sols = result.solutions
    if not isinstance(sols, list) or len(sols) != len(instances):
        return Score.failed(f"invalid: expected {len(instances)} solutions, got "
                            f"{len(sols) if isinstance(sols, list) else type(sols).__name__}", result.wall_s, out)
    overtime = check_instance_times(evaluator, instances, result.instance_s)
    if overtime:
        return Score.failed(overtime, result.wall_s, out)
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


def scrubbed(score: Score) -> Score:
    """``score`` with its candidate-made text (error, stdout) capped and scrubbed of credentials
    (:mod:`hifo.sandbox._scrub`): this text is stored and may be quoted to the model."""
    import dataclasses

    return dataclasses.replace(score, error=scrub(score.error, limit=ERROR_CHARS),
                               stdout=scrub(score.stdout, limit=2000) or "")


class CandidateEvaluator:
    """Scores candidate sources on one instance set through any :class:`~hifo.sandbox.executor.Executor`."""

    def __init__(self, evaluator: Evaluator, instance_set: str, executor: Executor):
        self.evaluator = evaluator
        self.instance_set = instance_set
        self.instances = evaluator.load_instances(instance_set)
        if not self.instances:
            raise ValueError(f"instance set {instance_set!r} of {evaluator.name} is empty")
        self.executor = executor
        self._jobs: dict[Future, Future] = {}  # outer (Score) future -> the executor's future, until done

    def submit(self, code: str, job_id: str = "") -> "Future[Score]":
        t0 = time.perf_counter()
        refused = fence_refusal(self.evaluator, code)
        if refused is not None:  # the child would refuse it too (it checks again): save the sandbox run
            done: Future[Score] = Future()
            done.set_result(scrubbed(Score.failed(refused, time.perf_counter() - t0)))
            return done
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
            outer.set_result(scrubbed(score))

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
