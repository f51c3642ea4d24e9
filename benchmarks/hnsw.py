"""HNSW deletion: recall@10, query cost, deletion time and graph size after deleting 10-50 % of the
points, for tombstones, no patch, naive local reconnection and the paper's SPatch (deterministic and
randomised), side by side with hnswlib (insert/search, and its mark_deleted tombstones).

    python -m benchmarks.hnsw            # 2,000 clustered points in 32-D, 200 queries (under a minute)
    python -m benchmarks.hnsw --quick    # 600 points in 16-D, 50 queries (about 15 seconds)

Both indexes use M = 8, ef_construction = 64 and the same data; queries use ef = 16 (k = 10).
Recall is against brute force over the surviving points. ``dist_evals`` (distance evaluations per
query) is the deterministic cost of our pure-Python index; wall times of ours and hnswlib's C++
are not comparable with each other, only within each column. Results go to
``benchmarks/results/hnsw.json`` (``--quick``: ``hnsw_quick.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hifo.problems.hnsw import (
    METHODS,
    brute_force_knn,
    build,
    data_and_queries,
    deletion_order,
    query,
    recall_at_k,
    run_deletion,
)

RESULTS = Path(__file__).parent / "results"
M, EFC, EF, K = 8, 64, 16, 10
FRACTIONS = (0.1, 0.3, 0.5)
BUDGET, BUDGET_EF = 100, 32  # recall at a matched cost: every query stops after 100 distance evaluations


def hnswlib_rows(X: np.ndarray, Q: np.ndarray) -> dict[str, Any]:
    try:
        import hnswlib
    except ImportError:
        return {"error": "hnswlib is not installed (pip install 'hifo[bench]')"}
    t0 = time.perf_counter()
    index = hnswlib.Index(space="l2", dim=X.shape[1])
    index.init_index(max_elements=len(X), M=M, ef_construction=EFC, random_seed=0)
    index.set_num_threads(1)
    index.add_items(X.astype(np.float32), np.arange(len(X)))
    out: dict[str, Any] = {"build_s": time.perf_counter() - t0}
    index.set_ef(EF)
    live = np.arange(len(X))
    rows = {}
    for frac in (0.0,) + FRACTIONS:
        order = deletion_order(len(X), frac, 1)
        t0 = time.perf_counter()
        for p in order:
            index.mark_deleted(int(p))
        delete_ms = 1000 * (time.perf_counter() - t0) / max(len(order), 1)
        alive = np.setdiff1d(live, order)
        t0 = time.perf_counter()
        labels, _ = index.knn_query(Q.astype(np.float32), k=K)
        query_ms = 1000 * (time.perf_counter() - t0) / len(Q)
        truth = brute_force_knn(X, alive, Q, K)
        rows[f"{frac:.1f}"] = {"recall": recall_at_k(labels.tolist(), truth), "query_ms": query_ms,
                               "delete_ms": delete_ms}
        for p in order:
            index.unmark_deleted(int(p))
    out["mark_deleted"] = rows
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    n, dim, nq = (600, 16, 50) if args.quick else (2000, 32, 200)
    X, Q = data_and_queries(n, dim, seed=0, n_queries=nq)  # queries held out from the data's clusters (issue 29)
    t0 = time.perf_counter()
    base = build(X, M=M, ef_construction=EFC, seed=0)
    build_s = time.perf_counter() - t0
    truth = brute_force_knn(X, np.arange(n), Q, K)
    found, dists, qms = query(base, Q, K, EF)
    result: dict[str, Any] = {
        "setup": {"points": n, "dim": dim, "queries": nq, "M": M, "ef_construction": EFC, "ef": EF, "k": K,
                  "data": "20 Gaussian clusters, seed 0; queries: held-out points of the same draw; deletion order seed 1",
                  "budget": BUDGET, "budget_ef": BUDGET_EF},
        "ours_before_deletion": {"build_s": build_s, "recall": recall_at_k(found, truth), "dist_evals": dists,
                                 "query_ms": qms, "edges": base.n_edges()},
        "hnswlib": hnswlib_rows(X, Q), "deletion": {}}
    print(f"{n} points, {dim}-D, M={M}, efC={EFC}, ef={EF}; ours: build {build_s:.1f}s, recall "
          f"{result['ours_before_deletion']['recall']:.3f} before deletion")
    hl0 = result["hnswlib"]
    if "mark_deleted" in hl0:
        print(f"hnswlib: build {hl0['build_s']:.2f}s, recall {hl0['mark_deleted']['0.0']['recall']:.3f} before deletion")
    print(f"{'deleted':>7} {'method':>16} {'recall':>7} {'@budget':>7} "
          f"{'dist/q':>7} {'q ms':>6} {'del ms':>7} {'edges':>7} {'vectors':>7}")
    for frac in FRACTIONS:
        rows = {}
        for method in METHODS:
            r = run_deletion(base, X, Q, frac, method, k=K, ef=EF, seed=1, budget=BUDGET, budget_ef=BUDGET_EF)
            rows[method] = r
            print(f"{frac:7.0%} {method:>16} {r['recall']:7.3f} {r['budget_recall']:7.3f} "
                  f"{r['dist_evals']:7.1f} {r['query_ms']:6.2f} "
                  f"{r['delete_ms']:7.2f} {r['edges']:7.0f} {r['stored_vectors']:7.0f}")
        hl = result["hnswlib"].get("mark_deleted", {}).get(f"{frac:.1f}")
        if hl:
            print(f"{frac:7.0%} {'hnswlib tombst.':>16} {hl['recall']:7.3f} {'-':>7} {'-':>7} {hl['query_ms']:6.3f} "
                  f"{hl['delete_ms']:7.4f} {'-':>7} {n:7d}")
        result["deletion"][f"{frac:.1f}"] = rows
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("hnsw_quick.json" if args.quick else "hnsw.json")
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
