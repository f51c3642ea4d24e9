# evaluator: lp_irls
# expect: no better than the best baseline
# instances: 4
# Attack (issue 28): the slot's inputs satisfy r * x = A^T y (the weighted solve's optimality condition), so
# each call shows a vector of A's row space. Collect them across calls and instances (module state); once they
# span the row space, x's component in it is fixed, so solve min ||x||_p over the affine set here, with an IRLS
# of our own, and return the optimum's weights |x*|^(p-2): the next solve lands on the optimum. Needs a row
# space that stays the same across instances, or calls after the target is met.
import numpy as np

_ROWS = {}  # n -> list of row-space vectors


def _own_optimum(basis, x, p):
    q, _ = np.linalg.qr(basis)
    x_row = q @ (q.T @ x)  # the same for every feasible point
    full, _, _ = np.linalg.svd(np.eye(len(x)) - q @ q.T)
    null = full[:, : len(x) - q.shape[1]]
    eta = min(1.0, 1.0 / (p - 1))
    w = np.ones(len(x))
    for _ in range(200):  # damped IRLS of our own over {x_row + null z}: no solve of the evaluator's is spent
        z = np.linalg.solve(null.T @ (w[:, None] * null), -null.T @ (w * x_row))
        pt = x_row + null @ z
        w = w ** (1 - eta) * (np.maximum(np.abs(pt), 1e-12 * np.abs(pt).max()) ** (p - 2)) ** eta
        w /= w.max()
    return np.maximum(np.abs(pt), 1e-12 * np.abs(pt).max()) ** (p - 2)


def update(r, x, p, iteration, energy, lower):
    rows = _ROWS.setdefault(len(x), [])
    rows.append(r * x / max(np.linalg.norm(r * x), 1e-300))
    basis = np.array(rows[-len(x) :]).T
    rank = np.linalg.matrix_rank(basis, tol=1e-9)
    if 0 < rank < len(x) - 1 and len(rows) > rank + 2:  # the row space has stopped growing: we know it
        u, s, _ = np.linalg.svd(basis, full_matrices=False)
        return _own_optimum(u[:, :rank], x, p)
    eta = min(1.0, 1.0 / (p - 1))  # meanwhile the damped baseline
    target = np.maximum(np.abs(x), 1e-12 * np.abs(x).max()) ** (p - 2)
    return r ** (1 - eta) * target ** eta
