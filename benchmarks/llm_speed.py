"""Speed of the embedded default model on this CPU, with and without prefix reuse (issue 27, item 3).

    python -m benchmarks.llm_speed [--calls 6] [--problems bpp_online tsp_construct] [--threads N]
                                   [--model local] [--out benchmarks/results/llm_speed.json]

For each problem the real chat prompts of a search are built (`render_operator("chat", ...)`, the
operators of generation 1 in turn: e1, e2, m1, m2, m3, i1, ... over the evaluator's baselines, with the
run's defaults: temperature 1.0, ``max_tokens`` 384, stop at the code block's closing fence) and sent
``--calls`` times through `LocalGGUFClient.complete`, the path a run takes, in two modes:

``reuse``: calls one after the other as a run makes them; llama.cpp keeps the evaluated tokens of the
previous prompt and evaluates only what differs (the constant system text, task and signature come first,
so every call after the first reuses them);
``no_reuse``: the model's token cache is cleared before each call (``Llama.reset()``), so every prompt is
evaluated whole, as with no prefix reuse.

Per call it records wall seconds, prompt tokens, prompt tokens evaluated (not reused), llama.cpp's own
prompt-evaluation and generation milliseconds, and generated tokens; per mode it reports the median
seconds per call, prompt-evaluation tokens/s (evaluated tokens / prompt-evaluation seconds) and
generation tokens/s. The target (issue 27) is a median of at most 8 s per call on 2 cores. Load average,
thread count and CPU model are stored, since every figure scales with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "llm_speed.json"
OPERATORS = ("e1", "e2", "m1", "m2", "m3", "i1")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def prompts_for(problem: str, n: int) -> list[Any]:
    """``n`` chat prompts a generation of a search on ``problem`` would send (operators in turn)."""
    from hifo.agents.prompting import ParentView, render_operator
    from hifo.evaluators import get_evaluator

    ev = get_evaluator(problem)
    sources = [ev.baselines[k] for k in sorted(ev.baselines)] or [ev.template.baseline_source()]
    parents = [ParentView(src, name, 1.0 - 0.1 * i, -1.0 - 0.1 * i)
               for i, (name, src) in enumerate(zip(sorted(ev.baselines) or ["baseline"], sources))]
    while len(parents) < 2:
        parents.append(parents[0])
    out = []
    for i in range(n):
        op = OPERATORS[i % len(OPERATORS)]
        out.append(render_operator("chat", op, evaluator=ev, parents=parents[:2] if op in ("e1", "e2") else parents[:1],
                                   principles=[], directive=""))
    return out


def summarise(calls: list[dict[str, Any]]) -> dict[str, Any]:
    pe_s = sum(c["prompt_eval_s"] for c in calls)
    dec_s = sum(c["decode_s"] for c in calls)
    evaluated = sum(c["prompt_evaluated_tokens"] for c in calls)
    generated = sum(c["completion_tokens"] for c in calls)
    return {"calls": len(calls),
            "median_call_s": round(statistics.median(c["wall_s"] for c in calls), 2),
            "max_call_s": round(max(c["wall_s"] for c in calls), 2),
            "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
            "prompt_evaluated_tokens": evaluated,
            "reused_fraction": round(1 - evaluated / max(1, sum(c["prompt_tokens"] for c in calls)), 3),
            "prompt_eval_tokens_per_s": round(evaluated / pe_s, 1) if pe_s > 0 else None,
            "generation_tokens_per_s": round(generated / dec_s, 1) if dec_s > 0 else None,
            "prompt_eval_s_per_call": round(pe_s / len(calls), 2),
            "decode_s_per_call": round(dec_s / len(calls), 2),
            "completion_tokens_per_call": round(generated / len(calls), 1)}


def run_mode(client: Any, prompts: list[Any], reuse: bool, seed: int) -> list[dict[str, Any]]:
    llm = client._model()[0]
    rows = []
    for i, pr in enumerate(prompts):
        if not reuse:
            llm.reset()  # forget the evaluated tokens: the whole prompt is evaluated again
        t0 = time.perf_counter()
        c = client.complete(pr.messages, n=1, temperature=1.0, seed=seed + i, max_tokens=384, stop=pr.stop or None)[0]
        rows.append({"wall_s": round(time.perf_counter() - t0, 3), "prompt_tokens": c.prompt_tokens,
                     "prompt_evaluated_tokens": c.prompt_evaluated_tokens or 0, "prompt_eval_s": c.prompt_eval_s or 0.0,
                     "decode_s": c.decode_s or 0.0, "completion_tokens": c.completion_tokens,
                     "finish_reason": c.finish_reason})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=6, help="calls per problem and mode")
    ap.add_argument("--problems", nargs="+", default=["bpp_online", "tsp_construct"])
    ap.add_argument("--model", default="local", help="local (the embedded default), local:NAME or a GGUF path")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: hifo's choice for the load)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS))
    a = ap.parse_args(argv)
    if a.calls < 1:
        ap.error("--calls must be at least 1")
    from hifo.agents.llm.local import LocalGGUFClient

    name = None if a.model == "local" else a.model.removeprefix("local:")
    load_before = os.getloadavg()
    client = LocalGGUFClient(name, n_threads=a.threads)
    client._model()
    out: dict[str, Any] = {"command": "python -m benchmarks.llm_speed " + " ".join(argv or __import__("sys").argv[1:]),
                           "model": client.model, "threads": client.n_threads, "load_s": round(client.load_s or 0, 2),
                           "cpu": cpu_model(), "cores": os.cpu_count(), "load_average_before": load_before,
                           "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "problems": {}}
    for problem in a.problems:
        prompts = prompts_for(problem, a.calls)
        row: dict[str, Any] = {}
        for mode, reuse in (("reuse", True), ("no_reuse", False)):
            calls = run_mode(client, prompts, reuse, a.seed)
            # the first reuse call evaluates the whole prompt (nothing before it): the steady state is the rest
            steady = calls[1:] if reuse and len(calls) > 1 else calls
            row[mode] = {**summarise(steady), "per_call": calls}
            s = row[mode]
            print(f"{problem:<14} {mode:<9} median {s['median_call_s']:>5} s/call  prompt eval "
                  f"{s['prompt_eval_tokens_per_s']} tok/s ({s['reused_fraction']:.0%} of prompt reused)  generation "
                  f"{s['generation_tokens_per_s']} tok/s  {s['completion_tokens_per_call']} tokens/reply", flush=True)
        out["problems"][problem] = row
    out["load_average_after"] = os.getloadavg()
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
