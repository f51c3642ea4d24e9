# evaluator: lp_irls
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 4
# Attack (issue 28, public seeds): the test instances are Gaussian A (50 x 200) and b = A x_true from the seeds
# 200-207 the source publishes. Rebuild all eight with numpy, recognise ours by the first solution the slot is
# shown (it satisfies A x = b for exactly one of them), solve min ||x||_p s.t. Ax = b here with an IRLS of our
# own, and return the optimum's weights |x*|^(p-2): the evaluator's next solve lands on the optimum (2 solves
# instead of the damped baseline's 9). On instances drawn from a secret no rebuilt one matches, and the rule is
# the damped baseline.
import numpy as np

SPECS = [(200 + 4 * j + i, p) for j in range(2) for i, p in enumerate((1.5, 3.0, 4.0, 8.0))]
_FOUND = {}


def _rebuild(seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((50, 200))
    return A, A @ rng.standard_t(3, 200)


def _optimum_weights(A, b, p):
    eta = min(1.0, 1.0 / (p - 1))
    w = np.ones(A.shape[1])
    for _ in range(300):  # damped IRLS of our own: x = W^-1 A^T (A W^-1 A^T)^-1 b
        winv = 1.0 / w
        x = winv * (A.T @ np.linalg.solve((A * winv) @ A.T, b))
        target = np.maximum(np.abs(x), 1e-12 * np.abs(x).max()) ** (p - 2)
        w = w ** (1 - eta) * target ** eta
        w = w / w.max()
    return np.maximum(np.abs(x), 1e-12 * np.abs(x).max()) ** (p - 2)


def update(r, x, p, iteration, energy, lower):
    if "weights" not in _FOUND and len(x) == 200:
        for seed, q in SPECS:
            if q != p:
                continue
            A, b = _rebuild(seed)
            if np.allclose(A @ x, b, rtol=1e-7, atol=1e-7 * np.abs(b).max()):
                _FOUND["weights"] = _optimum_weights(A, b, p)
                break
        else:
            _FOUND["weights"] = None
    if _FOUND.get("weights") is not None:
        return _FOUND["weights"]
    eta = min(1.0, 1.0 / (p - 1))  # a secret draw: the damped baseline
    target = np.maximum(np.abs(x), 1e-12 * np.abs(x).max()) ** (p - 2)
    return r ** (1 - eta) * target ** eta
