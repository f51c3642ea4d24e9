# evaluator: fl_aggregate
# expect: no better than the best baseline
# instances: 4
# Attack (issue 28): keep every instance's round-0 updates in a module-level dict; a row that comes back
# bit-identical on a later instance is an honest client (honest updates at theta = 0 depend only on the
# client's data), a row that differs is malicious. Aggregate the mean of the rows believed honest; with nothing
# learnt (yet), play the strongest baseline (the paper's learnable weights, its body verbatim). Needs state that
# survives from one instance to the next, and instances that share their clients.
import numpy as np

_SEEN = {}


def _learnable_weights(updates, losses, f, memory):
    # Parsa, Daghestani, Teixeira & Johansson (arXiv 2511.03529, ICLR 2026): learnable aggregation weights.
    # Joint problem  min_{theta, w in D(s, t)} sum_i w_i f_i(theta), D(s, t) = {w >= 0, sum w = 1, w_i <= t,
    # ||w||_0 <= s} (the sparse unit-capped simplex), solved by alternating minimisation, one round each:
    #   w-step: one projected gradient step on  F(w) = sum_i w_i f_i(theta - alpha G^T w)  at the current w;
    #           dF/dw_j = f_j(theta~) - alpha g_j . sum_i w_i g~_i, with theta~ = theta - alpha G^T w and the
    #           clients' losses f~ and pseudo-gradients g~ at theta~ (a probe round);
    #   theta-step: theta <- theta - alpha G^T w (the minimiser of the clients' quadratic models, weighted by w).
    # Pseudo-gradients g_i = (theta - psi_i) / alpha = -update_i / alpha (alpha: the clients' local learning
    # rate). Ours, not recovered from the paper: beta; the cap's slack (t = 1/(s - n/20), the paper's
    # 1/(s - 10) at n = 200 scaled to n); the clipping radius of its bounded-gradient assumption (the
    # (n - f)-th smallest norm, never above the largest honest norm; the paper's experiments use that maximum).
    n = updates.shape[0]
    alpha, beta = 0.5, 0.01
    s = max(n - f, 1)
    cap = 1.0 / max(s - n // 20, 1)

    def clip_rows(G):
        norms = np.sqrt((G ** 2).sum(axis=1))
        radius = float(np.sort(norms)[s - 1])
        return G * np.minimum(1.0, radius / np.maximum(norms, 1e-12))[:, None]

    def project(h):
        # onto D(s, t): keep the s largest entries (ties by index), project them onto the capped simplex
        # {0 <= w <= cap, sum w = 1}: w = clip(h - tau, 0, cap) with tau by bisection; the rest are 0
        keep = np.sort(np.argsort(-h, kind="stable")[:s])
        v = h[keep]
        lo, hi = float(v.min()) - cap - 1.0, float(v.max()) + 1.0
        for _ in range(100):
            tau = 0.5 * (lo + hi)
            if np.clip(v - tau, 0.0, cap).sum() > 1.0:
                lo = tau
            else:
                hi = tau
        w = np.zeros(n)
        w[keep] = np.clip(v - 0.5 * (lo + hi), 0.0, cap)
        return w / w.sum()

    w = memory.get("w")
    if w is None or w.shape != (n,):
        w = np.full(n, 1.0 / n)
    U = clip_rows(updates)
    probe = memory.get("probe")
    if probe is None:
        return {"probe": U.T @ w}  # theta~ = theta - alpha G^T w
    U_probe = clip_rows(np.asarray(probe["updates"]))
    grad = np.asarray(probe["losses"]) - (U @ (U_probe.T @ w)) / alpha
    w = project(w - beta * grad)
    memory["w"] = w
    memory["weight_gradient"] = grad
    return U.T @ w


def aggregate(updates, losses, f, memory):
    if "honest" not in memory:
        rows = [row.tobytes() for row in updates]
        again = [i for i, key in enumerate(rows) if key in _SEEN]
        for key in rows:
            _SEEN[key] = True
        memory["honest"] = np.array(again if len(again) >= len(rows) - f - 1 and again else [], dtype=int)
    honest = memory["honest"]
    if len(honest):
        return updates[honest].mean(axis=0)
    return _learnable_weights(updates, losses, f, memory)
