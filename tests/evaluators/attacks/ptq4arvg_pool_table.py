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
    c = np.asarray(classes)
    cond, unc = np.flatnonzero(c >= 0), np.flatnonzero(c < 0)

    def dist(X):
        d = X - X.mean(0)
        P = np.linalg.pinv(d.T @ d / (len(X) - 1))
        return np.sqrt(np.maximum(np.einsum('ij,ij->i', d @ P, d), 0.0))

    dc, du = dist(F[cond]), dist(F[unc])
    if len(dc) == len(du) and np.allclose(dc, du, atol=1e-3):
        pct = 0.5
    else:
        top = np.argsort(-np.concatenate([dc, du]), kind='stable')[:len(dc)]
        pct = float(np.mean(top < len(dc)))
    nc = round(pct * k)
    return [int(i) for i in cond[:nc]] + [int(i) for i in unc[:k - nc]]
