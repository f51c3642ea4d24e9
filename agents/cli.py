"""The ``hifo`` command line. Heavy packages (langgraph, litellm, llama-cpp, numpy-based
evaluators) are imported inside the commands so ``hifo --help`` stays fast."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

EXIT_CODES = ("Exit codes: 0 done; 1 hifo crashed (a bug: `hifo --debug COMMAND ...` shows the traceback); "
              "2 bad input (an argument, file, configuration, run folder or knowledge base, or a model that does "
              "not answer at the start); 3 a replayed run diverged from its cassette; 4 the model failed during a "
              "run (`hifo resume RUN` continues it); 5 `hifo evaluate`: the heuristic failed or was infeasible; "
              "130 interrupted (Ctrl-C).")
app = typer.Typer(help="hifo: LLM-driven automated heuristic design (HiFo-style agent, sandboxed evaluators).",
                  epilog=EXIT_CODES, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None)  # help text verbatim: "[default: 4]" is not markup
console = Console(soft_wrap=True, emoji=False)
err = Console(stderr=True, soft_wrap=True, emoji=False)


def _principles_app() -> typer.Typer:
    from hifo.knowledge_base.cli import principles_app

    return principles_app


def _fail(msg: str, code: int = 1) -> None:
    from rich.text import Text

    # the message is shown verbatim: it carries paths, prompt text and candidates' errors ("list[float]")
    err.print(Text.assemble(("error:", "bold red"), " ", msg))
    raise typer.Exit(code)


def _one_line(exc: BaseException | str) -> str:
    return " ".join(str(exc).split())


_DEBUG = {"on": False}


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            console.print(f"hifo {version('hifo')}")
        except PackageNotFoundError:
            console.print("hifo (not installed)")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit"),
          debug: bool = typer.Option(False, "--debug", help="show tracebacks instead of one-line errors")) -> None:
    """hifo: LLM-driven automated heuristic design (HiFo-style agent, sandboxed evaluators)."""
    _DEBUG["on"] = debug


def _interrupted(run_dir: Path | None) -> None:
    where = f"; continue it with: hifo resume {run_dir}" if run_dir else ""
    err.print(f"[bold yellow]interrupted[/]{where}")
    raise typer.Exit(130)


@app.command()
def run(
    problem: Optional[str] = typer.Option(None, "--problem", "-p", help="evaluator name (see `hifo problems`) or "
                                          "path/to/file.py:Class; may also come from --config"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="local (Qwen2.5-Coder-1.5B) | local:gemma-270m | "
                                        "local:PATH.gguf | replay:PATH | openai/MODEL[@BASE_URL] | any litellm "
                                        "provider string (default $HIFO_MODEL or local)"),
    generations: Optional[int] = typer.Option(
        None, "--generations", "-g", help="evolved generations after generation 0 (the baselines and the "
        "initial model samples), so N+1 in all; -g 0 runs generation 0 only [default: 4]"),
    population: Optional[int] = typer.Option(None, "--population", "-n", help="[default: 6]"),
    offspring: Optional[int] = typer.Option(None, "--offspring", help="[default: the population]"),
    max_evaluations: Optional[int] = typer.Option(None, "--max-evaluations"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="USD"),
    max_calls: Optional[int] = typer.Option(None, "--max-calls"),
    max_wall: Optional[float] = typer.Option(None, "--max-wall", help="seconds"),
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="[default: $HIFO_RUNS/PROBLEM-TIME-ID]"),
    kb: Optional[Path] = typer.Option(None, "--kb", help="knowledge base file "
                                    "[default: $HIFO_KB or ~/.local/share/hifo/knowledge.sqlite]"),
    seed: Optional[int] = typer.Option(None, "--seed", help="[default: 0]"),
    train_set: Optional[str] = typer.Option(None, "--train-set", help="[default: the evaluator's]"),
    test_set: Optional[str] = typer.Option(None, "--test-set", help="[default: the evaluator's]"),
    workers: Optional[int] = typer.Option(None, "--workers", help="[default: the CPU count]"),
    record: Optional[Path] = typer.Option(None, "--record", help="write a replay cassette of every model call"),
    no_distill: bool = typer.Option(False, "--no-distill", help="no model-written principles (contrast ones still)"),
    model_principles: Optional[str] = typer.Option(None, "--model-principles",
                                                   help="auto (default: on for chat models, off for base models) | on | off"),
    isolation: Optional[str] = typer.Option(None, "--isolation", help="strict | standard (default) | minimal"),
    executor: Optional[str] = typer.Option(None, "--executor", help="local (default) | ray"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray address: auto or ray://HOST:10001"),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file with run settings (a [run] table)"),
    no_cache: bool = typer.Option(False, "--no-cache",
                                  help="keep no response cache in the run folder (it lets `hifo resume` replay an "
                                       "interrupted generation's replies instead of asking the model again)"),
    no_check: bool = typer.Option(False, "--no-check", help="skip the pre-flight call to the model"),
    target: Optional[float] = typer.Option(None, "--target", help="stop once the best reaches this metric value"),
    patience: Optional[int] = typer.Option(None, "--patience", help="stop after N generations without a new best"),
    repair: Optional[bool] = typer.Option(None, "--repair/--no-repair",
                                          help="send a failing candidate's error back to the model once [default: on]"),
    probe: Optional[bool] = typer.Option(None, "--probe/--no-probe",
                                         help="novelty by behaviour too: a candidate that decides as an earlier one "
                                              "on the problem's probe instances is re-drawn [default: off]"),
    redraw_feedback: Optional[bool] = typer.Option(None, "--redraw-feedback/--no-redraw-feedback",
                                                   help="a re-draw shows the model the repeated reply and why it is "
                                                        "not new [default: off]"),
) -> None:
    """Launch a heuristic search."""
    import tomllib

    from pydantic import ValidationError

    from hifo.agents.config import explain_validation_error, load_config
    from hifo.evaluators.registry import is_file_spec

    if problem and is_file_spec(problem):  # absolute, so `hifo resume` finds it from anywhere
        path_s, _, cls = problem.rpartition(":")
        problem = f"{Path(path_s).expanduser().resolve()}:{cls}"
    overrides = dict(problem=problem, model=model, generations=generations, population=population,
                     offspring=offspring, max_evaluations=max_evaluations, max_cost=max_cost, max_calls=max_calls,
                     max_wall_s=max_wall, run_dir=str(run_dir) if run_dir else None, kb=str(kb) if kb else None,
                     seed=seed, train_set=train_set, test_set=test_set, workers=workers,
                     record=str(record) if record else None, distill=False if no_distill else None,
                     model_principles=model_principles, isolation=isolation, executor=executor, address=address,
                     llm_cache=False if no_cache else None, target=target, patience=patience,
                     repair=repair, probe_novelty=probe,
                     redraw_feedback=redraw_feedback)
    try:
        cfg = load_config(config, overrides)
    except ValidationError as exc:
        if any(e.get("type") == "missing" and e.get("loc") == ("problem",) for e in exc.errors()):
            _fail("--problem is required (or `problem` in the --config file's [run] table)", 2)
        _fail(_one_line(explain_validation_error(exc)), 2)
    except (FileNotFoundError, IsADirectoryError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        _fail(f"--config: {_one_line(exc)}", 2)
    from hifo.agents.preflight import PreflightError, check_inputs, check_model

    try:
        check_inputs(cfg)
        if not no_check:
            check_model(cfg.model)
    except PreflightError as exc:
        _fail(_one_line(exc), 2)
    console.print(f"[bold]hifo run[/] problem={cfg.problem} model={cfg.model} generations={cfg.generations} "
                  f"population={cfg.population}")
    from hifo.agents.graph import start_run

    _drive(lambda on_event: start_run(cfg, on_event=on_event), cfg, None)


def _drive(go, cfg, run_dir: Optional[Path]) -> None:
    """Run ``go(on_event)`` under the live progress display; every way it can end is one message."""
    from hifo.agents.graph import RunError
    from hifo.agents.llm.base import ModelUnavailable
    from hifo.agents.llm.replay import ReplayMismatch
    from hifo.agents.progress import RunProgress
    from hifo.sandbox import IsolationUnavailable

    prog = RunProgress(console, cfg.generations, run_dir=run_dir, max_wall_s=cfg.max_wall_s)
    try:
        with prog:
            path, summary = go(prog.on_event)
    except KeyboardInterrupt:
        _interrupted(prog.run_dir)
    except ModelUnavailable as exc:
        where = (f"; once the model answers, continue with: hifo resume {prog.run_dir} (or with another model: "
                 f"hifo resume {prog.run_dir} --model NAME)") if prog.run_dir else ""
        _fail(f"the run stopped: {_one_line(exc)}{where}", 4)
    except ReplayMismatch as exc:
        _fail(_one_line(exc), 3)
    except (RunError, IsolationUnavailable, ValueError, FileNotFoundError) as exc:
        _fail(_one_line(exc), 2)
    except Exception as exc:  # noqa: BLE001 - a crash: the run is marked 'failed' and can be resumed
        if _DEBUG["on"]:
            raise
        where = f"; after fixing the cause: hifo resume {prog.run_dir}" if prog.run_dir else ""
        _fail(f"the run crashed: {type(exc).__name__}: {_one_line(exc)}{where} (`hifo --debug COMMAND ...` shows "
              "the traceback)", 1)
    _print_summary(path, summary)


def _print_summary(path: Path, summary: dict) -> None:
    from hifo.agents.progress import format_spend, spend

    best = summary.get("best") or {}
    console.print(f"\n[bold]done[/] ({summary.get('stop_reason')}); {summary.get('evaluations')} evaluations")
    if best:
        console.print(f"best {summary['primary_metric']} on '{summary['train_set']}': [bold green]{best['objective']:.6g}[/]"
                      f" (candidate {best['id']}, generation {best['generation']}, {best['operator']})")
        if best.get("test", {}).get("skipped"):
            console.print(f"test set '{best['test']['set']}' not evaluated: {best['test']['skipped']}")
        elif best.get("test"):
            test = best["test"]
            note = ""
            if test.get("secret"):  # drawn for this run: no published figure to compare with, so its own baseline
                base = test.get("baseline") or {}
                measured = (f"; {base['name']} on the same draw: {base['objective']:.6g}" if base.get("objective") is not None
                            else f"; {base['name']} not scored on it: {base.get('skipped') or base.get('error')}"
                            if base else "")
                note = f" (a secret draw for this run{measured})"
            value = f"{test['objective']:.6g}" if isinstance(test.get("objective"), (int, float)) else test.get("objective")
            console.print(f"best on test set '{test['set']}': {value}{note}", markup=False)
        if best.get("rescore") and not best["rescore"].get("agrees"):
            r = best["rescore"]
            from rich.markup import escape

            console.print("[yellow]warning[/]: the best candidate scored differently on node "
                          + escape(f"{r.get('node')} than on {r.get('first_node')} "
                                   f"({r.get('metrics_differ') or r.get('error')})"))
    for name, value in (summary.get("baselines") or {}).items():
        console.print(f"baseline {name}: {value:.6g}")
    o = summary.get("outcomes")
    if o:
        console.print(f"model-written candidates: {o['model_candidates']}, valid {o['valid']}, distinct valid "
                      f"(by objective) {o['distinct_valid']}, better than the best baseline {o['better_than_baseline']}"
                      f", duplicates not evaluated {o['duplicates']} ({o.get('behaviour_duplicates', 0)} by behaviour)")
    console.print(f"spend: {format_spend(spend(path))}")
    try:
        from hifo.agents.html_report import write_report

        report = write_report(path)
        console.print(f"report: [bold]{report}[/]")
    except Exception as exc:  # noqa: BLE001 - the run itself is done and saved; say why there is no report
        from rich.text import Text

        err.print(Text.assemble(("warning:", "yellow"), f" no HTML report: {_one_line(exc)}"))
    console.print(f"results: [bold]{path}[/] (best.py, summary.json, run.sqlite, events.jsonl, report.html)")


@app.command()
def resume(run: Path = typer.Argument(..., help="run directory"),
           generations: Optional[int] = typer.Option(None, "--generations", "-g", help="new total of generations"),
           max_evaluations: Optional[int] = typer.Option(None, "--max-evaluations"),
           max_cost: Optional[float] = typer.Option(None, "--max-cost", help="USD"),
           max_calls: Optional[int] = typer.Option(None, "--max-calls"),
           max_wall: Optional[float] = typer.Option(None, "--max-wall", help="seconds"),
           model: Optional[str] = typer.Option(None, "--model", "-m",
                                               help="continue with another model (the same names as hifo run "
                                                    "--model; the run's sampling settings stay); recorded in "
                                                    "config.json")) -> None:
    """Continue a killed, interrupted or failed run from its last checkpoint; with new limits, also extend
    a finished one (e.g. `hifo resume RUN --generations 8`); `--model` continues with another model (e.g.
    after the run stopped because its model was unreachable)."""
    from pydantic import ValidationError

    from hifo.agents.config import RunConfig
    from hifo.agents.graph import resume_run
    from hifo.agents.preflight import PreflightError, check_inputs

    if not (run / "config.json").is_file():
        _fail(f"{run} is not a hifo run directory (no config.json)", 2)
    if not (run / "run.sqlite").is_file():
        _fail(f"{run} holds no run store (its start failed); start a new run instead", 2)
    from hifo.agents.config import explain_validation_error

    extend = {k: v for k, v in dict(generations=generations, max_evaluations=max_evaluations, max_cost=max_cost,
                                    max_calls=max_calls, max_wall_s=max_wall, model=model).items() if v is not None}
    try:
        cfg = RunConfig.model_validate_json((run / "config.json").read_text())
    except ValidationError as exc:
        _fail(f"{run}/config.json is not a valid run configuration: {_one_line(exc)}", 2)
    try:
        cfg = RunConfig.model_validate({**cfg.model_dump(), **extend})
        check_inputs(cfg)
    except ValidationError as exc:
        _fail(_one_line(explain_validation_error(exc)), 2)
    except PreflightError as exc:
        _fail(f"cannot resume {run}: {_one_line(exc)}", 2)
    _drive(lambda on_event: resume_run(run, on_event=on_event, extend=extend or None), cfg, run)


@app.command()
def runs(root: Optional[Path] = typer.Option(None, "--root", help="only the runs in this directory [default: "
                                             "$HIFO_RUNS or ./runs, and every run made elsewhere with --run-dir]"),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """List runs with their status (running, finished, interrupted, failed, diverged) and spend."""
    from hifo.agents.report import list_runs, print_runs

    rows = list_runs(root)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    print_runs(rows, console)


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


def main() -> None:
    if len(sys.argv) > 1 and not {"--help", "-h", "--version"} & set(sys.argv[1:]):
        # before numpy or torch load: this process scores candidates on the kernels the sandbox child is
        # pinned to, so a fitness is the same number on every x86-64 machine (issue 26)
        from hifo.sandbox._numeric import pin_this_process

        pin_this_process()
    from hifo.agents.rundb import RunStoreError

    try:
        app()
    except RunStoreError as exc:  # a damaged or missing run store: the path and what is wrong with it, not a crash
        if _DEBUG["on"] or "--debug" in sys.argv:
            raise
        err.print(f"error: {_one_line(exc)}", markup=False)
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - one line for the user; --debug shows the traceback
        if _DEBUG["on"] or "--debug" in sys.argv:
            raise
        err.print(f"error: {type(exc).__name__}: {_one_line(exc)} (rerun as `hifo --debug COMMAND ...` for the "
                  "traceback)", markup=False)
        sys.exit(1)


from hifo.agents import cli_tools as _tools  # noqa: E402 - light: typer and rich only

app.command("evaluate")(_tools.evaluate)
app.add_typer(_principles_app(), name="principles", help="Inspect and manage the knowledge base.")
app.command("problems")(_tools.problems)
app.command("doctor")(_tools.doctor)
app.command("report")(_tools.report)
app.command("compare")(_tools.compare)
app.command("ui")(_tools.ui)
app.command("new-problem")(_tools.new_problem)
from hifo.agents.cli_data import data_app  # noqa: E402 - light: typer and rich only

app.add_typer(data_app, name="data")

if __name__ == "__main__":
    main()
