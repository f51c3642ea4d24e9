# evaluator: fdiv_pessimism
# expect: no better than the best baseline
# wins on the published seeds
# instances: 36
# set: test
# Attack (issue 28): the logged datasets of the published test instances are fingerprinted by their visit counts
# and answered from a table computed offline with the true reward model (bonus = how far each empirical mean
# overshoots the true reward), so the pessimistic policy is nearly the optimum. TABLE is filled in by the test
# from the published instances (tests/evaluators/test_instance_secrecy.py); an unknown fingerprint gets the
# plug-in bonus 0.
import numpy as np

TABLE = {}


def bonus(counts, n, eta):
    key = ",".join(str(int(c)) for c in counts.ravel())
    if key in TABLE:
        return np.array(TABLE[key], dtype=float)
    return np.zeros_like(counts)
