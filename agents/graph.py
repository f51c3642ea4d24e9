"""The LangGraph state graph of a HiFo search, and the functions that start and resume it.

    START -> seed -> foresight -> recall -> propose -> evaluate -> select -> distill
                        ^                                                     |
                        +------------------- continue ------------------------+-- end --> report -> END

Checkpoints go to ``RUN_DIR/checkpoints.sqlite`` (LangGraph ``SqliteSaver``) after every
node; candidates and scores go to ``RUN_DIR/run.sqlite`` as soon as they exist.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Callable, cast

from hifo.agents.config import RunConfig, default_runs_dir
from hifo.agents.rundb import RunStore
from hifo.agents.search import RunState, Runtime, SearchNodes


class RunError(RuntimeError):
    """A run could not be started or resumed (bad problem, missing run directory, ...)."""


def _report_node(nodes: SearchNodes) -> Callable[[RunState], RunState]:
    def report(state: RunState) -> RunState:
        rt = nodes.rt
        store = rt.store
        pop = [store.candidate(i) for i in state.get("population", [])]
        summary: dict[str, Any] = {
            "run_id": rt.run_id, "problem": rt.evaluator.name, "model": rt.config.model,
            "generations": state.get("generation", 0), "evaluations": store.count_evaluated(),
            "stop_reason": store.get_meta("stop_reason"), "train_set": rt.scorer.instance_set,
            "primary_metric": rt.evaluator.primary_metric, "direction": rt.evaluator.direction,
        }
        usage = rt.client.usage if hasattr(rt.client, "usage") else None
        if usage is not None:
            summary["model_usage"] = {k: getattr(usage, k) for k in
                                      ("calls", "completions", "prompt_tokens", "completion_tokens", "cost_usd",
                                       "cache_hits") if hasattr(usage, k)}
        from hifo.agents.call_stats import outcomes, per_generation

        summary["outcomes"] = outcomes(store, rt.evaluator.direction)
        summary["model_calls"] = per_generation(store)
        base = [c for c in store.candidates(operator="baseline", status="evaluated") if c.ok]
        summary["baselines"] = {c.thought: c.objective for c in base}
        if pop:
            best = pop[0]
            summary["best"] = {"id": best.id, "generation": best.generation, "operator": best.operator,
                               "objective": best.objective, "metrics": best.metrics}
            nodes_used = {row["node"] for row in store.placements()}
            if len(nodes_used) > 1 and not store.marker("rescored"):
                _rescore_best(nodes, best)
            rescored = store.marker("rescored")
            if rescored:
                summary["best"]["rescore"] = rescored
            test_set = rt.config.test_set or rt.evaluator.default_test_set
            if test_set and test_set != rt.scorer.instance_set and not store.marker("tested"):
                _test_best(nodes, best, test_set)
            tested = store.marker("tested")
            if tested and "skipped" in tested:
                summary["best"]["test"] = {"set": tested["set"], "skipped": tested["skipped"]}
            elif tested:
                summary["best"]["test"] = {"set": tested["set"], "objective": tested["score"]["objective"],
                                           "metrics": tested["score"]["metrics"], "error": tested["score"]["error"],
                                           **{k: tested[k] for k in ("secret", "baseline") if k in tested}}
        summary["principles_added"] = sum(len(store.marker(f"distilled:{g}") or [])
                                          for g in range(state.get("generation", 0) + 1))
        rt.kb.decay(0.98)
        # only principles whose centred credit is confidently negative, over uses across runs
        retired = rt.kb.retire_harmful()
        summary["principles_retired"] = len(retired)
        # the bounded pool: lowest-LCB graduates beyond the cap leave recall (kept, may come back)
        summary["principle_pool"] = {k: len(v) for k, v in rt.kb.enforce_pool().items()}
        summary["finished_at"] = time.time()
        (rt.run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        store.set_meta("status", "finished")
        rt.emit("finished", **{k: summary[k] for k in ("stop_reason", "evaluations")}, best=summary.get("best"))
        return {}

    return report


def rescore_agrees(evaluator: Any, first: dict[str, float], again: dict[str, float]) -> list[str]:
    """The metrics on which two scores of one candidate disagree beyond the evaluator's declared
    tolerance (``fitness_rtol``; the same rule as ``hifo doctor --determinism``)."""
    from hifo.evaluators.determinism import agree

    return [m for m in sorted(set(first) | set(again))
            if m not in evaluator.timing_metrics
            and (m not in first or m not in again or not agree(first[m], again[m], evaluator.metric_rtol(m)))]


def _rescore_best(nodes: SearchNodes, best: Any) -> None:
    """Candidates ran on more than one node: score the best once more on the train set (wherever the
    executor puts it) and record whether the two nodes agree (issue 26: a fitness must be the same
    number on every machine; a disagreement is reported, with both nodes and the metrics that differ)."""
    from hifo.agents.evaluation import CandidateEvaluator

    rt = nodes.rt
    left = nodes.wall_left()  # the re-score may not eat the test set's reserve
    if left is not None and left <= 0:
        return
    s = CandidateEvaluator(rt.evaluator, rt.scorer.instance_set, rt.scorer.executor).evaluate(best.code)
    if not s.feasible:
        rec = {"node": s.node, "first_node": best.node, "agrees": False, "error": s.error}
    else:
        differ = rescore_agrees(rt.evaluator, best.metrics or {}, s.metrics)
        rec = {"node": s.node, "first_node": best.node, "objective": s.objective, "first_objective": best.objective,
               "agrees": not differ, "metrics_differ": differ, "load_dependent": rt.evaluator.load_dependent}
    rt.store.mark("rescored", rec)
    rt.emit("rescore", **rec)
    if not rec["agrees"]:
        note = " (its budget is time, so some difference is expected)" if rt.evaluator.load_dependent else ""
        rt.emit("warning", message=f"the best candidate scored differently on node {rec['node']} than on "
                                   f"{rec['first_node']}: {rec.get('metrics_differ') or rec.get('error')}{note}")


def _score_on_test(nodes: SearchNodes, code: str, cid: str, test_set: str) -> tuple[Any, str | None]:
    """Score ``code`` on the test set within what is left of the wall budget (the reserve kept for it,
    SearchNodes.test_reserve, included): ``(score, None)``, or ``(None, why it was skipped or cancelled)``."""
    from concurrent.futures import wait

    from hifo.agents.evaluation import CandidateEvaluator

    rt = nodes.rt
    left = nodes.wall_left_total()
    if left is not None and left <= 0:
        return None, f"{nodes._wall_reason()} before the test-set evaluation"
    tester = CandidateEvaluator(rt.evaluator, test_set, rt.scorer.executor)
    fut = tester.submit(code, f"{cid}-test")
    if not wait([fut], timeout=left).done:
        tester.cancel(fut, nodes._wall_reason())
        return None, f"{nodes._wall_reason()} during the test-set evaluation (cancelled after {left:.1f} s)"
    return fut.result(), None


def _test_best(nodes: SearchNodes, best: Any, test_set: str) -> None:
    """Score the best candidate on the test set, within what is left of the wall budget: skipped when
    nothing is left, cancelled (and said so) when it runs out. On a secret draw (no published figure) the best
    baseline is scored on the same draw too."""
    rt = nodes.rt
    s, skipped = _score_on_test(nodes, best.code, best.id, test_set)
    if s is None:
        rt.store.mark("tested", {"set": test_set, "skipped": skipped})
        rt.emit("test", set=test_set, feasible=False, objective=None, error=f"skipped: {skipped}")
        return
    record: dict[str, Any] = {"set": test_set, "score": s.to_dict()}
    if rt.evaluator.seeds_secret(test_set):
        record["secret"] = True
        base = [c for c in rt.store.candidates(operator="baseline", status="evaluated") if c.ok]
        if best.operator != "baseline" and base:
            top = max(base, key=lambda c: c.fitness if c.fitness is not None else -math.inf)
            b, why = _score_on_test(nodes, top.code, top.id, test_set)
            record["baseline"] = ({"name": top.thought, "skipped": why} if b is None else
                                  {"name": top.thought, "objective": b.objective if b.feasible else None,
                                   "error": b.error})
    rt.store.mark("tested", record)
    rt.emit("test", set=test_set, feasible=s.feasible, objective=s.objective, error=s.error)


def build_graph(nodes: SearchNodes):
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(RunState)
    for name in ("seed", "foresight", "recall", "propose", "evaluate", "select", "distill"):
        g.add_node(name, getattr(nodes, name))
    # langgraph's overloads cannot infer the node's input type from a plain Callable[[RunState], RunState]
    g.add_node("report", cast(Any, _report_node(nodes)))
    g.add_edge(START, "seed")
    g.add_edge("seed", "foresight")
    g.add_edge("foresight", "recall")
    g.add_edge("recall", "propose")
    # gen 0: the baselines are pending since seed; evaluate them with the initial population
    g.add_edge("propose", "evaluate")
    g.add_edge("evaluate", "select")
    g.add_edge("select", "distill")
    g.add_conditional_edges("distill", nodes.route, {"continue": "foresight", "end": "report"})
    g.add_edge("report", END)
    return g


def _open_runtime(run_dir: Path, cfg: RunConfig, client: Any | None, executor: Any | None,
                  on_event: Callable[[str, dict], None] | None, resume: bool = False) -> tuple[Runtime, Any]:
    from hifo.agents.evaluation import CandidateEvaluator
    from hifo.agents.run_kb import bind_secret_key, open_run_kb
    from hifo.evaluators.registry import get_evaluator

    evaluator = get_evaluator(cfg.problem)
    train = cfg.train_set or evaluator.default_train_set
    owned = executor is None
    if executor is None:
        from hifo.sandbox import make_executor

        executor = make_executor(cfg.executor, cfg.isolation, cfg.workers, cfg.address)
    if client is None:
        from hifo.agents.llm.factory import make_client

        # the response cache is the run's own (resume replays a batch interrupted mid-generation from it); a new
        # run never reads another run's replies, even with the same seed and prompts
        client = make_client(cfg.model, cache_path=run_dir / "llm_cache.sqlite" if cfg.llm_cache else None,
                             record_path=cfg.record, max_calls=cfg.max_calls, max_cost_usd=cfg.max_cost,
                             seed=cfg.seed)
    store = RunStore(run_dir / "run.sqlite")
    bind_secret_key(evaluator, client, store)  # before the knowledge base: a recording's snapshot carries it
    kb = open_run_kb(cfg, client, run_dir, store, resume)
    rt = Runtime(run_id=run_dir.name, run_dir=run_dir, config=cfg, evaluator=evaluator, client=client, kb=kb,
                 store=store, scorer=CandidateEvaluator(evaluator, train, executor),
                 on_event=on_event or (lambda k, d: None))
    rt.owned_executor = executor if owned else None
    return rt, executor


def _thread_id(conn: sqlite3.Connection, default: str) -> str:
    """The checkpoint thread this run directory holds: the one already in ``checkpoints.sqlite`` (its
    folder name when it was made), so a copied, moved or renamed run resumes; ``default`` for a new run."""
    try:
        rows = conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
    except sqlite3.OperationalError:  # no table yet: a new run
        return default
    ids = [r[0] for r in rows]
    return default if default in ids or len(ids) != 1 else ids[0]


def _invoke(rt: Runtime, resume: bool, reopen: bool = False) -> dict[str, Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from hifo.agents.run_kb import draw_secret_test_ahead

    draw_secret_test_ahead(rt)
    nodes = SearchNodes(rt)
    conn = sqlite3.connect(rt.run_dir / "checkpoints.sqlite", check_same_thread=False)
    try:
        app = build_graph(nodes).compile(checkpointer=SqliteSaver(conn))
        config = {"configurable": {"thread_id": _thread_id(conn, rt.run_id)}, "recursion_limit": 100_000}
        first: RunState | None = {}
        if reopen:  # a finished run given more budget: back to the routing after the last generation
            app.update_state(config, {"stop_reason": None}, as_node="distill")
            first = None
        elif resume:
            snap = app.get_state(config)
            if snap.values and snap.next:
                first = None  # continue from the last checkpoint
            elif snap.values and not snap.next and (rt.run_dir / "summary.json").exists():
                return json.loads((rt.run_dir / "summary.json").read_text())
        app.invoke(first, config)
    finally:
        conn.close()
    return json.loads((rt.run_dir / "summary.json").read_text())


def _mark_ended(rt: Runtime, exc: BaseException) -> None:
    """Say in the run store how a run that did not finish ended, so `hifo runs` does not list it as
    running: 'diverged' (a replay that left its cassette; a resume would diverge the same way),
    'interrupted' (Ctrl-C, SIGTERM) or 'failed' (any other error, e.g. the model unreachable)."""
    from hifo.agents.llm.replay import ReplayMismatch

    if rt.store.get_meta("status") == "finished":
        return
    if isinstance(exc, ReplayMismatch):
        status = "diverged"
    elif isinstance(exc, (KeyboardInterrupt, SystemExit)):
        status = "interrupted"
    else:
        status = "failed"
    reason = " ".join(str(exc).split()) or type(exc).__name__
    rt.store.set_meta("status", status)
    rt.store.set_meta("stop_reason", reason if status != "failed" else f"{type(exc).__name__}: {reason}")
    rt.emit("ended", status=status, reason=reason)


def _close(rt: Runtime) -> None:
    rt.store.close()
    ex = rt.owned_executor
    if ex is not None:
        # kills candidates still running (Ctrl-C, budget stop) instead of waiting for them
        ex.shutdown(wait=True, cancel_futures=True)


def new_run_dir(cfg: RunConfig) -> Path:
    if cfg.run_dir:
        path = Path(cfg.run_dir)
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = cfg.problem.rpartition(":")[2] or cfg.problem  # path/to/file.py:Class -> Class
        path = default_runs_dir() / f"{name}-{stamp}-{uuid.uuid4().hex[:4]}"
    if (path / "run.sqlite").exists():
        raise RunError(f"{path} already holds a run; use `hifo resume {path}` or choose another --run-dir")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _remove_half_made(run_dir: Path, fresh: bool) -> None:
    import shutil

    if fresh:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    for p in run_dir.iterdir():  # a --run-dir the user made: remove only what this start wrote
        if p.name in ("config.json", "events.jsonl") or p.name.startswith(("run.sqlite", "checkpoints.sqlite")):
            p.unlink(missing_ok=True)


def start_run(cfg: RunConfig, *, client: Any | None = None, executor: Any | None = None,
              on_event: Callable[[str, dict], None] | None = None) -> tuple[Path, dict[str, Any]]:
    """Run a whole search; returns the run directory and its summary."""
    fresh = cfg.run_dir is None or not Path(cfg.run_dir).exists()
    run_dir = new_run_dir(cfg)
    try:
        (run_dir / "config.json").write_text(cfg.model_dump_json(indent=2))
        rt, executor = _open_runtime(run_dir, cfg, client, executor, on_event)
    except BaseException:
        _remove_half_made(run_dir, fresh)  # a failed start leaves nothing that blocks the next one
        raise
    from hifo.sandbox import isolation_report

    rt.store.set_meta("config", json.loads(cfg.model_dump_json()))
    rt.store.set_meta("isolation", isolation_report(cfg.isolation))
    rt.store.set_meta("status", "running")
    rt.emit("start", run_dir=str(run_dir), problem=cfg.problem, model=cfg.model, pid=os.getpid(),
            kb=rt.store.get_meta("kb"))
    from hifo.agents.config import note_run_dir

    why_not = note_run_dir(run_dir)
    if why_not:
        rt.emit("warning", message=why_not)
    try:
        return run_dir, _invoke(rt, resume=False)
    except BaseException as exc:
        _mark_ended(rt, exc)
        raise
    finally:
        _close(rt)


def resume_run(run_dir: str | Path, *, client: Any | None = None, executor: Any | None = None,
               on_event: Callable[[str, dict], None] | None = None,
               extend: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """Continue a killed run from its last checkpoint; completed evaluations are kept. ``extend``
    (e.g. ``{"generations": 8, "max_cost": 2.0}``) changes the run's limits first; a finished run given
    ``extend`` continues from where it stopped (its report and test-set score are redone at the end)."""
    run_dir = Path(run_dir)
    if not (run_dir / "config.json").exists():
        raise RunError(f"{run_dir} is not a hifo run directory (no config.json)")
    cfg = RunConfig.model_validate_json((run_dir / "config.json").read_text())
    if extend:
        cfg = RunConfig.model_validate({**cfg.model_dump(), **extend})
    rt, executor = _open_runtime(run_dir, cfg, client, executor, on_event, resume=True)
    try:
        finished = rt.store.get_meta("status") == "finished" and (run_dir / "summary.json").exists()
        if finished and not extend:
            return run_dir, json.loads((run_dir / "summary.json").read_text())
        if extend:
            (run_dir / "config.json").write_text(cfg.model_dump_json(indent=2))
            rt.store.set_meta("config", json.loads(cfg.model_dump_json()))
        if finished:
            rt.store.unmark("tested")
            rt.store.set_meta("stop_reason", None)
        rt.store.set_meta("status", "running")
        rt.emit("resume", pid=os.getpid(), evaluated=rt.store.count_evaluated(), extend=extend or None)
        return run_dir, _invoke(rt, resume=True, reopen=finished)
    except BaseException as exc:
        _mark_ended(rt, exc)
        raise
    finally:
        _close(rt)
