"""Evolving the neighbour-repair rule of HNSW deletion (Mishra et al., ICLR 2026).

The algorithm is our HNSW (:mod:`hifo.problems.hnsw`): a prebuilt index (built by the trusted
parent, shipped to the child with the instance) from which a fixed, seeded sequence of points is
physically deleted. At every layer of every deleted node ``p`` the candidate
``repair(d_p, D, is_in, is_out, linked, free, max_degree, seed)`` decides which edges to add
among ``p``'s former neighbours. It sees only that local picture (distances and link flags as
numpy arrays), never the index.

The child returns the edges that were added, per deleted node and layer. The parent **replays**
the whole deletion sequence on its own copy of the index, checking at each step that every
claimed edge joins two former neighbours of ``p``, is new, and fits the node's free slots
(otherwise the solution is infeasible), and then measures with its own code on the graph it
rebuilt, on held-out queries drawn from the data's own clusters (200 per train instance, 100 per
test instance): ``budget_recall`` (the primary metric, maximised: recall@10 against brute force
over the surviving points when every query may evaluate at most ``BUDGET`` distances, beam
``BUDGET_EF``, so recall and the deterministic latency measure are scored together at a matched
cost), ``recall`` and ``dist_evals`` of an unbudgeted ``ef`` = 10 search, and ``edges`` (memory;
degree caps bound it). The train set (the fitness the search sees) is 36 instances, 10 / 30 / 50 %
deleted, each its own data, so that the paper-style rule and the best other baseline, whose scores
differ by about 0.01, are told apart by more than the set's seed-to-seed noise
(docs/families/hnsw.md).

Departure from the paper: the SPatch baselines are our HNSW-level reading of the star-mesh
deletion. The paper's exact HNSW-level rule (which weights, which clique edges are kept) was not
recovered from the material we could read (abstract, published summaries): its walk is a softmax
walk (next vertex ``v`` with probability proportional to ``exp(-r^2 |q - v|^2)``, ``q`` the query,
as we read a summary whose stored text is cut off there) and its deterministic deletion keeps the
top edges of the star-mesh clique. Our clique weights
``w_i w_j / sum(w)``, ``w_i = exp(-d_p[i]^2/h^2)`` (``h`` the median of ``d_p``, our choice), rank
each neighbour's candidates as that walk's clique does for a query sitting at the deleted point
(``r = 1/h``): each neighbour links to the former neighbours nearest the deleted point, whatever
the query distribution and the neighbours' pairwise distances.
Re-insertion of the affected neighbours is not a baseline, since it needs the index, which the
slot's local view does not give.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterator

import numpy as np

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.hnsw import (
    HNSW,
    brute_force_knn,
    build,
    check_additions,
    data_and_queries,
    deletion_order,
    query,
    recall_at_k,
)

K, EF = 10, 10
# the primary metric: recall@10 with a beam of BUDGET_EF, every query stopped after BUDGET distance evaluations
BUDGET, BUDGET_EF = 60, 20

_DOCSTRING = """Chooses the edges that repair an HNSW layer after node p is deleted from it.

All arguments describe p's former neighbourhood N on this layer (nodes that linked to p or that
p linked to), in local indices 0..k-1:
    d_p: (k,) distances from p to each node of N.
    D: (k, k) pairwise distances within N.
    is_in: (k,) bool, node i had p in its neighbour list (it has just lost that edge).
    is_out: (k,) bool, p had node i in its neighbour list.
    linked: (k, k) bool, j is already in i's neighbour list.
    free: (k,) int, free slots in i's list (its degree cap minus its current degree).
    max_degree: the degree cap on this layer.
    seed: an int for randomised rules.

Return:
    A list of k lists: out[i] is the ordered list of local nodes j to append to i's neighbour
    list. Self-links and existing links are skipped; additions beyond free[i] are dropped.
"""

_SIGNATURE = ("def repair(d_p: np.ndarray, D: np.ndarray, is_in: np.ndarray, is_out: np.ndarray, "
              "linked: np.ndarray, free: np.ndarray, max_degree: int, seed: int) -> list:")

_RECONNECT_BODY = """    # Naive local reconnection: every node that lost its edge to p links to p's out-neighbours,
    # closest to itself first.
    k = len(d_p)
    out = []
    for i in range(k):
        if not is_in[i]:
            out.append([])
            continue
        cand = [j for j in range(k) if is_out[j] and j != i and not linked[i, j]]
        out.append(sorted(cand, key=lambda j: D[i, j])[: max(int(free[i]), 0)])
    return out
