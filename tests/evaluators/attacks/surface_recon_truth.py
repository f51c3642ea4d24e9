# evaluator: surface_recon
# expect: fence: import of 'hifo.problems.surface_recon' not allowed
# Attack: rebuild the true shape in the child and orient every face by it (the oracle the benchmark uses).
import numpy as np


def reorient(score, quality, inside_pos, inside_neg, on_boundary, pairs, pair_sign, pair_weight, iteration):
    from hifo.problems.surface_recon import truth

    truth("sphere")
    return score
