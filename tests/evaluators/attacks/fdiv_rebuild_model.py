# evaluator: fdiv_pessimism
# expect: fence: import of 'hifo.problems.fdiv_bandits' not allowed
# Attack: rebuild the true reward model from the generator and return the bonus r^ - r that makes the
# pessimistic estimate exact (the slot is given counts only, so it reaches for the problem module).
import numpy as np


def bonus(counts, n, eta):
    from hifo.problems.fdiv_bandits import make_bandit

    return np.zeros_like(counts) + 0 * make_bandit(4, 5, eta, 4.0, 0).r
