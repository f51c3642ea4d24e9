"""QD score and coverage versus evaluations: CMA-MAE and DMS, ours and pyribs's, side by side.

    python -m benchmarks.qd [--quick] [--iterations 500] [--image-iterations 1000] [--seeds 3]
                            [--dims 2,10,20] [--jobs 2] [--objective sphere|rastrigin|flat]
                            [--impls ours,pyribs,...] [--seed0 1000] [--cvt-samples N --cvt-iterations K]

Domain: LP (sphere), 100-D solutions, measure dimension 2 (100 x 100 grid), 10 and 20
(10,000-cell CVTs), the DMS paper's settings (15 emitters x 36 = 540 evaluations per iteration; CMA-MAE
alpha 0.01, DMS alpha 0.1; restarts "basic" in 2-D, every 100 iterations in 10-D). Every
algorithm gets the same budget and seeds, and both implementations use the same CVT centroids
(computed once with our k-means; pyribs's ``CVTArchive`` gets our matrix-product lookup, which
returns the same cells much faster). The paper runs 10,000 iterations (5.4 M evaluations); on two
shared cores we run ``--iterations`` (default 500, i.e. 270,000 evaluations).

pyribs (``ribs`` >= 0.12, which has ``DiscountArchive`` and ``discount_models``) is run as the
reference experiments configure it: ``GridArchive``/``CVTArchive`` (brute-force lookup) with
``learning_rate``/``threshold_min``, ``EvolutionStrategyEmitter(ranker="imp", selection_rule="mu")``,
``Scheduler(add_mode="batch")``; for DMS a ``DiscountModelManager`` over ``ribs.discount_models.MLP``
(torch, 1 thread) whose emitters restart from the result archive.

``--impls`` adds ``ours_pyribs`` (our code with pyribs 0.12's CMA-ES update) and, for CMA-MAE,
the component swaps of :mod:`benchmarks.qd_swap` (``ours_ribs_archive``, ``ours_ribs_es``: our
loop with pyribs's archive or pyribs's CMA-ES put in). ``--objective`` picks the LP objective;
``--cvt-samples``/``--cvt-iterations`` make the k-means for high-dimensional CVTs cheaper (both
implementations still share the centroids).

Also, ours only: the small image-measure domain :class:`hifo.problems.qd.TrianglesDigits` (10 triangles,
the 64 pixels are the measures, 1,000 digit images as CVT centroids; TA (MNIST) settings: 5
emitters x 36, sigma0 0.1, alpha 0.001, restarts every 50 iterations) for ``--image-iterations``.

Writes ``benchmarks/results/qd.json`` (``qd_quick.json`` with ``--quick``: 60 LP iterations, 100 TA
iterations, one seed, dims 2 and 10) and, with matplotlib, the matching ``.png``.
"""

from __future__ import annotations

import os

# One BLAS thread per process: the matrices are small and the machine has two shared cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from hifo.problems.qd import (  # noqa: E402
    LinearProjection,
    QDSearch,
    TrianglesDigits,
    cached_centroids,
    nearest_centroid,
    paper_config,
)

from .qd_swap import SWAPS, run_swap  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
ALGOS = ("cma_mae", "dms")
# ours_pyribs: our code with pyribs 0.12's CMA-ES update; SWAPS: ours with pyribs's archive or CMA-ES
IMPLS = ("ours", "ours_pyribs", "pyribs", *SWAPS)
IMAGE_DIM = 64  # TrianglesDigits: the measure is the 8 x 8 image


def _panel(dim: int, objective: str = "sphere") -> str:
    return "TA (8x8 digits), 64-D image measures" if dim == IMAGE_DIM else f"LP ({objective}), {dim}-D measures"


def _run_ours(algo: str, measure_dim: int, seed: int, iterations: int, log_every: int, centroids,
              cma_update: str = "hansen", objective: str = "sphere"):
    if measure_dim == IMAGE_DIM:  # the image-measure domain (TA on 8 x 8 digits)
        domain = TrianglesDigits(num_centroids=1000)
        cfg = paper_config(algo, domain, cma_update=cma_update)
    else:
        domain = LinearProjection(objective, 100, measure_dim)
        cfg = paper_config(algo, domain, cma_update=cma_update,
                           **({"centroids": centroids} if centroids is not None else {}))
    search = QDSearch(domain, cfg, seed=seed)
    return search.run(iterations, log_every=log_every)