"""

_NO_PATCH_BODY = "    # Leave the hole: add no edge.\n    return [[] for _ in range(len(d_p))]\n"

_CLIQUE = """    k = len(d_p)
    if k == 0:
        return []
    # Star-mesh transform: p's Gaussian edge weights w_i become a clique with weights w_i w_j / sum(w).
    h = float(np.median(d_p)) or 1.0
    w = np.exp(-(np.asarray(d_p, dtype=float) / h) ** 2)
    S = np.outer(w, w) / w.sum()
    np.fill_diagonal(S, 0.0)
"""

_SPATCH_BODY = _CLIQUE + """    # Deterministic SPatch: keep the heaviest clique edges, greedily over all pairs.
    room = np.maximum(np.asarray(free, dtype=int), 0).copy()
    out = [[] for _ in range(k)]
    for flat in np.argsort(-S, axis=None, kind="stable"):
        i, j = divmod(int(flat), k)
        if i == j or S[i, j] <= 0 or linked[i, j] or room[i] <= 0:
            continue
        out[i].append(j)
        room[i] -= 1
    return out
"""

_SPATCH_RANDOM_BODY = _CLIQUE + """    # Randomised SPatch: each node samples partners with probability proportional to
    # the clique weight.
    rng = np.random.default_rng(seed)
    out = []
    for i in range(k):
        probs = np.where(linked[i], 0.0, S[i])
        n = min(max(int(free[i]), 0), int((probs > 0).sum()))
        out.append([] if n == 0 else rng.choice(k, size=n, replace=False, p=probs / probs.sum()).tolist())
    return out
"""

_ROBUST_BODY = """    # FreshDiskANN-style repair (RobustPrune, alpha = 1.2): every node that lost its edge to p
    # takes p's out-neighbours, closest first, unless a node it already keeps (or links to) is
    # alpha times closer to the candidate.
    alpha = 1.2
    k = len(d_p)
    out = []
    for i in range(k):
        if not is_in[i] or free[i] <= 0:
            out.append([])
            continue
        kept = [m for m in range(k) if linked[i, m]]
        add = []
        for j in sorted((j for j in range(k) if is_out[j] and j != i and not linked[i, j]), key=lambda j: D[i, j]):
            if len(add) >= int(free[i]):
                break
            if any(alpha * D[m, j] <= D[i, j] for m in kept):
                continue
            add.append(j)
            kept.append(j)
        out.append(add)
    return out
