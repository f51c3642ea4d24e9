"""The ``hifo evaluate``, ``hifo problems``, ``hifo doctor``, ``hifo report``, ``hifo compare``, ``hifo ui`` and
``hifo new-problem`` commands (registered on the app in :mod:`agents.cli`). Kept apart so ``cli.py`` stays short;
imports stay inside the commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

console = Console(soft_wrap=True, emoji=False)
err = Console(stderr=True, soft_wrap=True, emoji=False)


def _fail(msg: str, code: int = 2) -> None:
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(' '.join(msg.split()))}")
    raise typer.Exit(code)


def _one_line(exc: BaseException | str) -> str:
    return " ".join(str(exc).split())


def _fail_verbatim(msg: str, code: int) -> None:
    from rich.text import Text

    # the message is shown verbatim: it carries paths and candidates' errors ("list[float]")
    err.print(Text.assemble(("error:", "bold red"), " ", msg))
    raise typer.Exit(code)


def _open(path: Path) -> None:
    import webbrowser

    webbrowser.open(path.resolve().as_uri())


def report(run: Path = typer.Argument(..., help="run directory"),
           out: Optional[Path] = typer.Option(None, "--out", "-o", help="HTML file [default: RUN/report.html]"),
           open_: bool = typer.Option(False, "--open", help="open it in the default browser")) -> None:
    """Write a self-contained HTML report of a run (plots inline; works offline)."""
    from hifo.agents.html_report import write_report
    from hifo.agents.run_view import RunViewError

    try:
        path = write_report(run, out)
    except (FileNotFoundError, RunViewError) as exc:
        _fail(str(exc))
    console.print(f"report: [bold]{path}[/]")
    if open_:
        _open(path)


def compare(runs: List[Path] = typer.Argument(..., help="two or more run directories"),
            out: Path = typer.Option(Path("compare.html"), "--out", "-o", help="HTML file"),
            open_: bool = typer.Option(False, "--open", help="open it in the default browser")) -> None:
    """Put several runs' best-so-far curves on one HTML page."""
    from hifo.agents.html_report import render_compare
    from hifo.agents.run_view import RunViewError

    try:
        html = render_compare(runs)
    except (FileNotFoundError, RunViewError) as exc:
        _fail(str(exc))
    out.write_text(html, encoding="utf-8")
    console.print(f"comparison of {len(runs)} run(s): [bold]{out}[/]")
    if open_:
        _open(out)


def ui(path: Optional[Path] = typer.Argument(None, help="a run folder, or a folder of runs [default: $HIFO_RUNS or ./runs]"),
       port: int = typer.Option(8765, "--port", help="port to serve on (0: any free port)"),
       host: str = typer.Option("127.0.0.1", "--host", help="address to serve on; only loopback addresses unless "
                                "--allow-remote"),
       allow_remote: bool = typer.Option(False, "--allow-remote", help="serve on a non-loopback --host: the pages "
                                         "show code, prompts and paths to anyone who can reach them, with no login"),
       open_: bool = typer.Option(False, "--open", help="open it in the default browser")) -> None:
    """Serve a live dashboard of a run (or of every run in a folder) on 127.0.0.1; it follows a run while it works."""
    from hifo.agents.config import default_runs_dir
    from hifo.agents.dashboard import DashboardError, make_server, url_of

    try:
        server = make_server(path if path is not None else default_runs_dir(), host, port, allow_remote=allow_remote)
    except DashboardError as exc:
        _fail(str(exc))
    url = url_of(server)
    console.print(f"hifo ui: serving {server.RequestHandlerClass.site.root} at {url} (Ctrl-C to stop)",  # type: ignore[attr-defined]
                  markup=False, highlight=False)
    if open_:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        console.print("hifo ui: stopped", markup=False, highlight=False)
    finally:
        server.server_close()


def new_problem(name: str = typer.Argument(..., help="problem name, a lower-case identifier (my_problem)"),
                directory: Path = typer.Option(Path("."), "--dir", help="where to write the files")) -> None:
    """Write a working evaluator skeleton (NAME.py) and its test (test_NAME.py)."""
    from hifo.agents.scaffold import scaffold

    try:
        ev_file, test_file, cls = scaffold(name, directory)
    except (ValueError, FileExistsError) as exc:
        _fail(str(exc))
    console.print(f"wrote {ev_file} and {test_file}\n"
                  f"try it:  hifo evaluate --problem {ev_file}:{cls} --heuristic my_rule.py\n"
                  f"         hifo run --problem {ev_file}:{cls}\n"
                  f"test it: pytest {test_file}")


