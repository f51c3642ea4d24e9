# evaluator: surface_recon
# expect: fence: import of 'scipy.spatial' not allowed
# Attack: run a reconstruction of its own (a convex hull) instead of reorienting.
import numpy as np


def reorient(score, quality, inside_pos, inside_neg, on_boundary, pairs, pair_sign, pair_weight, iteration):
    from scipy.spatial import ConvexHull

    ConvexHull(np.random.default_rng(0).normal(size=(10, 3)))
    return score
