"""ℓp regression: linear-system solves and wall time to a (1+eps)-optimal solution for our
damped IRLS (ours; not Ene-Nguyen-Vladu's rule), classic IRLS, Adil–Peng–Sachdeva p-IRLS, and scipy's L-BFGS
(the convex-solver reference a user would pick).

    python -m benchmarks.lp_regression            # A 100 x 400 and 150 x 600, 3 seeds (about 3 minutes)
    python -m benchmarks.lp_regression --quick    # A 50 x 200, 1 seed (a few seconds)

``OPT`` per instance is the best value any method reached (scipy's, unless an IRLS run is better).
"solves" is the number of linear-system solves until ``||x||_p <= (1+eps) OPT`` (``-`` if never
within the budget: 60 for the IRLS variants, p-IRLS until its own stopping rule); for scipy the
columns give its wall time and its final relative gap instead. Results go to
``benchmarks/results/lp_regression.json`` (``--quick``: ``lp_regression_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any


from hifo.problems.lp_regression import damped_update, p_irls, damped_irls, random_instance, reference_optimum

RESULTS = Path(__file__).parent / "results"
PS = (1.5, 3.0, 4.0, 8.0)
EPSILONS = (1e-3, 1e-6)


def _cvxpy(A: Any, b: Any, p: float, opt: float) -> dict[str, Any]:
    """What a user would pick: CVXPY 1.9 with ``pnorm`` and its default conic solver (Clarabel, an
    interior-point method; its iterations each solve one KKT system, so they compare with solves)."""
    import cvxpy as cp  # lazy: a bench extra

    from hifo.problems.lp_regression import lp_norm

    x = cp.Variable(A.shape[1])
    prob = cp.Problem(cp.Minimize(cp.pnorm(x, p)), [A @ x == b])
    t0 = time.perf_counter()
    prob.solve(solver=cp.CLARABEL)
    secs = time.perf_counter() - t0
    return {"seconds": secs, "iterations": int(prob.solver_stats.num_iters or 0),
            "gap": lp_norm(x.value, p) / opt - 1, "status": prob.status}


def run_instance(d: int, n: int, p: float, seed: int) -> dict[str, Any]:
    A, b = random_instance(d, n, seed)
    t0 = time.perf_counter()
    opt_scipy, _ = reference_optimum(A, b, p)
    scipy_s = time.perf_counter() - t0
    traces = {"damped_irls": damped_irls(A, b, p, iterations=60),
              "classic_irls": damped_irls(A, b, p, rule=lambda r, x, q, i: damped_update(r, x, q, i, 1.0),
                                               iterations=60)}
    if p >= 2:
        traces["p_irls"] = p_irls(A, b, p, eps=1e-10)
    opt = min([opt_scipy] + [min(t.value) for t in traces.values()])
    row: dict[str, Any] = {"opt": opt, "scipy": {"seconds": scipy_s, "gap": opt_scipy / opt - 1},
                           "cvxpy": _cvxpy(A, b, p, opt)}
    for name, tr in traces.items():
        row[name] = {}
        for eps in EPSILONS:
            solves, secs = tr.first_within(opt, eps)
            row[name][f"{eps:g}"] = {"solves": solves, "seconds": secs}
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    sizes, seeds = (((50, 200),), (0,)) if args.quick else (((100, 400), (150, 600)), (0, 1, 2))
    result: dict[str, Any] = {"setup": {"sizes": sizes, "seeds": seeds, "p": PS, "eps": EPSILONS,
                                        "data": "A Gaussian d x n, b = A x_true with Student-t(3) x_true"},
                              "rows": {}}
    methods = ("damped_irls", "classic_irls", "p_irls")
    print(f"{'instance':>24} " + " ".join(f"{m + ' ' + format(e, 'g'):>22}" for m in methods for e in EPSILONS)
          + f" {'scipy s':>8} {'scipy gap':>9}")
    for d, n in sizes:
        for p in PS:
            for seed in seeds:
                key = f"d{d}_n{n}_p{p:g}_seed{seed}"
                row = run_instance(d, n, p, seed)
                result["rows"][key] = row
                cells = []
                for m in methods:
                    for e in EPSILONS:
                        c = row.get(m, {}).get(f"{e:g}")
                        cells.append("n/a" if c is None else "-" if c["solves"] is None
                                     else f"{c['solves']} ({c['seconds']:.3f}s)")
                print(f"{key:>24} " + " ".join(f"{c:>22}" for c in cells)
                      + f" {row['scipy']['seconds']:8.2f} {row['scipy']['gap']:9.1e}"
                      + f"  cvxpy {row['cvxpy']['iterations']} it {row['cvxpy']['seconds']:.2f}s gap {row['cvxpy']['gap']:.1e}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("lp_regression_quick.json" if args.quick else "lp_regression.json")
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
