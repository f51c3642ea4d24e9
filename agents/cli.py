"""The ``hifo`` command line. Heavy packages (langgraph, litellm, llama-cpp, numpy-based
evaluators) are imported inside the commands so ``hifo --help`` stays fast."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

app = typer.Typer(help="hifo: LLM-driven automated heuristic design (HiFo-style agent, sandboxed evaluators).",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _principles_app() -> typer.Typer:
    from hifo.knowledge_base.cli import principles_app

    return principles_app


def _fail(msg: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {msg}")
    raise typer.Exit(code)


def _one_line(exc: BaseException) -> str:
    from rich.markup import escape

    return escape(" ".join(str(exc).split()))  # prompt text in the message may hold [brackets]


def _progress_printer():
    def on_event(kind: str, d: dict) -> None:
        if kind == "foresight":
            n = d["numbers"]
            console.print(f"[bold cyan]gen {d['generation']}[/] foresight: [bold]{d['regime']}[/] — {d['reason']} "
                          f"(stagnation={n['stagnation']}, code div={n['code_diversity']}, "
                          f"behaviour div={n['behaviour_diversity']})")
        elif kind == "recall":
            for p in d["principles"]:
                console.print(f"  recall [dim]#{p['id']} ({p['problem']}, utility {p['utility']})[/] {p['text'][:100]}")
        elif kind == "propose":
            console.print(f"  propose: {d['replies']}/{d['prompts']} replies, {d['new']} new candidates, "
                          f"{d['hyper']} constant-tuning variants" + (f" — {d['stop_reason']}" if d['stop_reason'] else ""))
        elif kind == "evaluated":
            status = f"{d['objective']:.4g}" if d["feasible"] else f"[red]failed[/] ({(d['error'] or '')[:80]})"
            console.print(f"  [{d['done']}/{d['total']}] {d['id']} {d['operator']:<8} {status}")
        elif kind == "select":
            console.print(f"  select: best = [bold green]{d['best']}[/] ({d['best_id']})")
        elif kind == "distill":
            console.print(f"  distill: {len(d['principles'])} principle(s) added/reinforced")
        elif kind == "test":
            console.print(f"test set '{d['set']}': {d['objective'] if d['feasible'] else d['error']}")
    return on_event


@app.command()
def run(
    problem: str = typer.Option(..., "--problem", "-p", help="evaluator name (see `hifo problems`)"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="local | local:PATH.gguf | replay:PATH | "
                                        "openai/MODEL[@BASE_URL] | any litellm provider string (default $HIFO_MODEL or local)"),
    generations: Optional[int] = typer.Option(None, "--generations", "-g"),
    population: Optional[int] = typer.Option(None, "--population", "-n"),
    offspring: Optional[int] = typer.Option(None, "--offspring"),
    max_evaluations: Optional[int] = typer.Option(None, "--max-evaluations"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="USD"),
    max_calls: Optional[int] = typer.Option(None, "--max-calls"),
    max_wall: Optional[float] = typer.Option(None, "--max-wall", help="seconds"),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir"),
    kb: Optional[Path] = typer.Option(None, "--kb", help="knowledge base file"),
    seed: Optional[int] = typer.Option(None, "--seed"),
    train_set: Optional[str] = typer.Option(None, "--train-set"),
    test_set: Optional[str] = typer.Option(None, "--test-set"),
    workers: Optional[int] = typer.Option(None, "--workers"),
    record: Optional[Path] = typer.Option(None, "--record", help="write a replay cassette of every model call"),
    no_distill: bool = typer.Option(False, "--no-distill", help="no model-written principles (contrast ones still)"),
    model_principles: Optional[str] = typer.Option(None, "--model-principles",
                                                   help="auto (default: on for chat models, off for base models) | on | off"),
    isolation: Optional[str] = typer.Option(None, "--isolation", help="strict | standard (default) | minimal"),
    executor: Optional[str] = typer.Option(None, "--executor", help="local (default) | ray"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray address: auto or ray://HOST:10001"),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file with run settings ([run] table)"),
) -> None:
    """Launch a heuristic search."""
    from pydantic import ValidationError

    from hifo.agents.config import load_config

    overrides = dict(problem=problem, model=model, generations=generations, population=population,
                     offspring=offspring, max_evaluations=max_evaluations, max_cost=max_cost, max_calls=max_calls,
                     max_wall_s=max_wall, run_dir=str(run_dir) if run_dir else None, kb=str(kb) if kb else None,
                     seed=seed, train_set=train_set, test_set=test_set, workers=workers,
                     record=str(record) if record else None, distill=False if no_distill else None,
                     model_principles=model_principles, isolation=isolation, executor=executor, address=address)
    try:
        cfg = load_config(config, overrides)
    except (ValidationError, FileNotFoundError) as exc:
        _fail(str(exc), 2)
    from hifo.agents.graph import RunError, start_run
    from hifo.evaluators.registry import get_evaluator

    try:
        get_evaluator(cfg.problem)
    except KeyError as exc:
        _fail(str(exc.args[0]) if exc.args else str(exc), 2)
    console.print(f"[bold]hifo run[/] problem={cfg.problem} model={cfg.model} generations={cfg.generations} "
                  f"population={cfg.population}")
    from hifo.agents.llm.replay import ReplayMismatch
    from hifo.sandbox import IsolationUnavailable

    try:
        path, summary = start_run(cfg, on_event=_progress_printer())
    except (RunError, IsolationUnavailable, ValueError) as exc:
        _fail(str(exc), 2)
    except ReplayMismatch as exc:
        _fail(_one_line(exc), 3)
    _print_summary(path, summary)


def _print_summary(path: Path, summary: dict) -> None:
    best = summary.get("best") or {}
    console.print(f"\n[bold]done[/] ({summary.get('stop_reason')}); {summary.get('evaluations')} evaluations")
    if best:
        console.print(f"best {summary['primary_metric']} on '{summary['train_set']}': [bold green]{best['objective']:.6g}[/]"
                      f" (candidate {best['id']}, generation {best['generation']}, {best['operator']})")
        if best.get("test", {}).get("skipped"):
            console.print(f"test set '{best['test']['set']}' not evaluated: {best['test']['skipped']}")
        elif best.get("test"):
            console.print(f"best on test set '{best['test']['set']}': {best['test']['objective']}")
    for name, value in (summary.get("baselines") or {}).items():
        console.print(f"baseline {name}: {value:.6g}")
    console.print(f"results: [bold]{path}[/] (best.py, summary.json, run.sqlite, events.jsonl)")


@app.command()
def resume(run: Path = typer.Argument(..., help="run directory")) -> None:
    """Continue a killed or interrupted run from its last checkpoint."""
    from hifo.agents.graph import RunError, resume_run
    from hifo.agents.llm.replay import ReplayMismatch
    from hifo.sandbox import IsolationUnavailable

    try:
        path, summary = resume_run(run, on_event=_progress_printer())
    except (RunError, IsolationUnavailable) as exc:
        _fail(str(exc), 2)
    except ReplayMismatch as exc:
        _fail(_one_line(exc), 3)
    _print_summary(path, summary)


@app.command()
def runs(root: Optional[Path] = typer.Option(None, "--root", help="runs directory (default $HIFO_RUNS or ./runs)"),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """List runs."""
    from hifo.agents.report import list_runs

    rows = list_runs(root)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    t = Table("run", "problem", "model", "status", "evaluations", "best")
    for r in rows:
        t.add_row(r["run"], r["problem"], r["model"], r["status"], str(r["evaluations"]),
                  "" if r["best"] is None else f"{r['best']:.6g}")
    console.print(t)


@app.command()
def show(run: Path = typer.Argument(...), top: int = typer.Option(5, "--top"),
         prompts: bool = typer.Option(False, "--prompts", help="also print the prompts sent to the model"),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """Print a run's best candidates and its foresight timeline."""
    from hifo.agents.report import show_run

    try:
        show_run(run, top=top, prompts=prompts, as_json=as_json, console=console)
    except FileNotFoundError as exc:
        _fail(str(exc), 2)


