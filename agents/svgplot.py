"""Small inline-SVG charts for the HTML run report: line charts (with shaded bands, e.g. the foresight
regime per generation) and horizontal bar charts. Plain SVG text, no scripts, no external files: the
report opens offline in any browser, and the output is deterministic (tests compare it).

Written here rather than with matplotlib to keep the report free of a plotting dependency; every chart
is an ``<svg class="plot" data-plot=NAME>`` element so a test can find each one.
"""

from __future__ import annotations

import math
from html import escape
from typing import Sequence

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
BAND_COLORS = {"explore": "#cfe8ff", "exploit": "#d9f2d0", "balance": "#fff3c4", "repair": "#ffd6d6",
               "diversify": "#eadcff"}


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not math.isfinite(lo) or not math.isfinite(hi):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    start = math.ceil(lo / step) * step
    return [round(start + i * step, 12) for i in range(int((hi - start) / step) + 1)]


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _range(values: Sequence[float]) -> tuple[float, float]:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return 0.0, 1.0
    lo, hi = min(vals), max(vals)
    if hi == lo:
        pad = abs(lo) * 0.05 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def line_chart(name: str, title: str, series: Sequence[tuple[str, Sequence[float], Sequence[float | None]]], *,
               xlabel: str = "", ylabel: str = "", bands: list[tuple[float, float, str]] | None = None,
               markers_only: Sequence[str] = (), width: int = 760, height: int = 300) -> str:
    """``series``: (label, xs, ys); a None y breaks the line. ``bands``: (x0, x1, label) shaded behind."""
    ml, mr, mt, mb = 64, 140, 30, 42
    pw, ph = width - ml - mr, height - mt - mb
    xs_all = [x for _, xs, _ in series for x in xs] + [b for band in bands or [] for b in band[:2]]
    ys_all = [y for _, _, ys in series for y in ys if y is not None]
    x0, x1 = (min(xs_all), max(xs_all)) if xs_all else (0.0, 1.0)
    if x1 == x0:
        x1 = x0 + 1
    y0, y1 = _range(ys_all)
    sx = lambda x: ml + (x - x0) / (x1 - x0) * pw  # noqa: E731
    sy = lambda y: mt + ph - (y - y0) / (y1 - y0) * ph  # noqa: E731
    out = [f'<svg class="plot" data-plot="{escape(name)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<text x="{ml}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>']
    seen_bands: dict[str, str] = {}
    for bx0, bx1, label in bands or []:
        color = BAND_COLORS.get(label, "#eeeeee")
        seen_bands[label] = color
        out.append(f'<rect x="{sx(bx0):.1f}" y="{mt}" width="{max(1.0, sx(bx1) - sx(bx0)):.1f}" height="{ph}" '
                   f'fill="{color}"><title>{escape(label)}</title></rect>')
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
    for t in _ticks(y0, y1):
        out.append(f'<line x1="{ml - 4}" x2="{ml}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#888"/>'
                   f'<text x="{ml - 6}" y="{sy(t) + 4:.1f}" font-size="11" text-anchor="end">{_fmt(t)}</text>')
    for t in _ticks(x0, x1):
        out.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{mt + ph}" y2="{mt + ph + 4}" stroke="#888"/>'
                   f'<text x="{sx(t):.1f}" y="{mt + ph + 16}" font-size="11" text-anchor="middle">{_fmt(t)}</text>')
    out.append(f'<text x="{ml + pw / 2}" y="{height - 6}" font-size="12" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text x="14" y="{mt + ph / 2}" font-size="12" text-anchor="middle" '
               f'transform="rotate(-90 14 {mt + ph / 2})">{escape(ylabel)}</text>')
    for i, (label, xs, ys) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        pts = [(sx(x), sy(y)) for x, y in zip(xs, ys) if y is not None and math.isfinite(y)]
        if label in markers_only:
            out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>' for x, y in pts]
        else:
            segs: list[list[str]] = []
            cur: list[str] = []
            for x, y in zip(xs, ys):
                if y is None or not math.isfinite(y):
                    segs, cur = segs + ([cur] if cur else []), []
                else:
                    cur.append(f"{sx(x):.1f},{sy(y):.1f}")
            segs += [cur] if cur else []
            for seg in segs:
                if len(seg) == 1:  # a lone point (one generation) is a dot, not an invisible line
                    cx, cy = seg[0].split(",")
                    out.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{color}"/>')
                else:
                    out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(seg)}"/>')
        ly = mt + 14 + 18 * i
        out.append(f'<rect x="{ml + pw + 10}" y="{ly - 9}" width="12" height="10" fill="{color}"/>'
                   f'<text x="{ml + pw + 26}" y="{ly}" font-size="11">{escape(label[:18])}</text>')
    if not ys_all:
        out.append(f'<text x="{ml + pw / 2}" y="{mt + ph / 2}" font-size="13" fill="#888" '
                   f'text-anchor="middle">no data in this run</text>')
    for j, (label, color) in enumerate(seen_bands.items()):
        ly = mt + 14 + 18 * (len(series) + j) + 8
        out.append(f'<rect x="{ml + pw + 10}" y="{ly - 9}" width="12" height="10" fill="{color}" stroke="#aaa"/>'
                   f'<text x="{ml + pw + 26}" y="{ly}" font-size="11">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(name: str, title: str, labels: list[str], values: list[float], *, unit: str = "",
              width: int = 760) -> str:
    """Horizontal bars, one per label."""
    ml, mr, bar, gap, mt = 260, 80, 16, 6, 30
    height = mt + max(1, len(labels)) * (bar + gap) + 10
    vmax = max([v for v in values if math.isfinite(v)] or [1.0]) or 1.0
    pw = width - ml - mr
    out = [f'<svg class="plot" data-plot="{escape(name)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<text x="8" y="18" font-size="14" font-weight="bold">{escape(title)}</text>']
    for i, (label, v) in enumerate(zip(labels, values)):
        y = mt + i * (bar + gap)
        w = max(0.0, v) / vmax * pw if math.isfinite(v) else 0.0
        short = label if len(label) <= 40 else label[:39] + "…"
        out.append(f'<text x="{ml - 6}" y="{y + bar - 4}" font-size="11" text-anchor="end">{escape(short)}'
                   f'<title>{escape(label)}</title></text>'
                   f'<rect x="{ml}" y="{y}" width="{w:.1f}" height="{bar}" fill="{PALETTE[0]}"/>'
                   f'<text x="{ml + w + 4:.1f}" y="{y + bar - 4}" font-size="11">{_fmt(v)}{escape(unit)}</text>')
    out.append("</svg>")
    return "\n".join(out)
