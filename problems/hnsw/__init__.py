"""HNSW with deletion, after Mishra, Naamad, Wagner & Zhang, "Graph-based Nearest Neighbors with
Dynamic Updates via Random Walks" (ICLR 2026, arXiv 2512.18060).

* :class:`HNSW` — our own index (insert, layered search with ``ef``, tombstones, physical deletion
  with a pluggable repair rule);
* repair rules (:data:`RULES`): ``no_patch``, ``local_reconnect`` (naive neighbour reconnection),
  ``robust_prune`` (FreshDiskANN-style), ``spatch`` (our reading of the paper's deterministic
  deletion: top edges of the star-mesh clique, with weights of our choice; the paper's HNSW-level
  rule was not recovered) and ``spatch_random`` (the randomised one: the clique sampled with
  probability proportional to its weights);
* :mod:`._walks` — the graph-level star-mesh transform whose hitting-time property the tests check;
* :func:`run_deletion` — delete a fraction of points and measure recall@10 against brute force,
  distance evaluations and wall time per query, deletion time and graph size.

Imports nothing else of ours (numpy only).
"""

from hifo.problems.hnsw._experiment import (
    METHODS,
    brute_force_knn,
    build,
    clustered_data,
    deletion_order,
    data_and_queries,
    query,
    recall_at_k,
    run_deletion,
)
from hifo.problems.hnsw._index import HNSW
from hifo.problems.hnsw._repair import (
    RULES,
    apply_additions,
    check_additions,
    clique_weights,
    local_reconnect,
    local_view,
    no_patch,
    robust_prune,
    spatch_deterministic,
    spatch_random,
)
from hifo.problems.hnsw._walks import hitting_times, random_weighted_graph, sampled_star_mesh, star_mesh

__all__ = [
    "HNSW", "METHODS", "RULES", "apply_additions", "brute_force_knn", "build", "check_additions",
    "clique_weights", "clustered_data", "deletion_order", "hitting_times", "local_reconnect",
    "local_view", "no_patch", "query", "random_weighted_graph", "recall_at_k", "robust_prune", "data_and_queries", "run_deletion",
    "sampled_star_mesh", "spatch_deterministic", "spatch_random", "star_mesh",
]
