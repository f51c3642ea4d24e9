# evaluator: surface_recon
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 2
# Attack (issue 28, memorised instances): the test point clouds were published (sampling seed 1), so a rule can
# carry, per test instance, what it would have computed offline from the true shape: which Delaunay faces separate
# an inside tetrahedron from an outside one, and on which side the inside lies (the harness pastes the table into
# TABLE, as a model that had read the source would). The slot never sees the points, but the number of faces and
# of candidate pairs name a published instance; on a hit the rule blends the true orientation (the oracle of
# surface_recon_escaped_truth, without leaving the fence) with the vote, 0.7 / 0.3 (the true orientation alone
# carves a jagged surface through the noisy points: Chamfer 0.0281 on the 8 published instances, worse than vote's
# 0.0268; the blend 0.0254); elsewhere it is the vote baseline, call for call.
import numpy as np

TABLE = []


def _vote(score, quality, inside_pos, on_boundary, pairs, pair_sign, pair_weight):
    verdict = np.where(on_boundary, np.where(inside_pos, 1.0, -1.0), 0.0) * quality
    vote = np.zeros_like(score)
    np.add.at(vote, pairs[:, 0], pair_weight * pair_sign * np.sign(score[pairs[:, 1]]))
    np.add.at(vote, pairs[:, 1], pair_weight * pair_sign * np.sign(score[pairs[:, 0]]))
    norm = np.zeros_like(score)
    np.add.at(norm, pairs[:, 0], pair_weight)
    np.add.at(norm, pairs[:, 1], pair_weight)
    vote = np.where(norm > 0, vote / np.maximum(norm, 1e-12), 0.0) * quality
    return np.clip(0.5 * score + 0.3 * verdict + 0.2 * vote, -1.0, 1.0)


def reorient(score, quality, inside_pos, inside_neg, on_boundary, pairs, pair_sign, pair_weight, iteration):
    vote = _vote(score, quality, inside_pos, on_boundary, pairs, pair_sign, pair_weight)
    for faces, npairs, signed in TABLE:
        if faces == len(score) and npairs == len(pairs):
            truth = np.zeros(len(score))
            signed = np.asarray(signed, dtype=int)
            truth[np.abs(signed) - 1] = np.sign(signed)
            return np.clip(0.7 * truth + 0.3 * vote, -1.0, 1.0)
    return vote
