"""Is a fitness a fact about the candidate? Score every baseline under different CPU paths and compare.

A fitness must be the same number on every machine: two Ray nodes, a replay on a laptop and the CI
runner must agree on a candidate's score. What usually breaks this is not the algorithm but the
arithmetic underneath: numpy picks SIMD kernels at run time (AVX-512 machines get different
``exp``/``power``/``einsum`` kernels and a vectorised sort whose order among ties differs), OpenBLAS
picks a kernel per core type and splits work over threads, and solvers stop on wall-clock limits.

hifo removes the dependence where it can: the sandbox child and the ``hifo`` process itself run on
*pinned* kernels (:mod:`hifo.sandbox._numeric`: numpy without its AVX-512 kernels, OpenBLAS's Haswell
kernels, torch's AVX2 paths, MKL's vendor-independent COMPATIBLE branch, no oneDNN, one thread in the
child), which every x86-64 CPU with AVX2 runs alike; decisions are taken on grid-snapped values
(:mod:`hifo.problems._repro`) and ties are broken by index. This module checks the result: it solves every
baseline of an evaluator on an instance set in a fresh interpreter (the sandbox child's side) and scores the solutions in another
(the parent's side) under several *configurations*, and compares the per-instance metrics:

* ``plain`` — as ``hifo`` runs: both sides pinned, one thread;
* ``threads`` — the parent with two BLAS/OpenMP/torch threads;
* ``hog`` — ``plain`` beside one CPU-bound process per core (a loaded machine);
* ``unpinned`` (informational, not part of the verdict) — this CPU's widest kernels on both sides:
  on an AVX-512 machine it shows what an AVX2 machine would compute differently without the pinning.

A metric agrees when it is equal (``nan`` equals ``nan``) or within the evaluator's declared, measured
:attr:`~hifo.evaluators.base.Evaluator.fitness_rtol`. Evaluators whose budget is time
(``load_dependent``) are reported under ``hog`` but their difference there is expected.

Command line (also ``hifo doctor --determinism``)::

    python -m hifo.evaluators.determinism [NAMES ...] [--set train] [--configs plain threads hog unpinned] [--json OUT]
        [--merge]

With ``--merge`` the reports of the evaluators checked now replace theirs in an existing ``--json`` file (same
evaluator and instance set) and every other report is kept as it was, so a few evaluators can be re-checked without
re-running all of them; the file records each merge (evaluators, configurations, this machine, date).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from hifo.sandbox._numeric import PINNED_VARS, cpu_avx512_features, pinned_numeric_env

CONFIGS = ("plain", "threads", "hog")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def config_env(config: str, role: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of one configuration's ``role`` worker (``solve``: the sandbox child's side,
    ``score``: the trusted parent's side).

    * ``plain``: what ``hifo`` does: both sides on the pinned kernels (:mod:`hifo.sandbox._numeric`:
      numpy without AVX-512, OpenBLAS Haswell, torch AVX2, MKL COMPATIBLE — what every x86-64 CPU with AVX2
      runs), one thread;
    * ``threads``: the same with two BLAS/OpenMP/torch threads in the parent (its thread count is the
      machine's; the score must not depend on it);
    * ``hog``: ``plain`` beside one busy process per core (a loaded machine);
    * ``unpinned``: (informational) both sides on this CPU's widest kernels, as before the pinning —
      on an AVX-512 machine, what differs between it and an AVX2 one without the pinning.
    """
    env = dict(os.environ if base is None else base)
    for var in PINNED_VARS:
        env.pop(var, None)
    if config not in CONFIGS + ("unpinned",):
        raise ValueError(f"unknown configuration {config!r}; known: {', '.join(CONFIGS + ('unpinned',))}")
    if config != "unpinned":
        env.update(pinned_numeric_env())
    threads = "2" if (config == "threads" and role == "score") else "1"
    env.update({var: threads for var in THREAD_VARS})
    env["HIFO_DETERMINISM_TORCH_THREADS"] = threads
    env["HIFO_NUMERIC_PINNED"] = "1"  # the worker must not re-pin itself
    return env


def _torch_threads() -> None:
    threads = os.environ.get("HIFO_DETERMINISM_TORCH_THREADS")
    if threads:
        try:
            import torch

            torch.set_num_threads(int(threads))
        except ImportError:  # pragma: no cover - torch is a dependency
            pass


def solve_all(name: str, instance_set: str = "train") -> dict[str, list[Any]]:
    """Every baseline's JSON-round-tripped solution per instance (trusted code: our own baselines);
    ``{"__error__": text}`` where the solve raised."""
    _torch_threads()
    from hifo.evaluators.registry import get_evaluator

    ev = get_evaluator(name)
    ev.public_seeds = True  # the published instances: every process must see the same ones (no per-object secret)
    instances = ev.load_instances(instance_set)
    out: dict[str, list[Any]] = {}
    for base in sorted(ev.baselines):
        ns: dict[str, Any] = {}
        exec(ev.baselines[base], ns)  # noqa: S102 - our own baseline source, not a candidate
        fn = ns[ev.template.name]
        sols = []
        for inst in instances:
            try:
                sols.append(json.loads(json.dumps(ev.solve(fn, inst))))
            except Exception as exc:
                sols.append({"__error__": f"{type(exc).__name__}: {exc}"})
        out[base] = sols
    return out


