# evaluator: ptq4arvg_calib
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 2
# Attack (issue 28, memorised instances / public seeds): a test pool is drawn from a published seed, so its features
# (which the slot sees) are known in advance, and so is which selection quantizes best on that very pool: the harness
# pastes a table, keyed by k and the pool's first feature vector, of the best of the baselines' and 8 random
# selections per published pool, scored offline. With no table hit (a secret draw) it is the dgc baseline, call for call.
import numpy as np

TABLE = {}


def select_calibration(features, classes, k):
    key = f"{k}:{len(features)}:" + ",".join(repr(float(v)) for v in features[0][:4])
    if key in TABLE:
        return list(TABLE[key])
    F = np.asarray(features, dtype=float)
    d = F - F.mean(0)
    C = np.cov(F.T) + 1e-3 * np.eye(F.shape[1])
    m = np.einsum('ij,ij->i', d @ np.linalg.inv(C), d)
    return sorted(int(i) for i in np.argsort(-m)[:k])
