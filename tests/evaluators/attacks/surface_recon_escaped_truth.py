# evaluator: surface_recon
# expect: fence: import of 'sys' not allowed
# escaped: no better than the best baseline
# instance: 4
# fallback: vote
# Attack (issue 28, measured there at Chamfer 0.0217 vs 0.0419; on the winding-field reconstruction, train
# instance 4 (six-armed star): 0.0307 vs the best baseline's 0.0324), written for a candidate that has escaped the
# fence: walk up the caller's frames to the instance (its Delaunay complex and the name of its shape) and
# orient every face by the true shape: a face is a surface face exactly when one of its tetrahedra has its
# centroid inside the shape and the other does not. In the algorithm's process that is the answer; in a slot
# process the stack holds only the slot server, and the rule falls back to the vote baseline.
import sys

import numpy as np


def _instance():
    frame = sys._getframe(1)
    while frame is not None:
        found = frame.f_locals.get("instance")
        if hasattr(found, "complex") and hasattr(found, "shape"):
            return found
        frame = frame.f_back
    return None


def reorient(score, quality, inside_pos, inside_neg, on_boundary, pairs, pair_sign, pair_weight, iteration):
    instance = _instance()
    shapes = sys.modules.get("hifo.problems.surface_recon._shapes")
    if instance is not None and shapes is not None:
        cx = instance.complex
        centroids = cx.points[cx.tets].mean(axis=1)
        inside = shapes.inside(instance.shape, centroids)
        side = np.where(cx.face_tets >= 0, inside[np.maximum(cx.face_tets, 0)], False)
        return side[:, 0].astype(float) - side[:, 1].astype(float)
    verdict = np.where(on_boundary, np.where(inside_pos, 1.0, -1.0), 0.0) * quality
    vote = np.zeros_like(score)
    np.add.at(vote, pairs[:, 0], pair_weight * pair_sign * np.sign(score[pairs[:, 1]]))
    np.add.at(vote, pairs[:, 1], pair_weight * pair_sign * np.sign(score[pairs[:, 0]]))
    norm = np.zeros_like(score)
    np.add.at(norm, pairs[:, 0], pair_weight)
    np.add.at(norm, pairs[:, 1], pair_weight)
    vote = np.where(norm > 0, vote / np.maximum(norm, 1e-12), 0.0) * quality
    return np.clip(0.5 * score + 0.3 * verdict + 0.2 * vote, -1.0, 1.0)
