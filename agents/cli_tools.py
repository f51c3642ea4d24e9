"""The ``hifo report``, ``hifo compare``, ``hifo ui`` and ``hifo new-problem`` commands (registered on the app in
:mod:`agents.cli`). Kept apart so ``cli.py`` stays short; imports stay inside the commands."""

from __future__ import annotations

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
