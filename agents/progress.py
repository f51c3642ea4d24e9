"""What ``hifo run`` / ``hifo resume`` show while a run goes: one line per step (foresight, propose,
each evaluation, select, distill) and, on a terminal, a live ``rich.progress`` bar under them with the
generation, evaluations done and pending, best so far, regime, model calls, tokens, cost, elapsed time
and the remaining time (estimated from the evaluations done, and the wall budget when one is set).

Spend is read from the run store (``prompts.usage``), so it includes the distill calls and survives a
resume; the live bar re-reads it every :data:`SPEND_REFRESH_S` seconds, so the counters move while the model
calls of a step run; the progress display never touches the model client.
"""

from __future__ import annotations

import json
import sqlite3
import shlex
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

SPEND_REFRESH_S = 2.0  # how often the live bar re-reads the model calls, tokens and cost from the run store


def spend(run_dir: str | Path) -> dict[str, float]:
    """Model calls, tokens and cost recorded so far in ``RUN_DIR/run.sqlite``."""
    out = {"calls": 0, "errors": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
    db = Path(run_dir) / "run.sqlite"
    if not db.exists():
        return out
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        for (usage,) in con.execute("SELECT usage FROM prompts"):
            u = json.loads(usage or "{}")
            out["calls"] += 1
            out["errors"] += 1 if "error" in u else 0
            out["prompt_tokens"] += int(u.get("prompt_tokens") or 0)
            out["completion_tokens"] += int(u.get("completion_tokens") or 0)
            out["cost_usd"] += float(u.get("cost_usd") or 0.0)
    except sqlite3.Error:
        pass  # the store is being created; the next event reads it again
    finally:
        con.close()
    return out


def format_spend(s: dict[str, float]) -> str:
    return (f"{s['calls']} model call(s), {s['prompt_tokens'] + s['completion_tokens']:,} tokens "
            f"({s['prompt_tokens']:,} in / {s['completion_tokens']:,} out), ${s['cost_usd']:.4f}")


class RunProgress:
    """Context manager; pass :meth:`on_event` as the run's ``on_event``."""

    def __init__(self, console: Console, generations: int, run_dir: str | Path | None = None,
                 max_wall_s: float | None = None, live: bool | None = None):
        self.console = console
        self.run_dir = Path(run_dir) if run_dir else None
        self.max_wall_s = max_wall_s
        self.started = time.time()
        self.generations = generations
        self.done = self.total = 0
        self.best: float | None = None
        self.regime = "-"
        self.gen = 0
        self._spend: dict[str, float] | None = None
        self.live = console.is_terminal if live is None else live
        self.progress = Progress(TextColumn("[bold cyan]gen {task.fields[gen]}[/]"), BarColumn(bar_width=24),
                                 TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TextColumn("left"),
                                 TimeRemainingColumn(), console=console, transient=True, disable=not self.live)
        self.task = self.progress.add_task("run", total=generations + 1, gen=f"0/{generations}", info="starting")
        self.gens_done = 0  # generations distilled; the bar's position is these plus the current one's share
        self._gen_base = (0, 0)  # (done, total) evaluations when the current generation began
        self._shown: set[str] = set()  # principles whose text was printed once already
        self._stop = threading.Event()

    def __enter__(self) -> "RunProgress":
        self.progress.start()
        if self.live:  # model calls take seconds to minutes: the spend is re-read while they run, not only after
            self._ticker = threading.Thread(target=self._tick, name="hifo-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self.progress.stop()

    def _tick(self) -> None:
        while not self._stop.wait(SPEND_REFRESH_S):
            if self.run_dir is not None:
                self._spend = spend(self.run_dir)
                self._refresh("tick")

    def print(self, text: str) -> None:
        self.progress.console.print(text)

    def _refresh(self, kind: str) -> None:
        if self.run_dir and (self._spend is None or kind in ("start", "resume", "propose", "select", "distill")):
            self._spend = spend(self.run_dir)  # read after the steps that call the model, not per evaluation
        s = self._spend
        parts = [f"evals {self.done}/{self.total} ({self.total - self.done} pending)",
                 f"best {self.best:.6g}" if self.best is not None else "best -", self.regime]
        if s:
            parts.append(f"{s['calls']} calls, {s['prompt_tokens'] + s['completion_tokens']:,} tok, "
                         f"${s['cost_usd']:.4f}")
        if self.max_wall_s:
            parts.append(f"wall budget left {max(0.0, self.max_wall_s - (time.time() - self.started)):.0f} s")
        # the bar moves with every evaluation (its share of the current generation), so the remaining time is
        # estimated from the first evaluations on, not only after a whole generation
        base_done, base_total = self._gen_base
        share = (self.done - base_done) / (self.total - base_total) if self.total > base_total else 0.0
        self.progress.update(self.task, gen=f"{self.gen}/{self.generations}", info=" | ".join(parts),
                             completed=min(self.gens_done + min(share, 0.99), self.generations + 1))

    def on_event(self, kind: str, d: dict) -> None:
        if kind == "start":
            self.run_dir = Path(d["run_dir"])
            self.print(f"run directory: [bold]{escape(str(self.run_dir))}[/] (watch it live: hifo ui "
                       f"{escape(shlex.quote(str(self.run_dir)))})")
        elif kind == "resume":
            self.print(f"resuming: {d.get('evaluated', 0)} evaluation(s) already done")
        elif kind == "foresight":
            n = d["numbers"]
            self.gen, self.regime = d["generation"], d["regime"]
            self._gen_base = (self.done, self.total)
            self.print(f"[bold cyan]gen {d['generation']}[/] foresight: [bold]{d['regime']}[/] — "
                       f"{escape(d['reason'])} (stagnation={n['stagnation']}, code div={n['code_diversity']}, "
                       f"behaviour div={n['behaviour_diversity']})")
        elif kind == "recall":
            again = [p for p in d["principles"] if p["id"] in self._shown]
            for p in d["principles"]:
                if p["id"] not in self._shown:  # the whole text, verbatim, the first time; its id afterwards
                    self._shown.add(p["id"])
                    self.print(f"  recall [dim]#{escape(str(p['id']))} ({escape(str(p['problem'] or 'any problem'))}, utility "
                               f"{p['utility']})[/] {escape(p['text'])}")
            if again:
                self.print("  recall again (text above): " + ", ".join(f"#{escape(str(p['id']))} (utility {p['utility']})"
                                                                      for p in again))
        elif kind == "propose":
            line = (f"  propose: {d['replies']}/{d['prompts']} replies, {d['new']} new candidates, "
                    f"{d['hyper']} constant-tuning variants" + (f" — {d['stop_reason']}" if d['stop_reason'] else ""))
            self.print(line)
            self.total += d["new"] + d["hyper"]
        elif kind == "model_errors":
            self.print(f"  [red]{d['errors']} of {d['calls']} model call(s) failed[/]: {escape(d['error'])}")
        elif kind == "evaluated":
            self.done += 1
            self.total = max(self.total, self.done)
            status = f"{d['objective']:.4g}" if d["feasible"] else f"[red]failed[/] ({escape(d['error'] or '')})"
            # the error-feedback repairs are evaluated as a round of their own: their count is labelled as such
            count = f"{'repair ' if d['operator'] == 'repair' else ''}{d['done']}/{d['total']}"
            self.print(f"  {escape(f'[{count}]')} {escape(str(d['id']))} {d['operator']:<8} {status}")
        elif kind == "select":
            self.best = d["best"]
            self.total = self.done  # the generation's evaluations are all in: none is pending any more
            self.print(f"  select: best = [bold green]{d['best']}[/] ({d['best_id']})")
        elif kind == "distill":
            self.print(f"  distill: {len(d['principles'])} principle(s) added/reinforced")
            self.gens_done += 1
            self._gen_base = (self.done, self.total)
        elif kind == "test":
            self.print(f"test set '{d['set']}': {d['objective'] if d['feasible'] else escape(str(d['error']))}")
        elif kind == "rescore":
            verdict = "agrees" if d.get("agrees") else "[red]DISAGREES[/]"
            self.print(f"best re-scored on node {escape(str(d.get('node')))} (first: {escape(str(d.get('first_node')))}): "
                       f"{verdict}" + ("" if d.get("agrees") else f" — {escape(str(d.get('metrics_differ') or d.get('error')))}"))
        elif kind == "warning":
            self.print(f"[yellow]warning[/]: {escape(str(d.get('message')))}")
        elif kind == "seed":
            self.total += len(d.get("baselines", []))
        self._refresh(kind)
