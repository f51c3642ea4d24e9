"""Data, brute-force ground truth and the deletion experiment shared by tests, benchmark and evaluator."""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from hifo.problems.hnsw._index import HNSW
from hifo.problems.hnsw._repair import RULES

METHODS = ("tombstone", "no_patch", "local_reconnect", "robust_prune", "spatch", "spatch_random", "reinsert")


def clustered_data(n: int, dim: int, seed: int, clusters: int = 20) -> np.ndarray:
    """Gaussian clusters (unit-variance blobs around centres of spread 4), float64."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 4.0, (clusters, dim))
    return centres[rng.integers(0, clusters, n)] + rng.normal(0.0, 1.0, (n, dim))


def data_and_queries(n: int, dim: int, seed: int, n_queries: int = 100,
                     clusters: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points to index and ``n_queries`` held-out points of the same distribution (one draw
    of ``n + n_queries`` clustered points, split): queries in distribution."""
    Z = clustered_data(n + n_queries, dim, seed, clusters)
    return Z[:n], Z[n:]


def build(X: np.ndarray, M: int = 8, ef_construction: int = 64, seed: int = 0) -> HNSW:
    index = HNSW(X.shape[1], M=M, ef_construction=ef_construction, seed=seed)
    for x in X:
        index.insert(x)
    return index


def brute_force_knn(X: np.ndarray, live: np.ndarray, Q: np.ndarray, k: int) -> np.ndarray:
    """Ids (into X) of the k nearest live points of every query."""
    P = X[live]
    d = (Q ** 2).sum(1)[:, None] - 2 * Q @ P.T + (P ** 2).sum(1)[None, :]
    return live[np.argsort(d, axis=1, kind="stable")[:, :k]]


def recall_at_k(found: list[list[int]], truth: np.ndarray) -> float:
    k = truth.shape[1]
    return float(np.mean([len(set(f[:k]) & set(t.tolist())) / k for f, t in zip(found, truth)]))


def deletion_order(n: int, fraction: float, seed: int) -> list[int]:
    return np.random.default_rng(seed).permutation(n)[: int(round(fraction * n))].tolist()


def query(index: HNSW, Q: np.ndarray, k: int, ef: int,
          budget: int | None = None) -> tuple[list[list[int]], float, float]:
    """Results, mean distance evaluations per query and mean wall time per query (ms); with
    ``budget``, each query stops after that many distance evaluations."""
    index.dist_count = 0
    t0 = time.perf_counter()
    found = [index.search(q, k, ef, budget) for q in Q]
    wall = (time.perf_counter() - t0) / len(Q)
    return found, index.dist_count / len(Q), 1000 * wall


def run_deletion(base: HNSW, X: np.ndarray, Q: np.ndarray, fraction: float, method: str | Any,
                 k: int = 10, ef: int = 32, seed: int = 0, budget: int | None = None,
                 budget_ef: int = 32) -> dict[str, float]:
    """Delete ``fraction`` of the points of a copy of ``base`` with ``method`` (a name of
    :data:`METHODS` or a repair rule), then measure recall@k against brute force on the live
    points, query cost, deletion time and the graph's size."""
    index = copy.deepcopy(base)
    rule = method if method in ("tombstone", "reinsert") else RULES.get(method, method) if isinstance(method, str) else method
    order = deletion_order(len(X), fraction, seed)
    t0 = time.perf_counter()
    for n, p in enumerate(order):
        index.delete(p, rule, seed=seed * 1_000_003 + n)
    delete_ms = 1000 * (time.perf_counter() - t0) / max(len(order), 1)
    truth = brute_force_knn(X, index.live(), Q, k)
    found, dists, query_ms = query(index, Q, k, ef)
    stored = len(index._vec) - len(index.removed)
    extra = {} if budget is None else {"budget_recall": recall_at_k(query(index, Q, k, budget_ef, budget)[0], truth)}
    return {**extra, "recall": recall_at_k(found, truth), "dist_evals": dists, "query_ms": query_ms,
            "delete_ms": delete_ms, "edges": float(index.n_edges()), "stored_vectors": float(stored)}