@app.command()
def problems(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the registered evaluators (entry point group ``hifo.evaluators``)."""
    from hifo.evaluators.registry import get_evaluator, list_evaluators

    rows = []
    for name, target in sorted(list_evaluators().items()):
        try:
            info = get_evaluator(name).info()
            info["target"] = target
        except Exception as exc:  # a broken plug-in must not hide the others
            info = {"name": name, "target": target, "error": f"{type(exc).__name__}: {exc}"}
        rows.append(info)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    t = Table("name", "metric", "direction", "instance sets", "entry")
    for r in rows:
        t.add_row(r["name"], r.get("primary_metric", r.get("error", "")), r.get("direction", ""),
                  ", ".join(r.get("instance_sets", [])), r.get("entry", ""))
    console.print(t)


@app.command()
def evaluate(
    problem: str = typer.Option(..., "--problem", "-p"),
    heuristic: Path = typer.Option(..., "--heuristic", help="Python file defining the heuristic"),
    instances: Optional[str] = typer.Option(None, "--instances", help="instance set (default: the test set)"),
    entry: Optional[str] = typer.Option(None, "--entry", help="function name in the file (default: the template's)"),
    isolation: str = typer.Option("standard", "--isolation", help="strict | standard | minimal"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Score one heuristic file through the sandbox."""
    from hifo.agents.code import CodeError, check_source
    from hifo.agents.evaluation import CandidateEvaluator
    from hifo.evaluators.base import Score
    from hifo.evaluators.registry import get_evaluator
    from hifo.sandbox import IsolationUnavailable, LocalExecutor

    try:
        ev = get_evaluator(problem)
    except KeyError as exc:
        _fail(str(exc.args[0]) if exc.args else str(exc), 2)
    if not heuristic.exists():
        _fail(f"{heuristic} does not exist", 2)
    code = heuristic.read_text()
    set_name = instances or ev.default_test_set
    if set_name not in ev.instance_sets:
        _fail(f"unknown instance set {set_name!r} for {problem}; known: {', '.join(ev.instance_sets)}", 2)
    if entry and entry != ev.template.name:
        code += f"\n\n{ev.template.name} = {entry}\n"
    try:
        check_source(code, entry or ev.template.name)
        with LocalExecutor(max_workers=1, isolation=isolation) as ex:
            score = CandidateEvaluator(ev, set_name, ex).evaluate(code)
    except CodeError as exc:
        score = Score.failed(f"static check: {exc}")
    except (IsolationUnavailable, ValueError) as exc:
        _fail(str(exc), 2)
    if as_json:
        out = {"problem": problem, "instances": set_name, "feasible": score.feasible, "metrics": score.metrics}
        if not score.feasible:
            out["error"] = score.error
        print(json.dumps(out))
    else:
        if score.feasible:
            console.print(f"{problem} on '{set_name}': " + ", ".join(f"{k}={v:.6g}" for k, v in score.metrics.items())
                          + f"  ({score.wall_s:.2f} s)")
        else:
            console.print(f"[red]failed[/]: {score.error}")
    raise typer.Exit(0 if score.feasible else 1)


@app.command()
def doctor(as_json: bool = typer.Option(False, "--json"),
           no_smoke: bool = typer.Option(False, "--no-smoke", help="skip the one-token test of the embedded model")
           ) -> None:
    """Which model backends, isolation layers and optional packages this machine has; how llama.cpp was
    built, and whether the embedded model generates here (in a child process)."""
    from hifo.agents.report import doctor_report

    rep = doctor_report(smoke=not no_smoke)
    if as_json:
        print(json.dumps(rep, indent=2, default=str))
        return
    for section, items in rep.items():
        console.print(f"[bold]{section}[/]")
        for k, v in items.items():
            console.print(f"  {k}: {v}")


def main() -> None:
    app()


app.add_typer(_principles_app(), name="principles", help="Inspect and manage the knowledge base.")

if __name__ == "__main__":
    main()
