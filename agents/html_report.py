"""``hifo report RUN`` and ``hifo compare RUN...``: one self-contained HTML page per run (written as
``RUN/report.html`` at the end of every CLI run, and on demand), built only from ``run.sqlite``.

Plots (inline SVG, see :mod:`agents.svgplot`): best-so-far and per-generation median of the primary
metric against evaluations, with the foresight regime of each generation as coloured bands;
evaluation outcomes by reason; utility of each recalled principle over the generations; model tokens
and cost per generation; sandbox time per candidate. Tables: the lineage of the best candidate
(operator, principles in its prompt, the code diff from its parent at each step).
"""

from __future__ import annotations

import difflib
import json
import statistics
import time
from collections import Counter, defaultdict
from html import escape
from pathlib import Path
from typing import Any, Sequence

from hifo.agents.svgplot import bar_chart, line_chart

CSS = ("body{font-family:system-ui,sans-serif;margin:24px;max-width:1000px;color:#222}"
       "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;"
       "vertical-align:top}pre{background:#f6f6f6;padding:6px;font-size:12px;white-space:pre-wrap;max-width:640px}"
       ".add{color:#186618}.del{color:#a11}h2{margin-top:28px}")


class RunData:
    """What the report needs from one run store (read-only)."""

    def __init__(self, run_dir: str | Path):
        from hifo.agents.rundb import RunStore

        self.dir = Path(run_dir)
        if not (self.dir / "run.sqlite").is_file():
            raise FileNotFoundError(f"{self.dir} is not a hifo run directory (no run.sqlite)")
        store = RunStore(self.dir / "run.sqlite", readonly=True)
        try:
            self.config = store.get_meta("config", {}) or {}
            self.status = store.get_meta("status", "?")
            self.stop_reason = store.get_meta("stop_reason")
            self.cands = store.candidates(order="timeline")
            self.prompts = store.prompt_usage()
            self.foresight = store.foresight()
            self.recalls = store.events("recall")
        finally:
            store.close()
        summary = self.dir / "summary.json"
        self.summary = json.loads(summary.read_text()) if summary.is_file() else {}
        self.metric = self.summary.get("primary_metric", "objective")
        self.evaluated = [c for c in self.cands if c.status == "evaluated"]

    def best_curve(self) -> tuple[list[float], list[float | None]]:
        """Best-so-far primary metric after each evaluation (None until a feasible one)."""
        xs: list[float] = []
        ys: list[float | None] = []
        best: float | None = None  # fitness of the best so far
        best_objective: float | None = None
        for i, c in enumerate(self.evaluated, 1):
            if c.ok and c.fitness is not None and (best is None or c.fitness > best):
                best, best_objective = c.fitness, c.objective
            xs.append(float(i))
            ys.append(best_objective)
        return xs, ys

    def gen_spans(self) -> dict[int, tuple[float, float]]:
        spans: dict[int, list[int]] = defaultdict(list)
        for i, c in enumerate(self.evaluated, 1):
            spans[c.generation].append(i)
        return {g: (min(v) - 0.5, max(v) + 0.5) for g, v in spans.items()}

    def medians(self) -> tuple[list[float], list[float | None]]:
        spans = self.gen_spans()
        by_gen: dict[int, list[float]] = defaultdict(list)
        for c in self.evaluated:
            if c.ok and c.objective is not None:
                by_gen[c.generation].append(c.objective)
        gens = sorted(spans)
        return ([spans[g][1] - 0.5 for g in gens],
                [statistics.median(by_gen[g]) if by_gen[g] else None for g in gens])

    def best(self) -> Any:
        ok = [c for c in self.evaluated if c.ok]
        return max(ok, key=lambda c: c.fitness or 0.0) if ok else None  # ok: fitness is set


def _reason(c: Any) -> str:
    if c.status == "evaluated":
        if c.ok:
            return "feasible"
        text = (c.error or "infeasible").split(":")[0]
        return f"failed: {text[:40]}"
    return f"{c.status}: {(c.error or '').split(':')[0][:40]}".rstrip(": ")


