"""The README's main job, measured: `bash scripts/main.sh` (venv already built), timed, and what its run did.

    python -m benchmarks.main_job --run        # runs scripts/main.sh once more, then summarises it
    python -m benchmarks.main_job RUN_DIR      # summarises an existing run directory

Records the wall time of the command, the candidates the model proposed per generation, how many
parsed and how many scored feasible, model / evaluation / wall seconds per generation, the best
train/test figures against the seeded Best Fit baseline, and the CPU it ran on. Writes ``benchmarks/results/main_job.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "main_job.json"


def cpu_flags() -> dict:
    model, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    wanted = ["avx2", "fma", "f16c", "avx512f", "amx_tile", "amx_int8", "amx_bf16"]
    return {"model": model, "cores": _cores(), "features": {f: f in flags for f in wanted}}


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def summarise(run_dir: Path) -> dict:
    from hifo.agents.rundb import RunStore

    store = RunStore(run_dir / "run.sqlite")
    try:
        cands = store.candidates()
        times = store.timings()
    finally:
        store.close()
    summary = json.loads((run_dir / "summary.json").read_text())
    proposed = [c for c in cands if c.operator != "baseline"]
    by_gen: dict[int, dict[str, int]] = {}
    for c in proposed:
        g = by_gen.setdefault(c.generation, {"proposed": 0, "parsed": 0, "feasible": 0})
        g["proposed"] += 1
        g["parsed"] += c.status != "invalid"
        g["feasible"] += bool(c.ok)
    return {"run_dir": str(run_dir), "stop_reason": summary.get("stop_reason"),
            "best": {k: (summary.get("best") or {}).get(k) for k in ("id", "generation", "operator", "objective", "test")},
            "baselines": summary.get("baselines"),
            "model_offspring": {"proposed": len(proposed), "parsed": sum(c.status != "invalid" for c in proposed),
                                "feasible": sum(bool(c.ok) for c in proposed)},
            "per_generation": {str(k): v for k, v in sorted(by_gen.items())},
            # model / evaluation / wall seconds per generation (propose start to evaluate end; see
            # hifo.agents.pipeline): overlapped, wall approaches max(model, eval) rather than their sum
            "time_per_generation": {str(t["generation"]): {k: t.get(k) for k in ("model_s", "eval_s", "wall_s",
                                                                                  "overlap_s")} for t in times},
            "model_usage": summary.get("model_usage")}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", nargs="?", type=Path)
    ap.add_argument("--run", action="store_true", help="run scripts/main.sh now (into a fresh temporary run dir)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.run == (args.run_dir is not None):
        ap.error("give either --run or a RUN_DIR")
    wall = None
    if args.run:
        run_dir = Path(tempfile.mkdtemp(prefix="hifo-main-job-")) / "run"
        t0 = time.perf_counter()
        proc = subprocess.run(["bash", str(ROOT / "scripts" / "main.sh"), "--run-dir", str(run_dir)],
                              cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        sys.stdout.write(proc.stdout[-3000:])
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-3000:])
            raise SystemExit(f"scripts/main.sh exited {proc.returncode}")
    else:
        run_dir = args.run_dir
    out = {"benchmark": "main_job", "command": "bash scripts/main.sh (venv already built)",
           "wall_s": None if wall is None else round(wall, 1), "cpu": cpu_flags(),
           "python": platform.python_version(), **summarise(run_dir)}
    text = json.dumps(out, indent=1, default=str)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(re.sub(r"\n\s+", " ", text)[:1500])
    print(f"wrote {args.out}")
    return out


if __name__ == "__main__":
    main()