def problems(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the registered evaluators (entry point group ``hifo.evaluators``)."""
    from hifo.evaluators.registry import evaluator_infos

    rows = evaluator_infos()  # cached per source state: under a second after the first listing
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    t = Table("name", "metric", "direction", "instance sets", "entry")
    for r in rows:
        t.add_row(r["name"], r.get("primary_metric", r.get("error", "")), r.get("direction", ""),
                  ", ".join(r.get("instance_sets", [])), r.get("entry", ""))
    for col in t.columns:
        col.overflow = "fold"
    console.print(t)


def doctor(as_json: bool = typer.Option(False, "--json"),
           no_smoke: bool = typer.Option(False, "--no-smoke", help="skip the one-token test of the embedded model"),
           model: Optional[str] = typer.Option(None, "--model", "-m", help="also make the pre-flight call "
                                               "`hifo run` makes to this model (exit 2 when it fails)"),
           determinism: bool = typer.Option(False, "--determinism", help="instead: score every evaluator's "
                                            "baselines on train under this CPU's kernels, an AVX2-only machine's "
                                            "and beside a CPU hog, and compare with the declared tolerances "
                                            "(minutes per evaluator; exit 1 on a difference)"),
           det_problems: Optional[list[str]] = typer.Option(None, "--problem", "-p", help="with --determinism: "
                                                            "only these evaluators (repeatable)"),
           ) -> None:
    """Which model backends, isolation layers and optional packages this machine has; how llama.cpp was
    built, and whether the embedded model generates here (in a child process). With --determinism:
    whether every fitness is the same number on every machine (hifo.evaluators.determinism)."""
    if determinism:
        from hifo.evaluators import determinism as det

        raise typer.Exit(det.main([*(det_problems or []), "--configs", *det.CONFIGS]))
    from hifo.agents.report import doctor_report

    model_error = None
    rep = doctor_report(smoke=not no_smoke)
    if model is not None:  # the report is printed whatever the model check says; its failure is the exit code
        from hifo.agents.preflight import PreflightError, check_model

        try:
            note = check_model(model, hint="")
            rep["model check"] = {"model": model, "result": note or "a local or replay model (no call needed)"}
        except (PreflightError, ValueError) as exc:
            model_error = _one_line(exc)
            rep["model check"] = {"model": model, "result": f"failed: {model_error}"}
    if as_json:
        print(json.dumps(rep, indent=2, default=str))
    else:
        for section, items in rep.items():
            console.print(section, style="bold", markup=False, highlight=False)
            for k, v in items.items():
                console.print(f"  {k}: {v}", markup=False, highlight=False)
    if model_error is not None:
        raise typer.Exit(2)


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
    from hifo.sandbox import IsolationUnavailable, LocalExecutor

    from hifo.agents.preflight import load_problem

    try:
        ev = load_problem(problem)
    except ValueError as exc:
        _fail_verbatim(_one_line(exc), 2)
    from hifo.agents.preflight import PreflightError, read_heuristic

    try:
        code = read_heuristic(heuristic)
    except PreflightError as exc:
        _fail_verbatim(_one_line(exc), 2)
    set_name = instances or ev.default_test_set
    if set_name not in ev.instance_sets:
        _fail_verbatim(f"--instances: unknown instance set {set_name!r} for {problem}; known: {', '.join(ev.instance_sets)}", 2)
    if entry and entry != ev.template.name:
        code += f"\n\n{ev.template.name} = {entry}\n"
    try:
        check_source(code, entry or ev.template.name)
        with LocalExecutor(max_workers=1, isolation=isolation) as ex:
            score = CandidateEvaluator(ev, set_name, ex).evaluate(code)
    except CodeError as exc:
        score = Score.failed(f"static check: {exc}")
    except (IsolationUnavailable, ValueError) as exc:
        _fail_verbatim(str(exc), 2)
    secret = ev.seeds_secret(set_name)  # drawn for this invocation: another run gives another draw
    if as_json:
        out = {"problem": problem, "instances": set_name, "feasible": score.feasible, "metrics": score.metrics,
               "secret_draw": secret}
        if not score.feasible:
            out["error"] = score.error
        print(json.dumps(out))
    else:
        if score.feasible:
            console.print(f"{problem} on '{set_name}': " + ", ".join(f"{k}={v:.6g}" for k, v in score.metrics.items())
                          + f"  ({score.wall_s:.2f} s)", markup=False)
            if secret:
                console.print(f"('{set_name}' is drawn from a secret for each invocation, so this figure has no stored "
                              "counterpart: compare heuristics in one `hifo run`, or on a published set via --instances)",
                              markup=False)
        else:
            from rich.text import Text

            console.print(Text.assemble(("failed", "red"), f": {score.error}"))
    raise typer.Exit(0 if score.feasible else 5)
