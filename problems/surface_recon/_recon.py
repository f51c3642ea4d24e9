"""Spectral triangle orientation and simply connected region growing (the winding field, the
paper's reconstruction step, and the alternation are in :mod:`._winding`).

* :func:`face_quality` — how surface-like each Delaunay face is (its normal agrees with the local
  PCA normals at its vertices, its edges are short against the local sample spacing); faces above
  :data:`CANDIDATE_Q` are the *candidate triangles*.
* :func:`edge_pairs` — candidate pairs sharing an edge, with the sign that makes their
  orientations consistent (the shared edge traversed in opposite directions).
* :func:`spectral_orientation` — the smallest eigenvector of the signed graph Laplacian over the
  candidates, per connected component; each component's global sign is fixed by its convex-hull
  faces (whose interior must be on the hull's inner side), or, lacking any, by a vote that
  outward normals point away from the point cloud's centroid. With the unweighted pairs of the previous
  version (``flat_power=0``) the eigenvector was localised (about 93 % of its entries below 1e-6 of the
  largest on the largest component of a 500-point peanut or C-tube) and the signs of those tiny entries,
  the eigensolver's rounding, carried the orientation; with the flatness weights (:func:`edge_pairs`) none
  is (0 % below 1e-6 on the same clouds).
* :func:`grow` — the reconstruction: by default the outside is carved from the convex hull inwards
  (or the inside grown from a seed), one tet at a time in order of cost (the tet's evidence of
  being inside, from the oriented scores of its faces), a tet moving only if the inside stays a
  topological ball (the link condition below). Every step is a ball, hence its boundary a closed
  2-manifold of genus 0; carving stops at :data:`WALL`. With a per-tet ``cost`` (the winding field)
  the same carving is the paper's extraction step (:func:`._winding.carve`).

Link condition for adding tet ``t`` to a ball ``S`` through ``k`` shared faces: ``k = 1`` needs the
opposite vertex to be outside ``S``; ``k = 2`` needs the edge not on the two shared faces to be
outside ``S``; ``k = 3`` is always allowed; ``k = 4`` (closing a cavity) and ``k = 0`` never.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix, csgraph, diags, identity
from scipy.sparse.linalg import eigsh
from scipy.spatial import cKDTree

from hifo.problems._repro import quantize
from hifo.problems.surface_recon._mesh import Complex, local_spacing

CANDIDATE_Q = 0.2
FLAT_POWER = 2.0  # pair weight ~ flatness ** FLAT_POWER (edge_pairs); 0 gives the unweighted pairs
SIZE_BIAS = 0.0  # sculpting by size among equal costs (0: off; measured to hurt)
WALL = -0.3  # carving stops when the cheapest tet's cost exceeds this
BOUNDARY_PENALTY = 0.0  # per boundary face, in the agreement energy (used when wall is None)


def point_normals(points: np.ndarray, k: int = 12) -> np.ndarray:
    """Unoriented unit normals by local PCA (the smallest principal axis of the k nearest points)."""
    _, idx = cKDTree(points).query(points, k=k + 1)
    nb = points[idx] - points[idx].mean(axis=1, keepdims=True)
    cov = np.einsum("nki,nkj->nij", nb, nb)
    return np.linalg.eigh(cov)[1][:, :, 0]


def face_quality(cx: Complex, scale: float = 2.0, sharp: float = 4.0) -> np.ndarray:
    """Surface likelihood in [0, 1]: the face's normal agrees with the PCA normals at its three
    vertices (``|cos|^sharp``, averaged) and its longest edge is short against the local spacing."""
    h = local_spacing(cx.points)
    p = cx.points[cx.faces]  # (nf, 3, 3)
    longest = np.max(np.linalg.norm(p - p[:, [1, 2, 0]], axis=2), axis=1)
    size = np.exp(-((longest / (scale * h[cx.faces].mean(axis=1))) ** 4))
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    n /= np.linalg.norm(n, axis=1, keepdims=True) + 1e-300
    vn = point_normals(cx.points)[cx.faces]  # (nf, 3, 3)
    align = (np.abs(np.einsum("fi,fki->fk", n, vn)) ** sharp).mean(axis=1)
    return quantize(align * size)  # a threshold and the heap depend on it: machine-independent (_repro)


def edge_pairs(cx: Complex, quality: np.ndarray, flat_power: float = FLAT_POWER
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pairs (P, 2), consistency sign (P,), weight (P,)) over candidate faces sharing an edge.

    Weight: ``quality[i] * quality[j] * flat ** flat_power`` with ``flat = (1 - cos(theta)) / 2`` and
    ``theta`` the angle between the two faces' half-planes around the shared edge (1: the faces continue
    each other across the edge, as neighbours on a surface do; 0: folded onto each other). Without it
    (``flat_power = 0``) every fan of three or more candidates around an edge is a frustrated cycle of
    constraints and the spectral orientation is measured to be wrong on about half the true surface
    faces (see ``docs/families/surface_recon.md``).
    """
    cand = np.flatnonzero(quality > CANDIDATE_Q)
    by_edge: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for f in cand.tolist():
        a, b, c = cx.faces[f].tolist()
        # reference cycle (a, b, c): a->b and b->c forward, c->a backward for the sorted edge (a, c)
        by_edge[(a, b)].append((f, 1))
        by_edge[(b, c)].append((f, 1))
        by_edge[(a, c)].append((f, -1))
    pairs, signs, edges = [], [], []
    for edge, group in by_edge.items():
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                pairs.append((group[i][0], group[j][0]))
                signs.append(-group[i][1] * group[j][1])
                edges.append(edge)
    P = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    S = np.asarray(signs, dtype=float)
    if not len(P):
        return P, S, np.zeros(0)
    E = np.asarray(edges, dtype=np.int64)
    e0, e1 = cx.points[E[:, 0]], cx.points[E[:, 1]]
    d = (e1 - e0) / np.linalg.norm(e1 - e0, axis=1, keepdims=True)
    half = []
    for k in (0, 1):  # the apex of each face, projected off the edge's line
        apex = cx.points[cx.faces[P[:, k]].sum(axis=1) - E.sum(axis=1)]
        v = apex - e0
        v = v - d * np.einsum("ij,ij->i", v, d)[:, None]
        half.append(v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-300))
    flat = (1.0 - np.einsum("ij,ij->i", half[0], half[1])) / 2.0
    # on the grid: the weights decide the eigenvector (_repro)
    W = quantize(quality[P[:, 0]] * quality[P[:, 1]] * np.clip(flat, 0.0, 1.0) ** flat_power)
    return P, S, W


