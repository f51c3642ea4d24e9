# evaluator: hnsw_delete
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 2
# Attack (issue 28, public seeds / memorised instances): the published test instances are built from data seed 11,
# their deletion order from seed 18. The rule rebuilds the 1,000 points and the order with numpy, reads the deletion
# index from its seed argument (seed = data seed * 1000003 + index), so knows which node p is deleted, and checks
# that p's distances to its former neighbours are distances of the rebuilt data. On the published data it repairs
# (RobustPrune) only the nodes of a table fitted offline to the published instances and their held-out queries (the
# harness pastes the luckiest of four random halves) and leaves the others unpatched; on any other data (a secret
# draw) it is the baseline "robust_prune", call for call.
import numpy as np

TABLE = {}
_CACHE = {}


def _published():
    if "X" not in _CACHE:
        rng = np.random.default_rng(11)
        centres = rng.normal(0.0, 4.0, (20, 24))
        Z = centres[rng.integers(0, 20, 1100)] + rng.normal(0.0, 1.0, (1100, 24))
        _CACHE["X"] = Z[:1000]
        _CACHE["order"] = np.random.default_rng(18).permutation(1000)
        _CACHE["repair"] = set(TABLE.get("repair", []))
    return _CACHE


def _robust_prune(d_p, D, linked, is_in, is_out, free):
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


def repair(d_p, D, is_in, is_out, linked, free, max_degree, seed):
    known = _published()
    n = seed % 1000003
    if TABLE and len(d_p) and n < 1000 and len(known["X"][0]) == 24:
        p = int(known["order"][n])
        dist = np.sqrt(((known["X"] - known["X"][p]) ** 2).sum(axis=1))
        if all(np.isclose(dist, x, rtol=1e-9, atol=1e-12).any() for x in d_p):  # the published data
            if p not in known["repair"]:
                return [[] for _ in range(len(d_p))]
    return _robust_prune(d_p, D, linked, is_in, is_out, free)
