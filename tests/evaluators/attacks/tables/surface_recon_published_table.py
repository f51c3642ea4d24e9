"""Table of ``surface_recon_published_table``: for each published test instance, its fingerprint (the number of
Delaunay faces and of candidate pairs, what the slot sees) and its surface faces signed by the true shape's inside
(+(f + 1): the inside is on face f's pos side, -(f + 1): on its neg side), as a memorising rule would carry them."""

import numpy as np

from hifo.problems.surface_recon import _shapes
from hifo.problems.surface_recon._recon import edge_pairs, face_quality


def true_sides(instance) -> np.ndarray:
    """+1 / -1 / 0 per face: which side of the face is inside the true shape (0: both or neither)."""
    cx = instance.complex
    inside = _shapes.inside(instance.shape, cx.points[cx.tets].mean(axis=1))
    side = np.where(cx.face_tets >= 0, inside[np.maximum(cx.face_tets, 0)], False)
    return side[:, 0].astype(int) - side[:, 1].astype(int)


def table(ev) -> list[tuple[int, int, list[int]]]:
    out = []
    for inst in ev.load_instances("test_published"):
        pairs, _, _ = edge_pairs(inst.complex, face_quality(inst.complex))
        sides = true_sides(inst)
        faces = np.flatnonzero(sides)
        out.append((len(sides), len(pairs), [int(s * (f + 1)) for f, s in zip(faces, sides[faces])]))
    return out
