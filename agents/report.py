"""Reading runs back: ``hifo runs``, ``hifo show`` and ``hifo doctor``."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from hifo.agents.config import default_runs_dir


def _damaged(d: Path, exc: BaseException) -> dict[str, Any]:
    why = " ".join(str(exc).split())
    return {"run": str(d), "problem": "", "model": "", "status": f"damaged: {d / 'run.sqlite'}: {why}"
            if str(d / "run.sqlite") not in why else f"damaged: {why}",
            "evaluations": 0, "best": None, "cost_usd": 0.0, "tokens": 0}


def list_runs(root: Path | None = None) -> list[dict[str, Any]]:
    """Every run under ``root``; without ``root``, those under the default runs directory and every other run
    ``hifo run`` noted in the runs index (``--run-dir`` elsewhere), each once."""
    from hifo.agents.config import indexed_run_dirs

    explicit = root is not None
    root = Path(root) if root else default_runs_dir()
    rows: list[dict[str, Any]] = []
    dirs = sorted(p for p in root.iterdir() if (p / "run.sqlite").exists() or (p / "config.json").exists()) \
        if root.exists() else []
    if not explicit:
        known = {d.resolve() for d in dirs}
        dirs += [d for d in indexed_run_dirs() if d.resolve() not in known]
    from hifo.agents.progress import spend
    from hifo.agents.rundb import RunStore, RunStoreError

    for d in dirs:
        if not (d / "run.sqlite").exists():  # left by a failed start of an older version
            rows.append({"run": str(d), "problem": "", "model": "", "status": "incomplete (no run store)",
                         "evaluations": 0, "best": None, "cost_usd": 0.0, "tokens": 0})
            continue
        try:
            store = RunStore(d / "run.sqlite", readonly=True)
        except RunStoreError as exc:
            rows.append(_damaged(d, exc))
            continue
        try:
            cfg = store.get_meta("config", {}) or {}
            best = store.best_feasible(1)
            s = spend(d)
            rows.append({"run": str(d), "problem": cfg.get("problem", "?"), "model": cfg.get("model", "?"),
                         "status": store.get_meta("status", None) or "incomplete (start failed)",
                         "evaluations": store.count_evaluated(), "best": best[0].objective if best else None,
                         "cost_usd": round(s["cost_usd"], 6), "tokens": s["prompt_tokens"] + s["completion_tokens"]})
        except sqlite3.DatabaseError as exc:  # one damaged run is marked, never hides the others
            rows.append(_damaged(d, exc))
        finally:
            store.close()
    return rows


def print_runs(rows: list[dict[str, Any]], console: Any) -> None:
    """`hifo runs`: paths, model names and statuses verbatim (a "[" in a folder name is not markup); below 100
    columns one stanza per run (its path on a line of its own) instead of a table that would break every cell."""
    from rich.table import Table
    from rich.text import Text

    def numbers(r: dict[str, Any]) -> list[str]:
        return [str(r["evaluations"]), "" if r["best"] is None else f"{r['best']:.6g}",
                f"{r.get('cost_usd', 0.0):.4f}", f"{r.get('tokens', 0):,}"]

    if console.width < 100:
        for r in rows:
            evals, best, cost, tokens = numbers(r)
            console.print(Text(r["run"], style="bold"))
            console.print(Text(f"  {r['problem'] or '-'} · {r['model'] or '-'} · {r['status']} · {evals} evaluations"
                               f" · best {best or '-'} · ${cost} · {tokens} tokens"))
        return
    t = Table(title=None)
    for name, ratio in (("run", 3), ("problem", 2), ("model", 2), ("status", 2)):
        t.add_column(name, overflow="fold", ratio=ratio)
    for name in ("evals", "best", "cost $", "tokens"):
        t.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        t.add_row(*(Text(str(r[k] or "")) for k in ("run", "problem", "model", "status")), *numbers(r))
    console.print(t)


def show_run(run: Path, top: int = 5, prompts: bool = False, as_json: bool = False, console: Any = None) -> None:
    from hifo.agents.call_stats import per_generation
    from hifo.agents.rundb import RunStore

    run = Path(run)
    if not (run / "run.sqlite").exists():
        raise FileNotFoundError(f"{run} is not a hifo run directory (no run.sqlite)")
    store = RunStore(run / "run.sqlite", readonly=True)
    try:
        cfg = store.get_meta("config", {}) or {}
        best = store.best_feasible(top)
        timeline = store.foresight()
        recalls = store.events("recall")
        data = {
            "run": str(run), "config": cfg, "status": store.get_meta("status"),
            "stop_reason": store.get_meta("stop_reason"),
            "best": [{"id": c.id, "generation": c.generation, "operator": c.operator, "regime": c.regime,
                      "objective": c.objective, "parents": c.parents, "principle_ids": c.principle_ids,
                      "thought": c.thought, "code": c.code} for c in best],
            "foresight": timeline,
            "recalled": recalls,
            "counts": store.status_counts(),
            "where_ran": store.placements(),
            "timings": store.timings(),
            "model_calls": per_generation(store),
        }
        if prompts:
            data["prompts"] = store.prompts()
    finally:
        store.close()
    if as_json:
        print(json.dumps(data, indent=2, default=str))
        return
    from rich.syntax import Syntax
    from rich.table import Table

    from rich.markup import escape  # paths, model names and the model's text are shown verbatim

    console.print(f"[bold]{escape(str(run))}[/] problem={escape(str(cfg.get('problem')))} "
                  f"model={escape(str(cfg.get('model')))} status={data['status']} "
                  f"({escape(str(data['stop_reason']))}); candidates: {escape(str(data['counts']))}")
    t = Table("gen", "regime", "reason", "stagnation", "code div", "behav div", "fail rate", title="foresight timeline")
    for f in timeline:
        n = f["numbers"]
        t.add_row(*(escape(str("-" if v is None else v)) for v in (
            f["generation"], f["regime"], f["reason"], n.get("stagnation"), n.get("code_diversity"),
            n.get("behaviour_diversity"), n.get("failure_rate"))))
    console.print(t)
    if data["timings"]:  # propose start to evaluate end; model and sandbox overlap (hifo.agents.pipeline)
        tt = Table("gen", "model s", "eval s", "wall s", "overlap s", "calls", "evals", title="time per generation")
        for r in data["timings"]:
            tt.add_row(str(r["generation"]), *(f"{r.get(k, 0):.2f}" for k in ("model_s", "eval_s", "wall_s", "overlap_s")),
                       str(r.get("model_calls")), str(r.get("evaluations")) + (" (resumed)" if r.get("resumed") else ""))
        console.print(tt)
    if any(r["calls"] or r["candidates"] for r in data["model_calls"]):
        mc = Table("gen", "calls", "median s", "prompt eval s", "generate s", "prompt reused", "candidates",
                   "duplicates (by behaviour)", "re-draws", title="model calls (prompt eval / generate: the embedded model only)")

        def fmt(v: Any, pct: bool = False) -> str:
            return "-" if v is None else (f"{100 * v:.0f}%" if pct else str(v))
        for r in data["model_calls"]:
            mc.add_row(str(r["generation"]), str(r["calls"]), fmt(r["median_call_s"]), fmt(r["prompt_eval_s"]),
                       fmt(r["decode_s"]), fmt(r["prompt_reuse"], True), str(r["candidates"]),
                       f"{r['duplicates']} ({r.get('behaviour_duplicates', 0)})", str(r["redraws"]))
        console.print(mc)
    if data["where_ran"]:
        w = Table("node", "isolation", "layers", "warm", "candidates", title="where candidates ran")
        for row in data["where_ran"]:
            w.add_row(str(row["node"]), str(row["level"]), ", ".join(row["layers"]), str(row["warm_worker"]),
                      str(row["candidates"]))
        console.print(w)
    for i, c in enumerate(data["best"], 1):
        obj = c["objective"]
        console.print(f"\n[bold]#{i}[/] {c['id']} gen {c['generation']} {c['operator']} ({c['regime']}): "
                      f"[green]{obj if obj is None or not math.isfinite(obj) else round(obj, 6)}[/] "
                      f"{escape(c['thought'] or '')}")
        console.print(Syntax(c["code"], "python", theme="ansi_dark"))
    if prompts:
        for p in data["prompts"]:
            console.print(f"\n[bold]prompt {p['id']}[/] gen {p['generation']} {p['operator']} "
                          f"principles {escape(str(p['principle_ids']))}")
            for m in p["messages"]:
                console.print(m["content"], markup=False, highlight=False)


def doctor_report(smoke: bool = True) -> dict[str, dict[str, Any]]:
    def has(mod: str) -> bool:
        return importlib.util.find_spec(mod) is not None

    backends: dict[str, Any] = {
        "llama_cpp (embedded local model)": has("llama_cpp"),
        "litellm": has("litellm"),
        "openai": has("openai"),
        "HIFO_MODEL": os.environ.get("HIFO_MODEL", "(unset: local)"),
    }
    try:
        from hifo.sandbox import isolation_report

        iso = isolation_report()
    except Exception as exc:  # doctor must report, not crash
        iso = {"error": f"{type(exc).__name__}: {exc}"}
    optional = {name: has(mod) for name, mod in [("torch", "torch"), ("highspy", "highspy"), ("ribs", "ribs"),
                                                  ("ray", "ray"), ("elkai", "elkai")]}
    tools = {t: shutil.which(t) or "not found" for t in ("bwrap", "setpriv", "unshare")}
    from hifo.knowledge_base import default_kb_path
    from hifo.agents.llm.smoke import build_info, smoke_test

    # the one-token generation runs in a child process: a llama.cpp crash is reported, not inherited
    embedded = build_info()
    test = smoke_test() if smoke else {"ok": None, "result": "skipped (--no-smoke)"}
    embedded.update({"smoke test": test["result"], "smoke test ok": test["ok"]})
    if test.get("system_info"):
        embedded["system info"] = test["system_info"]
    from hifo.agents.llm.embedded import status as embedded_status

    return {"model backends": backends, "embedded models": embedded_status(), "embedded model (llama.cpp)": embedded,
            "sandbox isolation": iso, "optional packages": optional,
            "system tools": tools, "paths": {"knowledge base": str(default_kb_path()),
                                             "runs": str(default_runs_dir().resolve())}}