def _run_pyribs(algo: str, measure_dim: int, seed: int, iterations: int, log_every: int, centroids,
                objective: str = "sphere"):
    import torch
    from ribs.archives import CVTArchive, DiscountArchive, GridArchive
    from ribs.emitters import EvolutionStrategyEmitter
    from ribs.schedulers import Scheduler

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    domain = LinearProjection(objective, 100, measure_dim)
    low, high = domain.measure_bounds
    ranges = list(zip(low.tolist(), high.tolist()))
    ss = np.random.SeedSequence(seed)
    res_seed, arch_seed, em_seed = (int(s.generate_state(1)[0]) for s in ss.spawn(3))

    class MatmulCVTArchive(CVTArchive):
        """pyribs's CVTArchive with our matrix-product nearest-centroid lookup: the same cells
        (exact nearest centroid), without the k-d tree (slow at 10-D) or pyribs's broadcast
        brute force (a 540 x 10,000 x 10 temporary per add)."""

        def index_of(self, measures):
            return nearest_centroid(np.asarray(measures, dtype=np.float64), self.centroids).astype(np.int32)

    def archive(**kw):
        if centroids is None:
            return GridArchive(solution_dim=100, dims=(100, 100), ranges=ranges, **kw)
        return MatmulCVTArchive(solution_dim=100, centroids=centroids, ranges=ranges,
                                nearest_neighbors="brute_force", **kw)

    result = archive(seed=res_seed)
    if algo == "cma_mae":
        main = archive(learning_rate=0.01, threshold_min=0.0, seed=arch_seed)
        emitter_archive = main
    else:
        from ribs.discount_models import MLP, DiscountModelManager

        model = MLP([(measure_dim, 128), (128, 128), (128, 1)], torch.nn.ReLU)
        manager = DiscountModelManager(
            model, torch.optim.Adam(model.parameters(), lr=1e-3), torch.device("cpu"),
            train_epochs=5, train_cutoff_loss=0.05, train_batch_size=32,
            normalize_measures="negative_one_one", measures_low=low, measures_high=high)
        main = DiscountArchive(solution_dim=100, measure_dim=measure_dim, learning_rate=0.1,
                               threshold_min=0.0, discount_model_manager=manager, result_archive=result,
                               init_train_points=1000, empty_points=100, seed=arch_seed)
        emitter_archive = result  # DMS restarts from the result archive
    restart = "basic" if measure_dim == 2 else 100
    emitters = [EvolutionStrategyEmitter(emitter_archive, x0=np.zeros(100), sigma0=0.5, ranker="imp",
                                         selection_rule="mu", restart_rule=restart, batch_size=36, seed=s)
                for s in np.random.SeedSequence(em_seed).spawn(15)]
    scheduler = Scheduler(main, emitters, result_archive=result, add_mode="batch")
    if algo == "dms":
        main.init_discount_model()
    history = []
    t0 = time.process_time()
    for it in range(1, iterations + 1):
        sols = scheduler.ask()
        obj, meas = domain.evaluate(sols)
        scheduler.tell(obj, meas)
        if algo == "dms":
            main.train_discount_model()
        if it % log_every == 0 or it == iterations:
            st = result.stats
            history.append({"iteration": float(it), "evaluations": float(it * len(sols)),
                            "qd_score": float(st.qd_score), "coverage": float(st.coverage),
                            "obj_max": float(st.obj_max) if st.obj_max is not None else float("nan"),
                            "cpu_s": time.process_time() - t0})
    return history


def _job(args):
    impl, algo, dim, seed, iterations, log_every, centroids, objective = args
    t0 = time.perf_counter()
    if impl == "pyribs":
        hist = _run_pyribs(algo, dim, seed, iterations, log_every, centroids, objective)
    elif impl in SWAPS:  # CMA-MAE only
        hist = run_swap(impl, dim, seed, iterations, log_every, centroids, objective)
    else:  # "ours" (Hansen's CMA-ES update) or "ours_pyribs" (pyribs 0.12's update)
        hist = _run_ours(algo, dim, seed, iterations, log_every, centroids,
                         "pyribs" if impl == "ours_pyribs" else "hansen", objective)
    return {"impl": impl, "algo": algo, "measure_dim": dim, "seed": seed, "objective": objective, "history": hist,
            "wall_s": time.perf_counter() - t0}