def spectral_orientation(cx: Complex, quality: np.ndarray, pairs: np.ndarray, signs: np.ndarray,
                         weights: np.ndarray) -> np.ndarray:
    """Signed orientation score per face in [-1, 1] (positive: interior on the normal's side)."""
    nf = len(cx.faces)
    score = np.zeros(nf)
    cand = np.flatnonzero(quality > CANDIDATE_Q)
    if len(pairs) == 0:
        return score
    pos = {int(f): i for i, f in enumerate(cand)}
    r = np.array([pos[int(f)] for f in pairs[:, 0]])
    c = np.array([pos[int(f)] for f in pairs[:, 1]])
    n = len(cand)
    A = coo_matrix((np.concatenate([weights * signs] * 2), (np.concatenate([r, c]), np.concatenate([c, r]))),
                   shape=(n, n)).tocsr()
    absA = abs(A)
    deg = np.asarray(absA.sum(axis=1)).ravel()
    n_comp, labels = csgraph.connected_components(absA, directed=False)
    centroid = cx.points.mean(axis=0)
    tri = cx.points[cx.faces[cand]]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    away = np.sign(np.einsum("ij,ij->i", normal, tri.mean(axis=1) - centroid))  # +1: normal points outwards
    hull_pos = cx.face_tets[cand, 1] < 0  # outside on the neg side: interior must be on the normal's side
    hull_neg = cx.face_tets[cand, 0] < 0
    for k in range(n_comp):
        idx = np.flatnonzero(labels == k)
        if len(idx) < 3:
            continue
        sub = A[idx][:, idx]
        L = (diags(deg[idx]) - sub).tocsc()
        if len(idx) < 400:
            vals, vecs = np.linalg.eigh(L.toarray())
            x = vecs[:, 0]
        else:
            v0 = np.random.default_rng(0).uniform(0.5, 1.0, len(idx))  # ARPACK start: fixed, for determinism
            vals, vecs = eigsh(L + 1e-9 * identity(len(idx)), k=1, sigma=-1e-3, which="LM", v0=v0)
            x = vecs[:, 0]
        x = x / (np.abs(x).max() or 1.0)
        vote = x[hull_pos[idx]].sum() - x[hull_neg[idx]].sum()
        if abs(vote) < 1e-12:
            vote = -(x * away[idx]).sum()  # interior opposite to the outward-pointing normal
        x = x if vote >= 0 else -x
        score[cand[idx]] = np.sign(x) * quality[cand[idx]]
    return score


