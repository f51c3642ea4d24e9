"""The Delaunay complex as arrays, surface checks, Chamfer distance and the two baselines.

A face is a sorted vertex triple ``(a, b, c)``; its *reference normal* is ``(b - a) x (c - a)``.
``face_tets[f] = (pos, neg)``: the tetrahedron on the side the normal points to and the one on
the other side (``-1``: the outside of the convex hull).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull, Delaunay, cKDTree

_FACES_OF_TET = ((1, 2, 3), (0, 2, 3), (0, 1, 3), (0, 1, 2))  # face i is opposite vertex i


@dataclass
class Complex:
    points: np.ndarray       # (n, 3)
    tets: np.ndarray         # (m, 4) vertex ids
    faces: np.ndarray        # (nf, 3) sorted vertex ids
    face_tets: np.ndarray    # (nf, 2) (pos side, neg side), -1 = outside
    tet_faces: np.ndarray    # (m, 4) face ids, tet_faces[t, i] is opposite tets[t, i]
    volumes: np.ndarray      # (m,)
    circumradii: np.ndarray  # (m,)


def build_complex(points: np.ndarray) -> Complex:
    pts = np.asarray(points, dtype=float)
    tri = Delaunay(pts)
    tets = tri.simplices.astype(np.int64)
    m = len(tets)
    all_faces = np.sort(tets[:, _FACES_OF_TET].reshape(-1, 3), axis=1)  # (4m, 3)
    faces, inverse = np.unique(all_faces, axis=0, return_inverse=True)
    inverse = inverse.reshape(m, 4)
    a, b, c = (pts[faces[:, k]] for k in range(3))
    normal = np.cross(b - a, c - a)
    face_tets = np.full((len(faces), 2), -1, dtype=np.int64)
    apex = pts[tets]  # (m, 4, 3)
    for i in range(4):
        f = inverse[:, i]
        side = np.einsum("ij,ij->i", normal[f], apex[:, i] - a[f]) > 0
        face_tets[f[side], 0] = np.arange(m)[side]
        face_tets[f[~side], 1] = np.arange(m)[~side]
    e1, e2, e3 = (apex[:, k] - apex[:, 0] for k in (1, 2, 3))
    volumes = np.abs(np.einsum("ij,ij->i", e1, np.cross(e2, e3))) / 6.0
    # circumcentre: solve 2 [e1; e2; e3] x = [|e1|^2, |e2|^2, |e3|^2]
    A = np.stack([e1, e2, e3], axis=1)
    rhs = 0.5 * np.stack([(e1 * e1).sum(1), (e2 * e2).sum(1), (e3 * e3).sum(1)], axis=1)
    det = np.linalg.det(A)
    ok = np.abs(det) > 1e-14
    cc = np.zeros((m, 3))
    cc[ok] = np.linalg.solve(A[ok], rhs[ok][..., None])[..., 0]
    radii = np.where(ok, np.linalg.norm(cc, axis=1), np.inf)
    return Complex(pts, tets, faces, face_tets, inverse.astype(np.int64), volumes, radii)


def oriented_boundary(cx: Complex, inside: np.ndarray) -> np.ndarray:
    """Faces between an inside tet and a non-inside one, ordered so their normal points outwards."""
    ins = np.asarray(inside, dtype=bool)
    pos = np.where(cx.face_tets[:, 0] >= 0, ins[cx.face_tets[:, 0]], False)
    neg = np.where(cx.face_tets[:, 1] >= 0, ins[cx.face_tets[:, 1]], False)
    out = []
    f_pos = cx.faces[pos & ~neg]  # interior on the normal's side: flip
    out.append(f_pos[:, [0, 2, 1]])
    out.append(cx.faces[neg & ~pos])
    return np.concatenate(out, axis=0)


def topology(tris: np.ndarray) -> dict[str, float]:
    """Closed, edge-manifold, vertex-manifold, oriented-consistent, Euler characteristic, components."""
    tris = np.asarray(tris, dtype=np.int64).reshape(-1, 3)
    if len(tris) == 0:
        return {"closed": 0.0, "edge_manifold": 0.0, "vertex_manifold": 0.0, "oriented": 0.0,
                "euler": 0.0, "components": 0.0, "genus0": 0.0, "faces": 0.0}
    directed = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    und = np.sort(directed, axis=1)
    edges, counts = np.unique(und, axis=0, return_counts=True)
    closed = bool((counts >= 2).all())
    edge_manifold = bool((counts == 2).all())
    _, dcounts = np.unique(directed, axis=0, return_counts=True)
    oriented = edge_manifold and bool((dcounts == 1).all())
    verts = np.unique(tris)
    # vertex link: the opposite edges of the faces around v must form one cycle
    links: dict[int, list[tuple[int, int]]] = {int(v): [] for v in verts}
    for a, b, c in tris.tolist():
        links[a].append((b, c))
        links[b].append((c, a))
        links[c].append((a, b))
    vertex_manifold = edge_manifold and all(_single_cycle(e) for e in links.values())
    parent = {int(v): int(v) for v in verts}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges.tolist():
        parent[find(a)] = find(b)
    comps = len({find(int(v)) for v in verts})
    euler = len(verts) - len(edges) + len(tris)
    genus0 = closed and edge_manifold and vertex_manifold and comps == 1 and euler == 2
    return {"closed": float(closed), "edge_manifold": float(edge_manifold),
            "vertex_manifold": float(vertex_manifold), "oriented": float(oriented), "euler": float(euler),
            "components": float(comps), "genus0": float(genus0), "faces": float(len(tris))}


def _single_cycle(edges: list[tuple[int, int]]) -> bool:
    adj: dict[int, list[int]] = {}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
        adj.setdefault(b, []).append(a)
    if any(len(n) != 2 for n in adj.values()):
        return False
    start = next(iter(adj))
    seen, stack = {start}, [start]
    while stack:
        for n in adj[stack.pop()]:
            if n not in seen:
                seen.add(n)
                stack.append(n)
    return len(seen) == len(adj)


def sample_mesh(points: np.ndarray, tris: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """``n`` points uniform in area on a triangle mesh (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    a, b, c = (points[tris[:, k]] for k in range(3))
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    idx = rng.choice(len(tris), size=n, p=area / area.sum())
    r1, r2 = rng.random(n), rng.random(n)
    s = np.sqrt(r1)
    return (1 - s)[:, None] * a[idx] + (s * (1 - r2))[:, None] * b[idx] + (s * r2)[:, None] * c[idx]


def chamfer(points: np.ndarray, tris: np.ndarray, truth: np.ndarray, n: int = 20000) -> float:
    """Symmetric Chamfer distance (mean of both directions' mean nearest-neighbour distance)."""
    if len(tris) == 0:
        return float("inf")
    mesh = sample_mesh(points, tris, n)
    d1, _ = cKDTree(truth).query(mesh)
    d2, _ = cKDTree(mesh).query(truth)
    return float(0.5 * (d1.mean() + d2.mean()))


def alpha_shape(cx: Complex, alpha: float) -> np.ndarray:
    """Alpha shape from the Delaunay complex: boundary of the tets with circumradius < alpha."""
    return oriented_boundary(cx, cx.circumradii < alpha)


def convex_hull(points: np.ndarray) -> np.ndarray:
    return ConvexHull(points).simplices.astype(np.int64)


def local_spacing(points: np.ndarray, k: int = 6) -> np.ndarray:
    d, _ = cKDTree(points).query(points, k=k + 1)
    return d[:, 1:].mean(axis=1)