def score_all(name: str, solutions: dict[str, list[Any]], instance_set: str = "train") -> dict[str, list[dict]]:
    """Per-instance metrics of :func:`solve_all`'s solutions, scored the way the parent scores them."""
    _torch_threads()
    from hifo.evaluators.registry import get_evaluator

    ev = get_evaluator(name)
    ev.public_seeds = True
    instances = ev.load_instances(instance_set)
    out: dict[str, list[dict]] = {}
    for base, sols in solutions.items():
        per = []
        for inst, sol in zip(instances, sols):
            if isinstance(sol, dict) and "__error__" in sol:
                per.append({"error": sol["__error__"]})
                continue
            try:
                per.append(ev.score(inst, sol))
            except Exception as exc:  # an infeasible baseline solution is a result too
                per.append({"error": f"{type(exc).__name__}: {exc}"})
        out[base] = per
    return out


def measure(name: str, instance_set: str = "train") -> dict[str, Any]:
    """Solve and score every baseline in this process (both sides under this process's settings)."""
    return score_all(name, solve_all(name, instance_set), instance_set)


def _run(cmd: list[str], env: dict[str, str], timeout: float, stdin: str | None = None) -> Any:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, input=stdin)
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1])


def _worker(name: str, instance_set: str, config: str, timeout: float) -> dict[str, Any]:
    base = [sys.executable, "-m", "hifo.evaluators.determinism", "--set", instance_set]
    t0 = time.perf_counter()
    sols = _run(base + ["--solve-worker", name], config_env(config, "solve"), timeout)
    figs = _run(base + ["--score-worker", name], config_env(config, "score"), timeout, json.dumps(sols))
    return {"figures": figs, "seconds": time.perf_counter() - t0}


class _Hog:
    """One busy-looping process per core while the block runs."""

    def __enter__(self) -> "_Hog":
        code = "while True:\n    pass\n"
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(os.cpu_count() or 1)]
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def agree(a: Any, b: Any, rtol: float) -> bool:
    """Two metric values agree: equal (nan == nan), or within ``rtol`` relative to the larger."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:
        return True
    return abs(a - b) <= rtol * max(abs(a), abs(b))


@dataclass
class Report:
    evaluator: str
    instance_set: str
    rtol: Any
    load_dependent: bool
    seconds: dict[str, float] = field(default_factory=dict)
    mismatches: list[dict[str, Any]] = field(default_factory=list)  # config, baseline, instance, metric, values
    max_rel: dict[str, dict[str, float]] = field(default_factory=dict)  # config -> metric -> largest rel. diff

    primary: str = ""

    def counts(self, m: dict[str, Any]) -> bool:
        """Whether a mismatch is part of the verdict: never for ``unpinned`` (informational); for a
        load-dependent evaluator (a time budget) only a primary metric beyond the declared tolerance, or
        an instance that fails in one configuration and not in the other, and nothing under ``hog``."""
        if m["config"] == "unpinned":
            return False
        if not self.load_dependent:
            return True
        if m["config"] == "hog":
            return False
        return m["metric"] in (self.primary, "error") or None in (m.get("plain"), m.get(m["config"]))

    @property
    def ok(self) -> bool:
        return not [m for m in self.mismatches if self.counts(m)]

    def as_dict(self) -> dict[str, Any]:
        return {"evaluator": self.evaluator, "set": self.instance_set, "rtol": self.rtol, "primary": self.primary,
                "load_dependent": self.load_dependent, "ok": self.ok, "seconds": self.seconds,
                "max_rel": self.max_rel, "mismatches": self.mismatches}


def compare(name: str, figures: dict[str, dict[str, Any]], rtol: Any, load_dependent: bool,
            instance_set: str = "train", timing: Iterable[str] = ()) -> Report:
    """Every configuration's figures against ``plain``'s. ``rtol``: a float, a ``{metric: rtol}`` dict
    (``"*"``: the rest) or a callable ``metric -> rtol``."""
    rep = Report(name, instance_set, rtol if not callable(rtol) else {}, load_dependent)

    def tol_of(metric: str) -> float:
        if callable(rtol):
            return float(rtol(metric))
        if isinstance(rtol, dict):
            return float(rtol.get(metric, rtol.get("*", 0.0)) or 0.0)
        return float(rtol)
    ref = figures["plain"]
    for config, figs in figures.items():
        if config == "plain":
            continue
        worst: dict[str, float] = {}
        for base, per in ref.items():
            for k, (m_ref, m_other) in enumerate(zip(per, figs.get(base, []))):
                for metric in sorted((set(m_ref) | set(m_other)) - set(timing)):
                    va, vb = m_ref.get(metric), m_other.get(metric)
                    if va is None or vb is None or not agree(va, vb, tol_of(metric)):
                        rep.mismatches.append({"config": config, "baseline": base, "instance": k,
                                               "metric": metric, "plain": va, config: vb})
                    if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and va != vb \
                            and math.isfinite(va) and math.isfinite(vb):
                        rel = abs(va - vb) / max(abs(va), abs(vb))
                        worst[metric] = max(worst.get(metric, 0.0), rel)
        rep.max_rel[config] = worst
    return rep


def check(name: str, instance_set: str = "train", configs: Iterable[str] = CONFIGS,
          timeout: float = 1800.0) -> Report:
    """Run ``name``'s baselines under each configuration (fresh interpreters) and compare."""
    from hifo.evaluators.registry import get_evaluator_class

    cls = get_evaluator_class(name)
    figures: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for config in ("plain", *[c for c in configs if c != "plain"]):
        if config == "hog":
            with _Hog():
                res = _worker(name, instance_set, config, timeout)
        else:
            res = _worker(name, instance_set, config, timeout)
        figures[config], seconds[config] = res["figures"], round(res["seconds"], 2)
    rep = compare(name, figures, cls.metric_rtol, cls.load_dependent, instance_set, cls.timing_metrics)
    rep.primary = cls.primary_metric
    rep.rtol = cls.fitness_rtol
    rep.seconds = seconds
    return rep