def _seed(cx: Complex) -> int:
    inner = (cx.face_tets[cx.tet_faces] >= 0).all(axis=(1, 2))
    vol = np.where(inner, cx.volumes, -1.0)
    return int(np.argmax(vol))


def grow(cx: Complex, score: np.ndarray, penalty: float = BOUNDARY_PENALTY, carve: bool = True,
         wall: float | None = WALL, size_bias: float = SIZE_BIAS,
         tet_level: bool = True, cost: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, float]]:
    """A ball of tetrahedra whose boundary follows the oriented ``score``.

    ``carve=True`` grows the *outside* region from the convex hull inwards (sculpting: the inside
    starts as every tetrahedron); ``carve=False`` grows the inside from an interior seed. Either
    way the region changes one tet at a time under the link condition, so the inside stays a ball
    at every step (in the 3-sphere the complement of a PL ball is a PL ball).

    The frontier tet with the smallest cost goes next. With ``tet_level`` (default) a tet's cost is
    its evidence of being inside: the sum over its four faces of ``score[f]`` if the tet is on
    ``f``'s ``pos`` side, ``-score[f]`` otherwise (negated when growing the inside); without it,
    the cost of the face crossed. With ``wall`` set, the process stops when the cheapest cost
    exceeds it; with ``wall=None`` it runs to the end and keeps the prefix whose boundary agrees
    most with the scores (agreement of a boundary face: its score toward the inside minus
    ``penalty``). At least one tet stays inside. ``cost`` (per tet, carving only) replaces the
    tet-level evidence, e.g. the winding field of :func:`winding_field` (see :func:`carve`).
    """
    m = len(cx.tets)
    score = np.asarray(score, dtype=float)
    region = np.zeros(m, dtype=bool)  # the grown region: the outside (carve) or the inside
    vcount = np.zeros(len(cx.points), dtype=np.int64)
    ecount: dict[tuple[int, int], int] = defaultdict(int)
    order: list[int] = []
    tets, tf, ft = cx.tets.tolist(), cx.tet_faces.tolist(), cx.face_tets.tolist()

    def agree_inside(f: int, t: int) -> float:  # boundary face f with the inside on tet t's side
        return (score[f] if ft[f][0] == t else -score[f]) - penalty

    def in_region(t: int) -> bool:
        return t < 0 if carve else (t >= 0 and bool(region[t]))

    def mark(vs: list[int]) -> None:
        for a in vs:
            vcount[a] += 1
        for i in range(len(vs)):
            for j in range(i + 1, len(vs)):
                ecount[(min(vs[i], vs[j]), max(vs[i], vs[j]))] += 1

    def allowed(t: int) -> bool:
        v = tets[t]
        shared = [i for i in range(4) if (o := _other(ft, tf[t][i], t)) < 0 and carve or o >= 0 and region[o]]
        k = len(shared)
        if k == 1:
            return vcount[v[shared[0]]] == 0
        if k == 2:
            a, b = v[shared[0]], v[shared[1]]  # the faces opposite a and b share the edge not touching a, b
            return ecount.get((min(a, b), max(a, b)), 0) == 0
        return k == 3

    def add(t: int, energy: float) -> float:
        for f in tf[t]:
            o = _other(ft, f, t)
            if (o < 0 and carve) or (o >= 0 and region[o]):  # f leaves the boundary / joins it
                energy += -agree_inside(f, t) if carve else -agree_inside(f, o)
            else:
                energy += agree_inside(f, o) if carve else agree_inside(f, t)
        region[t] = True
        mark(tets[t])
        order.append(t)
        return energy

    heap: list[tuple[float, int, int]] = []
    # Sculpting order among equal costs: big tetrahedra (circumradius against the mean spacing) first.
    rel = np.minimum(cx.circumradii / local_spacing(cx.points).mean(), 4.0)
    bias = (size_bias * rel).tolist()
    # Tet-level evidence: the sum over its faces of "the interior is on this tet's side".
    side = np.where(cx.face_tets[cx.tet_faces, 0] == np.arange(m)[:, None], 1.0, -1.0)
    tet_cost = ((score[cx.tet_faces] * side).sum(axis=1) * (1.0 if carve else -1.0)).tolist()
    if cost is not None:
        if not carve:
            raise ValueError("a per-tet cost orders the carving; growing uses the face scores")
        tet_cost = np.asarray(cost, dtype=float).tolist()
        tet_level = True

    def push(f: int, t: int) -> None:  # t is beyond face f from the region
        c = _cost(score[f], ft[f][0] == t, carve) if not tet_level else tet_cost[t]
        heapq.heappush(heap, (c - bias[t], f, t))

    energies: list[float] = []
    if carve:
        hull = [f for f in range(len(ft)) if min(ft[f]) < 0]
        energy = 0.0
        for f in hull:
            t = max(ft[f])
            energy += agree_inside(f, t)
            mark(cx.faces[f].tolist())
            push(f, t)
    else:
        seed = _seed(cx)
        energy = add(seed, 0.0)
        for f in tf[seed]:
            o = _other(ft, f, seed)
            if o >= 0:
                push(f, o)
    energies.append(energy)
    while heap and len(order) < m - 1:
        key, f, t = heapq.heappop(heap)
        if wall is not None and key > wall:
            break
        if region[t] or not allowed(t):
            continue
        energy = add(t, energy)
        energies.append(energy)
        for g in tf[t]:
            o = _other(ft, g, t)
            if o >= 0 and not region[o]:
                push(g, o)
    best = len(energies) - 1 if wall is not None else int(np.argmax(energies))
    if carve:  # energies[0]: nothing carved (the convex hull)
        inside = np.ones(m, dtype=bool)
        inside[np.asarray(order[:best], dtype=np.int64)] = False
    else:
        inside = np.zeros(m, dtype=bool)
        inside[np.asarray(order[: best + 1], dtype=np.int64)] = True
    return inside, {"steps": float(len(order)), "kept": float(inside.sum()), "energy": float(energies[best])}


def _cost(score_f: float, target_is_pos: bool, carve: bool) -> float:
    """Cost of moving the tet on one side of face f into the region: how much f looks like a
    wall whose interior is on that tet's side (carving) or on the region's side (growing)."""
    toward_target = score_f if target_is_pos else -score_f  # > 0: interior on the target's side
    return toward_target if carve else -toward_target


def _other(ft: list[list[int]], f: int, t: int) -> int:
    return ft[f][1] if ft[f][0] == t else ft[f][0]


def features(cx: Complex, inside: np.ndarray) -> dict[str, np.ndarray]:
    ins = np.append(inside, False)  # index -1 -> the outside
    pos = ins[cx.face_tets[:, 0]]
    neg = ins[cx.face_tets[:, 1]]
    return {"inside_pos": pos, "inside_neg": neg, "on_boundary": pos != neg}


def check_scores(values: Any, n: int) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.shape != (n,):
        raise ValueError(f"the reorientation rule must return {n} scores, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("the reorientation rule returned non-finite scores")
    # on the grid: sums of four scores (a tet's cost, the carving order) are then exact on every CPU
    return quantize(np.clip(arr, -1.0, 1.0))
