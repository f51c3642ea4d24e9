"""``hifo report RUN`` and ``hifo compare RUN...``: one self-contained HTML page per run (written as
``RUN/report.html`` at the end of every CLI run, and on demand), built from ``run.sqlite`` and
``summary.json`` (read-only) through :mod:`agents.run_view`.

The page is the same one the live dashboard (``hifo ui``, :mod:`agents.dashboard`) serves: a script
(``agents/web/report.js``) draws it from one JSON document, which the report carries inline and the
dashboard serves and polls. Plots are Plotly's (plotly.js, from the bundle the ``plotly`` Python package
ships), inlined once per page so it works offline; about 4.8 MB of the file is that bundle.

What it shows: the best candidate's train and held-out test score and the baselines; best-so-far (a
running best) against evaluations and against model calls with baseline lines, generation medians and
the foresight regimes as bands; a sortable table of every candidate (code, score per instance, operator,
parents, principles in its prompt, error); the selected candidate's code, error, prompt and reply; a
genealogy; a diff between any two candidates; the foresight timeline; the principles with their text
and credit; outcomes, model tokens and sandbox time.
"""

from __future__ import annotations

from html import escape
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from hifo.agents.run_view import RunViewError, load_view, page_json

SECTIONS = """
<h1 id="title">{title}</h1><div id="live"></div>
<table id="facts" class="facts"></table>
<h2>Best so far</h2>
<div id="plot-best-evals" class="plot" data-plot="best-evals"></div>
<div id="plot-best-calls" class="plot" data-plot="best-calls"></div>
<h2>Candidates</h2>
<p class="muted">Every candidate; click a column to sort, a row to see it below.</p>
<table id="cands"><thead id="cands-head"></thead><tbody id="cands-body"></tbody></table>
<h2>Candidate</h2><div id="detail"></div>
<h2>Genealogy</h2><div id="plot-genealogy" class="plot" data-plot="genealogy"></div>
<h2>Diff between two candidates</h2>
<label>from <select id="diff-a"></select></label> <label>to <select id="diff-b"></select></label>
<pre id="diff"></pre>
<h2>Foresight timeline</h2><table id="foresight"></table>
<h2>Principles</h2><div id="plot-principles" class="plot" data-plot="principles"></div>
<table id="principles"></table>
<h2>Outcomes</h2><div id="plot-outcomes" class="plot" data-plot="outcomes"></div>
<h2>Model spend</h2><div id="plot-spend" class="plot" data-plot="spend"></div>
<h2>Sandbox time</h2><div id="plot-sandbox" class="plot" data-plot="sandbox"></div>
"""
PLOTS = ("best-evals", "best-calls", "genealogy", "principles", "outcomes", "spend", "sandbox")


def _asset(name: str) -> str:
    return resources.files("hifo.agents").joinpath("web", name).read_text(encoding="utf-8")


def plotly_js() -> str:
    """The plotly.js bundle shipped inside the ``plotly`` package (no network, no CDN)."""
    try:
        return resources.files("plotly").joinpath("package_data", "plotly.min.js").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise RuntimeError("the report's plots need the plotly package (a hifo dependency): "
                           "pip install 'plotly>=6'") from exc


def page(title: str, body: str, mode: dict[str, Any], data: Any = None, plotly_src: str | None = None) -> str:
    """One page: ``mode`` tells the script what to draw (a run, a comparison, or live from ``mode['api']``);
    ``data`` is inlined as JSON; ``plotly_src``: a URL to load plotly.js from instead of inlining it."""
    plotly = f'<script src="{escape(plotly_src)}"></script>' if plotly_src else f"<script>{plotly_js()}</script>"
    data_tag = "" if data is None else f'<script type="application/json" id="hifo-data">{page_json(data)}</script>'
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width"><style>{_asset("report.css")}</style>{plotly}</head>'
            f'<body>\n{body}\n<script type="application/json" id="hifo-mode">{page_json(mode)}</script>{data_tag}'
            f"<script>{_asset('report.js')}</script>\n</body></html>\n")


def run_page(title: str, *, data: Any = None, api: str | None = None, plotly_src: str | None = None,
             interval_ms: int = 1500) -> str:
    mode: dict[str, Any] = {"live": api is not None}
    if api is not None:
        mode.update(api=api, interval_ms=interval_ms)
    return page(title, SECTIONS.format(title=escape(title)), mode, data, plotly_src)


def render_report(run_dir: str | Path) -> str:
    try:
        data = load_view(run_dir, prompts=True)
    except RunViewError as exc:
        if "no run.sqlite" in str(exc):
            raise FileNotFoundError(str(exc)) from exc
        raise
    return run_page(f"hifo run {Path(run_dir).name}", data=data)


def write_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    path = Path(out) if out else Path(run_dir) / "report.html"
    path.write_text(render_report(run_dir), encoding="utf-8")
    return path


def render_compare(run_dirs: Sequence[str | Path]) -> str:
    runs = []
    for r in run_dirs:
        try:
            v = load_view(r, prompts=False)
        except RunViewError as exc:
            raise FileNotFoundError(str(exc)) from exc
        runs.append({"run": v["run"], "metric": v["metric"], "curve": v["curve"]})
        runs[-1]["row"] = [v["dir"], v["model"], v["status"], v["evaluations"], (v["best"] or {}).get("train")]
    metrics = {r["metric"] for r in runs}
    warn = "" if len(metrics) <= 1 else "<p><b>note:</b> these runs use different metrics.</p>"
    rows = "".join("<tr>" + "".join(f"<td>{escape('' if x is None else str(x))}</td>" for x in r["row"]) + "</tr>"
                   for r in runs)
    body = ("<h1>hifo compare</h1>" + warn + '<div id="plot-compare" class="plot" data-plot="compare"></div>'
            "<table><tr><th>run</th><th>model</th><th>status</th><th>evaluations</th><th>best</th></tr>"
            + rows + "</table>")
    return page("hifo compare", body, {"compare": True}, runs)