def _summary(runs: list[dict]) -> list[dict]:
    rows = []
    for dim in sorted({r["measure_dim"] for r in runs}):
        for algo in ALGOS:
            for impl in IMPLS:
                sel = [r for r in runs if (r["measure_dim"], r["algo"], r["impl"]) == (dim, algo, impl)]
                if not sel:
                    continue
                last = [r["history"][-1] for r in sel]
                qd = np.array([h["qd_score"] for h in last])
                cov = np.array([h["coverage"] for h in last])
                # CPU per iteration after the first log point: leaves out one-off start-up costs
                # (numba compiling pyribs's CMA-ES kernels, torch's first calls).
                ms = np.array([(r["history"][-1]["cpu_s"] - r["history"][0]["cpu_s"]) * 1e3
                               / max(1.0, r["history"][-1]["iteration"] - r["history"][0]["iteration"])
                               for r in sel])
                rows.append({"measure_dim": dim, "objective": sel[0].get("objective", "sphere"),
                             "algo": algo, "impl": impl, "seeds": len(sel),
                             "evaluations": last[0]["evaluations"], "qd_mean": float(qd.mean()),
                             "qd_std": float(qd.std()), "cov_mean": float(cov.mean()),
                             "cov_std": float(cov.std()), "cpu_ms_per_iter": float(ms.mean()),
                             "qd_per_seed": qd.tolist()})
    return rows


def _claims(rows: list[dict]) -> list[dict]:
    """The paper's claim per measure dimension and implementation: DMS's QD score above CMA-MAE's."""
    out = []
    for dim in sorted({r["measure_dim"] for r in rows}):
        for impl in IMPLS:
            get = {r["algo"]: r for r in rows if r["measure_dim"] == dim and r["impl"] == impl}
            if set(get) >= set(ALGOS):
                dms, mae = get["dms"], get["cma_mae"]
                out.append({"measure_dim": dim, "impl": impl, "dms_over_cma_mae": dms["qd_mean"] / max(mae["qd_mean"], 1e-9),
                            "dms_ahead_every_seed": bool(min(dms["qd_per_seed"]) > max(mae["qd_per_seed"]))})
    return out


def sel_objective(runs: list[dict], dim: int) -> str:
    return next((r.get("objective", "sphere") for r in runs if r["measure_dim"] == dim), "sphere")