"""

_TEMPLATE = FunctionTemplate(name="repair", signature=_SIGNATURE, docstring=_DOCSTRING,
                             baseline_body=_RECONNECT_BODY)


def _source(body: str) -> str:
    return _TEMPLATE.source(body)


@dataclass(frozen=True)
class HNSWDeleteInstance:
    name: str
    X: np.ndarray
    Q: np.ndarray
    base: HNSW
    order: tuple[int, ...]
    seed: int
    # the seed of the rule's ``seed`` argument (``rule_seed * 1000003 + deletion index``); None: ``seed``, the data
    # seed (the published sets, whose data seed is public anyway). A secret draw gets one of its own: the data seed
    # in that argument let a rule rebuild the secret points and held-out queries (numpy, from the public generator)
    rule_seed: int | None = None


# The train set: 36 instances, 10 / 30 / 50 % deleted, each its own data (seed) and 200 held-out queries. One
# instance (until issue 29's round 2) left the paper-style rule and the best other baseline inside the seed-to-seed
# noise of the fitness: an instance's data moves every rule's score together (sd about 0.03 for one instance), and
# the paired difference of two rules varies from instance to instance (sd 0.01-0.02, heavy-tailed: on a few
# instances robust_prune loses 0.03-0.08 to spatch). Over 8 redraws of these 36 instances spatch scores
# 0.9431 +- 0.0049, robust_prune 0.9570 +- 0.0029, their paired difference -0.0138 +- 0.0042; with 18 instances the
# published gap was 0.004, inside the noise (docs/families/hnsw.md).
TRAIN_FRACTIONS, TRAIN_QUERIES = (0.1, 0.3, 0.5), 200
# name -> (points, dim, M, ef_construction, fraction deleted, data seed, held-out queries)
_SPECS = {
    "train": tuple((f"n800_d16_del{round(100 * frac)}_s{seed}", 800, 16, 6, 40, frac, seed, TRAIN_QUERIES)
                   for seed, frac in zip(range(20, 56), TRAIN_FRACTIONS * 12)),
    "test": (("n1000_d24_del10", 1000, 24, 6, 40, 0.1, 11, 100), ("n1000_d24_del50", 1000, 24, 6, 40, 0.5, 11, 100)),
}
# the train set's first three instances (10 / 30 / 50 % deleted): the test suite's cross-kernel check runs on them
# (the 36-instance set took 234-254 s per configuration; its check is in benchmarks/results/determinism.json)
_SPECS["train_head"] = _SPECS["train"][:3]


@lru_cache(maxsize=None)
def _built(n: int, dim: int, M: int, efc: int, seed: int, n_queries: int) -> tuple[np.ndarray, np.ndarray, HNSW]:
    X, Q = data_and_queries(n, dim, seed, n_queries)  # held-out points of the same clusters as the queries
    return X, Q, build(X, M=M, ef_construction=efc, seed=seed)


@lru_cache(maxsize=None)
def _load(instance_set: str) -> tuple[HNSWDeleteInstance, ...]:
    if instance_set not in _SPECS:
        raise HNSWDelete.unknown_instance_set(instance_set, _SPECS)
    out = []
    for name, n, dim, M, efc, frac, seed, n_queries in _SPECS[instance_set]:
        X, Q, base = _built(n, dim, M, efc, seed, n_queries)
        out.append(HNSWDeleteInstance(name, X, Q, base, tuple(deletion_order(n, frac, seed + 7)), seed))
    return tuple(out)


def _replay_rule(claimed: list[list[int]]) -> Callable[..., Any]:
    """A rule that reproduces the child's claimed edges (global ids) in the parent's replay."""
    def rule(ids: list[int], k: int) -> list[list[int]]:
        pos = {v: i for i, v in enumerate(ids)}
        out: list[list[int]] = [[] for _ in range(k)]
        for pair in claimed:
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(
                    isinstance(x, int) and not isinstance(x, bool) for x in pair)):
                raise ValueError(f"an added edge must be a pair of node ids, got {pair!r}")
            u, v = pair
            if u not in pos or v not in pos:
                raise ValueError(f"edge {u}->{v} does not join two former neighbours of the deleted node")
            out[pos[u]].append(pos[v])
        return out

    return rule


class HNSWDelete(Evaluator):
    """Recall of an HNSW index after mass deletion, with an evolved neighbour-repair rule.

    Instance sets: ``train`` (36 instances of 800 clustered points in 16-D, M = 6, 10 / 30 / 50 % deleted, each
    its own data seed, 200 held-out queries each; the published data seeds 20-55, redrawn from a secret only by the
    seed-noise measurement) and ``test`` (1,000 points in 24-D, 10 % and 50 % deleted, 100 queries; drawn per
    evaluator object from a secret, the published data seed 11 with ``public_seeds = True``, on which the test
    figures were measured). Per instance: ``recall``, ``dist_evals``, ``edges``, ``added_edges``. The rule's
    ``seed`` argument on a secret draw comes from a secret seed of its own, not the data seed (which it was until
    2026-12-07: ``seed // 1000003`` gave the data seed away, and with it the points and held-out queries); on the
    published sets it is the data seed.
    ``tests/evaluators/attacks/hnsw_seed_luck.py`` rebuilds the published test data and wins there.
    """

    name = "hnsw_delete"
    description = (
        "Deleting points from an HNSW nearest-neighbour graph: when a node p is removed from a layer, "
        "the nodes around it lose edges and searches can get stuck. Design the repair rule that, "
        "seeing only p's former neighbours (their distances to p and to each other, who linked to "
        "p, who p linked to, free slots under the degree cap), chooses which new edges to add. "
        "After 10-50 % of the points are deleted the index must still find the 10 nearest "
        "surviving neighbours of held-out query points drawn from the data's distribution: maximise "
        f"recall@10 when every query may evaluate at most {BUDGET} distances (beam ef = {BUDGET_EF}), "
        "so that recall and search cost are scored together. Baselines: naive reconnection, a "
        "FreshDiskANN-style RobustPrune repair, and our HNSW-level reading of the random-walk "
        "deletion of Mishra et al. (ICLR 2026): p is replaced by the star-mesh clique on its neighbours "
        "with weights w_i w_j / sum w, w_i = exp(-d_p[i]^2/h^2), keeping the heaviest edges (our choice "
        "of weights and of h, a softmax walk's weights for a query sitting at p; the paper's exact rule "
        "could not be recovered; these weights ignore the query distribution and the neighbours' "
        "pairwise distances)."
    )
    direction = "maximize"
    primary_metric = "budget_recall"
    template = _TEMPLATE
    instance_sets = ("train", "test")
    limits = Limits(timeout_s=120.0, cpu_s=180, memory_mb=4096)
    baselines = {"local_reconnect": _source(_RECONNECT_BODY), "no_patch": _source(_NO_PATCH_BODY),
                 "spatch": _source(_SPATCH_BODY), "spatch_random": _source(_SPATCH_RANDOM_BODY),
                 "robust_prune": _source(_ROBUST_BODY)}
    # Measured in-process, pinned (scripts/test.sh's numeric pins), by tests/evaluators/test_hnsw_delete.py
    # (train: the mean over its 36 instances) and its slow test (test); queries held out from the data's clusters,
    # BUDGET = 60, BUDGET_EF = 20.
    reference_figures = {
        "local_reconnect": {"train": {"budget_recall": 0.9475, "edges": 6250.222222},
                            "test": {"budget_recall": 0.8835, "edges": 7514.5}},
        "no_patch": {"train": {"budget_recall": 0.872944, "edges": 3141.666667},
                     "test": {"budget_recall": 0.913, "edges": 4180.0}},
        "spatch": {"train": {"budget_recall": 0.949639, "edges": 6332.305556},
                   "test": {"budget_recall": 0.909, "edges": 7583.0}},
        "spatch_random": {"train": {"budget_recall": 0.939556, "edges": 6332.444444},
                          "test": {"budget_recall": 0.8925, "edges": 7583.5}},
        "robust_prune": {"train": {"budget_recall": 0.956972, "edges": 5767.861111},
                         "test": {"budget_recall": 0.927, "edges": 7185.0}},
    }
    slot_process = True  # issue 28: the candidate in a process of its own, a fresh one per instance
    determinism_set = "train_head"
    tags = ("nearest neighbour search", "hnsw", "graph", "deletion")

    # the test instances (points, held-out queries, deletion order) are drawn per evaluator object from a secret
    # (Evaluator.secret_seed), each its own data: a rule that rebuilt the published data (seed 11) would know the
    # held-out queries and could add exactly the edges their searches need
    secret_sets = ("test",)

    def load_instances(self, instance_set: str) -> list[HNSWDeleteInstance]:
        if not self.seeds_secret(instance_set):
            return list(_load(instance_set))

        def draw() -> Iterator[HNSWDeleteInstance]:  # about 1 s of index building per instance
            for i, (name, n, dim, M, efc, frac, public, n_queries) in enumerate(_SPECS[instance_set]):
                seed = self.secret_seed(public, instance_set, i)
                X, Q = data_and_queries(n, dim, seed, n_queries)
                base = build(X, M=M, ef_construction=efc, seed=seed)
                yield HNSWDeleteInstance(f"{name}_secret{i}", X, Q, base, tuple(deletion_order(n, frac, seed + 7)), seed,
                                         rule_seed=self.secret_seed(public, instance_set, i, "rule"))

        return self.drawn_once(instance_set, draw)

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: HNSWDeleteInstance) -> dict[str, Any]:
        index = copy.deepcopy(instance.base)
        decisions: list[list[Any]] = []
        rule_seed = instance.seed if instance.rule_seed is None else instance.rule_seed

        def rule(**view: Any) -> Any:
            return heuristic(**{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in view.items()})

        for n, p in enumerate(instance.order):
            for d in index.delete(p, rule, seed=rule_seed * 1_000_003 + n):
                decisions.append([int(p), int(d["layer"]), [[int(u), int(v)] for u, v in d["additions"]]])
        return {"decisions": decisions}

    def score(self, instance: HNSWDeleteInstance, solution: Any) -> dict[str, float]:
        if not isinstance(solution, dict) or not isinstance(solution.get("decisions"), list):
            raise InfeasibleSolution(f"{instance.name}: the solution must be a dict with a 'decisions' list")
        claimed: dict[tuple[int, int], list] = {}
        for item in solution["decisions"]:
            if not (isinstance(item, list) and len(item) == 3 and isinstance(item[2], list)):
                raise InfeasibleSolution(f"{instance.name}: a decision must read [node, layer, edges]")
            claimed[(item[0], item[1])] = item[2]
        index = copy.deepcopy(instance.base)
        added = 0
        try:
            for n, p in enumerate(instance.order):
                for layer in range(index.level[p], -1, -1):
                    edges = claimed.pop((p, layer), [])
                    replay = _replay_rule(edges)
                    decided = index.delete_layer(p, layer, lambda view, ids: replay(ids, len(ids)))
                    if len(decided) != len(edges):
                        raise ValueError(f"node {p} layer {layer}: {len(edges) - len(decided)} claimed edges "
                                         "are self-links, duplicates or beyond the free slots")
                    added += len(decided)
                index.finish_delete(p)
        except ValueError as exc:
            raise InfeasibleSolution(f"{instance.name}: {exc}") from None
        if claimed:
            raise InfeasibleSolution(f"{instance.name}: decisions for nodes/layers that were not deleted: "
                                     f"{sorted(claimed)[:5]}")
        truth = brute_force_knn(instance.X, index.live(), instance.Q, K)
        found, dists, _ = query(index, instance.Q, K, EF)
        budgeted, spent, _ = query(index, instance.Q, K, BUDGET_EF, BUDGET)
        return {"budget_recall": recall_at_k(budgeted, truth), "budget_dist_evals": float(spent),
                "recall": recall_at_k(found, truth), "dist_evals": float(dists),
                "edges": float(index.n_edges()), "added_edges": float(added)}


__all__ = ["HNSWDelete", "HNSWDeleteInstance", "check_additions"]