def _fitness_plot(d: RunData) -> str:
    xs, ys = d.best_curve()
    mx, my = d.medians()
    spans = d.gen_spans()
    regimes = {f["generation"]: f["regime"] for f in d.foresight}
    bands = [(spans[g][0], spans[g][1], regimes.get(g, "baseline" if g == 0 else "?")) for g in sorted(spans)]
    return line_chart("fitness", f"{d.metric}: best so far and generation median", [
        ("best so far", xs, ys), ("generation median", mx, my)], xlabel="evaluations", ylabel=d.metric, bands=bands)


def _outcomes_plot(d: RunData) -> str:
    counts = Counter(_reason(c) for c in d.cands if c.operator != "baseline")
    labels = [k for k, _ in counts.most_common(12)]
    return bar_chart("outcomes", "evaluation outcomes by reason (offspring)", labels, [counts[k] for k in labels])


def _principles_plot(d: RunData) -> tuple[str, list[tuple[str, str, int]]]:
    """Utility of each recalled principle per generation (from the recall events) and a usage table."""
    util: dict[str, dict[int, float]] = defaultdict(dict)
    texts: dict[str, str] = {}
    for ev in d.recalls:
        data = ev.get("data", ev)
        for p in data.get("principles", []):
            util[str(p["id"])][int(data.get("generation", 0))] = float(p["utility"])
            texts[str(p["id"])] = p["text"]
    uses = Counter(str(pid) for c in d.cands for pid in c.principle_ids)
    top = [pid for pid, _ in uses.most_common(8)] or sorted(util)[:8]
    series = [(f"#{pid}", [float(g) for g in sorted(util[pid])], [util[pid][g] for g in sorted(util[pid])])
              for pid in top if util.get(pid)]
    svg = line_chart("principles", "utility of recalled principles per generation", series,
                     xlabel="generation", ylabel="utility")
    return svg, [(pid, texts.get(pid, ""), uses[pid]) for pid in top]


def _cost_plot(d: RunData) -> tuple[str, str]:
    tokens: dict[int, int] = defaultdict(int)
    cost: dict[int, float] = defaultdict(float)
    for row in d.prompts:
        u = row["usage"]
        tokens[row["generation"]] += int(u.get("prompt_tokens") or 0) + int(u.get("completion_tokens") or 0)
        cost[row["generation"]] += float(u.get("cost_usd") or 0.0)
    gens = sorted(tokens)
    svg = bar_chart("cost", "model tokens per generation", [f"generation {g}" for g in gens],
                    [float(tokens[g]) for g in gens])
    table = "".join(f"<tr><td>{g}</td><td>{tokens[g]:,}</td><td>${cost[g]:.4f}</td></tr>" for g in gens)
    return svg, f"<table><tr><th>generation</th><th>tokens</th><th>cost</th></tr>{table}</table>"


def _sandbox_plot(d: RunData) -> str:
    xs = [float(i) for i, _ in enumerate(d.evaluated, 1)]
    ys = [c.wall_s for c in d.evaluated]
    return line_chart("sandbox", "sandbox time per candidate", [("seconds", xs, ys)], xlabel="evaluation",
                      ylabel="seconds", markers_only=("seconds",))


def _diff_html(old: str, new: str) -> str:
    lines = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), "parent", "child", lineterm="", n=2):
        cls = "add" if line.startswith("+") and not line.startswith("+++") else (
            "del" if line.startswith("-") and not line.startswith("---") else "")
        lines.append(f'<span class="{cls}">{escape(line)}</span>' if cls else escape(line))
    return "<pre>" + "\n".join(lines) + "</pre>"