def _plot(runs: list[dict], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return False
    dims = sorted({r["measure_dim"] for r in runs})
    fig, axes = plt.subplots(2, len(dims), figsize=(5 * len(dims), 7), squeeze=False)
    styles = {("dms", "ours"): ("tab:red", "-"), ("dms", "pyribs"): ("tab:red", "--"),
              ("cma_mae", "ours"): ("tab:blue", "-"), ("cma_mae", "pyribs"): ("tab:blue", "--"),
              ("dms", "ours_pyribs"): ("tab:red", ":"), ("cma_mae", "ours_pyribs"): ("tab:blue", ":")}
    for j, dim in enumerate(dims):
        for (algo, impl), (color, ls) in styles.items():
            sel = [r for r in runs if (r["measure_dim"], r["algo"], r["impl"]) == (dim, algo, impl)]
            if not sel:
                continue
            ev = np.array([h["evaluations"] for h in sel[0]["history"]])
            for i, key in enumerate(("qd_score", "coverage")):
                ys = np.array([[h[key] for h in r["history"]] for r in sel])
                mean, std = ys.mean(0), ys.std(0)
                axes[i, j].plot(ev, mean, ls, color=color, label=f"{algo.upper().replace('_', '-')} ({impl})")
                axes[i, j].fill_between(ev, mean - std, mean + std, color=color, alpha=0.15)
        axes[0, j].set_title(_panel(dim, sel_objective(runs, dim)), fontsize=10)
        axes[1, j].set_xlabel("evaluations (thousands)")
        for ax in axes[:, j]:
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x / 1000:g}"))
        axes[0, j].set_ylabel("QD score")
        axes[1, j].set_ylabel("coverage")
        axes[0, j].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="60 LP / 100 TA iterations, 1 seed, dims 2,10")
    ap.add_argument("--iterations", type=int, default=500, help="LP iterations (540 evaluations each)")
    ap.add_argument("--image-iterations", type=int, default=1000,
                    help="TA (digits) iterations, 180 evaluations each; 0 skips the image domain")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--dims", default="2,10,20")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--impls", default="ours,pyribs",
                    help="comma list of ours, ours_pyribs (ours with pyribs 0.12's CMA-ES update), pyribs, "
                         "ours_ribs_archive, ours_ribs_es (CMA-MAE only: ours with pyribs's archive / CMA-ES)")
    ap.add_argument("--objective", default="sphere", choices=("sphere", "rastrigin", "flat"),
                    help="the LP objective (the image domain is unaffected)")
    ap.add_argument("--seed0", type=int, default=1000, help="first seed")
    ap.add_argument("--cvt-samples", type=int, default=50_000, help="k-means samples for the CVT centroids")
    ap.add_argument("--cvt-iterations", type=int, default=15, help="Lloyd iterations for the CVT centroids")
    ap.add_argument("--out", type=Path, default=None, help="default: results/qd.json (qd_quick.json with --quick)")
    args = ap.parse_args(argv)
    if args.quick:
        args.iterations, args.image_iterations, args.seeds, args.dims = 60, 100, 1, "2,10"
    if args.out is None:
        args.out = RESULTS / ("qd_quick.json" if args.quick else "qd.json")
    dims = [int(d) for d in args.dims.split(",")]
    impls = [i for i in args.impls.split(",") if i]

    centroids = {}
    for dim in dims:
        if dim != 2:  # the same k-means centroids for both implementations
            low, high = LinearProjection(args.objective, 100, dim).measure_bounds  # not objective-dependent
            centroids[dim] = cached_centroids(10_000, tuple(zip(low.tolist(), high.tolist())), 42,
                                              samples=args.cvt_samples, iterations=args.cvt_iterations)
    its, log = args.iterations, max(1, args.iterations // 20)
    jobs = [(impl, algo, dim, args.seed0 + s, its, log, centroids.get(dim), args.objective)
            for dim in dims for s in range(args.seeds) for algo in ALGOS for impl in impls
            if not (impl in SWAPS and algo != "cma_mae")]
    if args.image_iterations:  # pyribs's side of this domain is not wired up: ours only
        its, log = args.image_iterations, max(1, args.image_iterations // 20)
        jobs += [("ours", algo, IMAGE_DIM, args.seed0 + s, its, log, None, "sphere")
                 for s in range(args.seeds) for algo in ALGOS]
    t0 = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            runs = list(pool.map(_job, jobs))
    else:
        runs = [_job(j) for j in jobs]
    wall = time.perf_counter() - t0

    rows = _summary(runs)
    claims = _claims(rows)
    print(f"{args.seeds} seed(s), same budget for every algorithm; wall {wall:.0f} s with {args.jobs} process(es)")
    print(f"{'domain':<38} {'algo':<8} {'impl':<7} {'evals':>8} {'QD score':>17} {'coverage':>16} "
          f"{'CPU ms/it':>10}")
    for r in rows:
        print(f"{_panel(r['measure_dim'], r['objective']):<38} {r['algo']:<8} {r['impl']:<7} {r['evaluations']:>8.0f} "
              f"{r['qd_mean']:>9.1f} ± {r['qd_std']:<6.1f}{r['cov_mean']:>8.4f} ± {r['cov_std']:<6.4f}"
              f"{r['cpu_ms_per_iter']:>9.1f}")
    for c in claims:
        print(f"claim (DMS ahead of CMA-MAE), {_panel(c['measure_dim'], args.objective)}, {c['impl']}: QD ratio "
              f"{c['dms_over_cma_mae']:.2f}, ahead on every seed: {c['dms_ahead_every_seed']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    plotted = _plot(runs, args.out.with_suffix(".png"))
    payload = {"benchmark": "qd", "command": "python -m benchmarks.qd " + " ".join(argv if argv is not None
                                                                                  else sys.argv[1:]),
               "lp_iterations": args.iterations, "image_iterations": args.image_iterations,
               "seeds": args.seeds, "seed0": args.seed0, "cvt_samples": args.cvt_samples,
               "cvt_iterations": args.cvt_iterations, "objective": args.objective, "dims": dims,
               "wall_s": wall, "jobs": args.jobs,
               "platform": platform.platform(), "python": platform.python_version(), "numpy": np.__version__,
               "summary": rows, "claims": claims, "runs": runs,
               "plot": str(args.out.with_suffix(".png").name) if plotted else None}
    try:
        import ribs

        payload["ribs"] = ribs.__version__
    except ImportError:
        pass
    args.out.write_text(json.dumps(payload, indent=1))
    print(f"wrote {args.out}" + (f" and {args.out.with_suffix('.png')}" if plotted else ""))
    return payload


if __name__ == "__main__":
    main()