def merge_reports(existing: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``existing`` (a ``--json`` file's content) with ``new``'s reports in place of the ones for the same evaluator
    and instance set; other reports and top-level keys kept, reports sorted by evaluator and set. The merge is
    recorded under ``merges`` (with ``new``'s ``cpu_avx512``, ``machine`` and, when given, ``configs``, ``command``
    and ``date``): the merged reports may come from another machine than the rest of the file."""
    fresh = {(r["evaluator"], r["set"]): r for r in new.get("reports", [])}
    kept = [r for r in existing.get("reports", []) if (r["evaluator"], r["set"]) not in fresh]
    out = dict(existing)  # the file's keys keep their order; "reports" is replaced in place
    out["reports"] = sorted(kept + list(fresh.values()), key=lambda r: (r["evaluator"], r["set"]))
    record = {"evaluators": sorted(f"{name}/{inst_set}" if inst_set != "train" else name for name, inst_set in fresh)}
    record.update({k: new[k] for k in ("configs", "command", "date", "cpu_avx512", "machine") if k in new})
    out["merges"] = [*existing.get("merges", []), record]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hifo.evaluators.determinism", description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="evaluators (default: every registered one)")
    ap.add_argument("--set", default="train", dest="instance_set")
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS + ("unpinned",))
    ap.add_argument("--json", dest="json_out", help="write the reports here")
    ap.add_argument("--merge", action="store_true",
                    help="with --json: replace only these evaluators' reports in the existing file, keep the others")
    ap.add_argument("--solve-worker", help=argparse.SUPPRESS)
    ap.add_argument("--score-worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.merge and not args.json_out:
        ap.error("--merge needs --json FILE (the file to merge into)")
    if args.solve_worker:
        print(json.dumps(solve_all(args.solve_worker, args.instance_set)))
        return 0
    if args.score_worker:
        print(json.dumps(score_all(args.score_worker, json.loads(sys.stdin.read()), args.instance_set)))
        return 0
    from hifo.evaluators.registry import list_evaluators

    names = args.names or list(list_evaluators())
    print(f"CPU: {platform.processor() or platform.machine()}; pinned kernels: "
          f"{pinned_numeric_env() or '(none: not an x86-64 CPU with AVX2)'}; AVX-512 features this CPU has: "
          f"{' '.join(cpu_avx512_features()) or '(none)'}", flush=True)
    reports = []
    failed = 0
    for name in names:
        try:
            rep = check(name, args.instance_set, args.configs)
        except Exception as exc:
            print(f"{name:16s} ERROR {exc}", flush=True)
            failed += 1
            continue
        reports.append(rep.as_dict())
        state = "ok" if rep.ok else "DIFFERS"
        worst = "; ".join(f"{c}: " + (", ".join(f"{m} {v:.1e}" for m, v in sorted(d.items())) or "0")
                          for c, d in rep.max_rel.items())
        extra = " (load-dependent: time budget)" if rep.load_dependent else ""
        print(f"{name:16s} {state:8s} rtol={rep.rtol} max rel diff: {worst or '-'}; "
              f"{len(rep.mismatches)} mismatches; s={rep.seconds}{extra}", flush=True)
        for m in rep.mismatches[:5]:
            print(f"    {m}", flush=True)
        failed += not rep.ok
    if args.json_out:
        result: dict[str, Any] = {"cpu_avx512": cpu_avx512_features(), "machine": platform.machine(),
                                  "reports": reports}
        if args.merge and os.path.exists(args.json_out):
            with open(args.json_out) as fh:
                existing = json.load(fh)
            cmd = " ".join(["python -m hifo.evaluators.determinism", *(argv if argv is not None else sys.argv[1:])])
            result = merge_reports(existing, dict(result, configs=["plain", *[c for c in args.configs if c != "plain"]],
                                                  command=cmd, date=time.strftime("%Y-%m-%d")))
        with open(args.json_out, "w") as fh:
            json.dump(result, fh, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