def _lineage(d: RunData) -> str:
    by_id = {c.id: c for c in d.cands}
    chain: list[Any] = []
    c = d.best()
    while c is not None and len(chain) < 50:
        chain.append(c)
        c = by_id.get(c.parents[0]) if c.parents else None
    rows = []
    for c in chain:
        parent = by_id.get(c.parents[0]) if c.parents else None
        diff = _diff_html(parent.code, c.code) if parent else f"<pre>{escape(c.code)}</pre>"
        obj = "" if c.objective is None else f"{c.objective:.6g}"
        rows.append(f"<tr><td>{escape(c.id)}</td><td>{c.generation}</td><td>{escape(c.operator)}</td>"
                    f"<td>{obj}</td><td>{escape(', '.join(map(str, c.principle_ids)))}</td><td>{diff}</td></tr>")
    return ("<table><tr><th>candidate</th><th>gen</th><th>operator</th><th>" + escape(d.metric)
            + "</th><th>principles in prompt</th><th>change from parent</th></tr>" + "".join(rows) + "</table>")


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n")


def render_report(run_dir: str | Path) -> str:
    from hifo.agents.progress import format_spend, spend

    d = RunData(run_dir)
    best = d.best()
    head = [f"<h1>hifo run {escape(d.dir.name)}</h1><table>"]
    for k, v in [("problem", d.config.get("problem")), ("model", d.config.get("model")), ("status", d.status),
                 ("stop reason", d.stop_reason), ("evaluations", len(d.evaluated)),
                 ("best", None if best is None else f"{best.objective:.6g} ({best.id}, generation {best.generation})"),
                 ("spend", format_spend(spend(d.dir))), ("written", time.strftime("%Y-%m-%d %H:%M:%S"))]:
        head.append(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>")
    head.append("</table>")
    p_svg, p_rows = _principles_plot(d)
    c_svg, c_table = _cost_plot(d)
    p_table = "".join(f"<tr><td>#{escape(pid)}</td><td>{n}</td><td>{escape(t)}</td></tr>" for pid, t, n in p_rows)
    body = "\n".join([
        *head, "<h2>Fitness</h2>", _fitness_plot(d), "<h2>Outcomes</h2>", _outcomes_plot(d),
        "<h2>Principles</h2>", p_svg,
        f"<table><tr><th>principle</th><th>prompts using it</th><th>text</th></tr>{p_table}</table>",
        "<h2>Model spend</h2>", c_svg, c_table, "<h2>Sandbox time</h2>", _sandbox_plot(d),
        "<h2>Lineage of the best candidate</h2>", _lineage(d) if best else "<p>no feasible candidate</p>"])
    return _page(f"hifo run {d.dir.name}", body)


def write_report(run_dir: str | Path, out: str | Path | None = None) -> Path:
    path = Path(out) if out else Path(run_dir) / "report.html"
    path.write_text(render_report(run_dir), encoding="utf-8")
    return path


def render_compare(run_dirs: Sequence[str | Path]) -> str:
    runs = [RunData(r) for r in run_dirs]
    series, rows = [], []
    for d in runs:
        xs, ys = d.best_curve()
        series.append((d.dir.name, xs, ys))
        b = d.best()
        rows.append(f"<tr><td>{escape(str(d.dir))}</td><td>{escape(str(d.config.get('model')))}</td>"
                    f"<td>{escape(str(d.status))}</td><td>{len(d.evaluated)}</td>"
                    f"<td>{'' if b is None else f'{b.objective:.6g}'}</td></tr>")
    metrics = {d.metric for d in runs}
    svg = line_chart("compare", "best so far against evaluations", series, xlabel="evaluations",
                     ylabel=", ".join(sorted(metrics)))
    warn = "" if len(metrics) <= 1 else "<p><b>note:</b> these runs use different metrics.</p>"
    body = ("<h1>hifo compare</h1>" + warn + svg + "<table><tr><th>run</th><th>model</th><th>status</th>"
            "<th>evaluations</th><th>best</th></tr>" + "".join(rows) + "</table>")
    return _page("hifo compare", body)
