"""hifo.problems.hnsw: the index against brute force, deletion rules, the star-mesh property."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.hnsw import (
    RULES,
    brute_force_knn,
    build,
    clustered_data,
    hitting_times,
    local_view,
    query,
    random_weighted_graph,
    recall_at_k,
    run_deletion,
    sampled_star_mesh,
    star_mesh,
)


@pytest.fixture(scope="module")
def data():
    X = clustered_data(400, 8, seed=0, clusters=8)
    Q = clustered_data(50, 8, seed=1, clusters=8)
    return X, Q, build(X, M=6, ef_construction=40, seed=0)


def test_search_matches_brute_force(data):
    X, Q, index = data
    truth = brute_force_knn(X, np.arange(len(X)), Q, 10)
    found = [index.search(q, 10, 64) for q in Q]
    assert recall_at_k(found, truth) >= 0.97
    low = [index.search(q, 10, 10) for q in Q]
    assert recall_at_k(low, truth) < recall_at_k(found, truth) + 1e-9  # ef trades recall


def test_graph_invariants(data):
    _, _, index = data
    for layer, links in enumerate(index.links):
        for u, lst in links.items():
            assert len(lst) <= index.max_degree(layer) and u not in lst and len(set(lst)) == len(lst)
            assert all(index.level[v] >= layer for v in lst)
            for v in lst:
                assert u in index.rev[layer][v]
    assert index.level[index.entry] == max(index.level)


@pytest.mark.parametrize("method", ["no_patch", "local_reconnect", "spatch", "spatch_random"])
def test_physical_deletion_removes_every_trace(data, method):
    X, Q, base = data
    import copy
    index = copy.deepcopy(base)
    gone = list(range(0, 400, 3))
    for n, p in enumerate(gone):
        index.delete(p, RULES[method], seed=n)
    dead = set(gone)
    for layer, links in enumerate(index.links):
        assert not dead & set(links)
        for u, lst in links.items():
            assert not dead & set(lst) and len(lst) <= index.max_degree(layer)
            for v in lst:
                assert u in index.rev[layer][v]
    assert index.entry not in dead
    for q in Q[:10]:
        assert not dead & set(index.search(q, 10, 32))


def test_tombstones_route_but_are_never_returned(data):
    X, Q, base = data
    import copy
    index = copy.deepcopy(base)
    for p in range(0, 400, 2):
        index.delete(p, "tombstone")
    assert index.n_edges() == base.n_edges()
    for q in Q[:10]:
        assert all(i % 2 == 1 for i in index.search(q, 10, 32))
    with pytest.raises(KeyError):
        index.delete(0, "tombstone")


def test_repair_helps_recall_over_no_patch(data):
    X, Q, base = data
    res = {m: run_deletion(base, X, Q, 0.5, m, ef=10) for m in ("no_patch", "local_reconnect", "spatch", "tombstone")}
    assert res["spatch"]["recall"] > res["no_patch"]["recall"]
    assert res["local_reconnect"]["recall"] > res["no_patch"]["recall"]
    assert res["tombstone"]["stored_vectors"] == 400 and res["spatch"]["stored_vectors"] == 200
    # the paper's case against tombstones: searches over a half-dead graph cost more than over a repaired one
    assert res["tombstone"]["dist_evals"] > res["spatch"]["dist_evals"]
    _, before, _ = query(base, Q, 10, 10)
    assert res["tombstone"]["dist_evals"] > before


def test_local_view_sees_only_the_neighbourhood(data):
    _, _, index = data
    p = index.entry
    view, ids = local_view(index, p, 0, seed=3)
    k = len(ids)
    assert set(view) == {"d_p", "D", "is_in", "is_out", "linked", "free", "max_degree", "seed"}
    assert view["D"].shape == (k, k) and np.allclose(view["D"], view["D"].T)
    assert all(view["is_in"][i] or view["is_out"][i] for i in range(k))
    assert np.all(view["free"] >= 0) and view["max_degree"] == index.max_degree(0)


# ---- the paper's property: deletion by star-mesh preserves hitting times ---------------------
def test_star_mesh_preserves_hitting_times_exactly():
    """Hitting times on the star-mesh graph equal the old walk's, counting only steps off p."""
    rng = np.random.default_rng(0)
    for trial in range(5):
        W = random_weighted_graph(12, 0.3, rng)
        p = int(rng.integers(12))
        Wp = star_mesh(W, p)
        assert np.allclose(Wp.sum(1), np.delete(W.sum(1), p))  # degrees preserved
        keep = [i for i in range(12) if i != p]
        for t_new, target in enumerate(keep[:4]):
            cost = np.ones(12)
            cost[p] = 0.0
            old = np.delete(hitting_times(W, target, cost), p)
            assert np.allclose(hitting_times(Wp, t_new), old, rtol=1e-9, atol=1e-9)
        # plainly dropping p does change them: the property is not vacuous
        dropped = W[np.ix_(keep, keep)]
        cost = np.ones(12)
        cost[p] = 0.0
        assert not np.allclose(hitting_times(dropped, 0), np.delete(hitting_times(W, keep[0], cost), p), rtol=1e-3)


def test_randomised_deletion_preserves_the_walk_in_expectation():
    rng = np.random.default_rng(1)
    W = random_weighted_graph(10, 0.4, rng)
    p = 3
    exact = star_mesh(W, p)
    samples = [sampled_star_mesh(W, p, rng) for _ in range(6000)]
    mean = np.mean(samples, axis=0)
    assert np.allclose(mean, exact, atol=0.02 * exact.max())
    for S in samples[:20]:  # each sample keeps every degree and adds at most deg(p) edges
        assert np.allclose(S.sum(1), exact.sum(1))
        new = (S > 1e-12) & ~(np.delete(np.delete(W, p, 0), p, 1) > 0)
        np.fill_diagonal(new, False)
        assert new.sum() <= 2 * (W[p] > 0).sum()
    ht_exact = hitting_times(exact, 0)
    ht_mean = np.mean([hitting_times(S, 0) for S in samples[:2000]], axis=0)
    assert np.allclose(ht_mean, ht_exact, rtol=0.1)


def test_reinsert_and_robust_prune_repairs_keep_the_graph_valid_and_beat_no_patch(data):
    """The non-local re-insertion repair and the FreshDiskANN-style rule (issue 29): the deleted nodes
    leave every list, degree caps hold, and both keep more recall than leaving the holes."""
    import copy

    from hifo.problems.hnsw import deletion_order, query, run_deletion

    X, Q, base = data
    for method in ("reinsert", "robust_prune"):
        index = copy.deepcopy(base)
        order = deletion_order(len(X), 0.4, 3)
        for p in order:
            index.delete(p, method if method == "reinsert" else RULES[method])
        gone = set(order)
        for layer, links in enumerate(index.links):
            for u, lst in links.items():
                assert u not in gone and not gone & set(lst)
                assert len(lst) <= index.max_degree(layer) and u not in lst and len(set(lst)) == len(lst)
        truth = brute_force_knn(X, index.live(), Q, 10)
        assert recall_at_k(query(index, Q, 10, 10)[0], truth) > run_deletion(base, X, Q, 0.4, "no_patch", ef=10,
                                                                              seed=3)["recall"]


def test_a_budget_caps_distance_evaluations(data):
    from hifo.problems.hnsw import query

    X, Q, index = data
    _, spent, _ = query(index, Q, 10, 64, budget=30)
    assert spent <= 30
    assert query(index, Q, 10, 64)[1] > 30
