"""Server aggregation rules, each ``rule(updates, losses, f, memory) -> step``.

``updates`` is (n_clients, dim), ``losses`` the (n_clients,) training losses the clients report at the
current model, ``f`` the number of Byzantine clients the defender is told, ``memory`` a dict the rule owns
across rounds. A rule may return ``{"probe": step}`` once per round to hear the clients at ``theta + step``
(:func:`hifo.problems.byzantine_fl.run_fl`). Every function here is self-contained (numpy only, helpers
nested), so its body is also a valid candidate for the evaluator's slot (:mod:`hifo.evaluators.fl_aggregate`
builds its baselines from these sources).
"""

from __future__ import annotations

import numpy as np


def learnable_weights(updates, losses, f, memory):
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


def fedavg(updates, losses, f, memory):
    # Plain mean of the updates (McMahan et al. 2017).
    return updates.mean(axis=0)


def krum(updates, losses, f, memory):
    # Krum (Blanchard et al. 2017): the update with the smallest sum of squared distances to its
    # n - f - 2 nearest neighbours.
    n = updates.shape[0]
    sq = (updates ** 2).sum(axis=1)
    dist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * updates @ updates.T, 0.0)
    m = max(n - f - 2, 1)
    scores = np.sort(dist, axis=1)[:, 1:m + 1].sum(axis=1)
    return updates[int(np.argmin(scores))].copy()


def multi_krum(updates, losses, f, memory):
    # Multi-Krum (Blanchard et al. 2017, Sec. 5): the mean of the n - f updates with the lowest Krum scores
    # (sum of squared distances to the n - f - 2 nearest neighbours); ties by index.
    n = updates.shape[0]
    sq = (updates ** 2).sum(axis=1)
    dist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * updates @ updates.T, 0.0)
    m = max(n - f - 2, 1)
    scores = np.sort(dist, axis=1)[:, 1:m + 1].sum(axis=1)
    chosen = np.argsort(scores, kind="stable")[:max(n - f, 1)]
    return updates[chosen].mean(axis=0)


def bulyan(updates, losses, f, memory):
    # Bulyan (El Mhamdi, Guerraoui & Rouault 2018) over Krum: pick theta = n - 2f updates by repeatedly taking
    # the Krum winner of those left, then per coordinate average the beta = theta - 2f values closest to
    # the coordinate median. Defined for n >= 4f + 3; beyond that it runs with f = floor((n - 3) / 4).
    n = updates.shape[0]
    fb = min(f, max((n - 3) // 4, 0))
    left = list(range(n))
    chosen = []
    for _ in range(n - 2 * fb):
        G = updates[left]
        sq = (G ** 2).sum(axis=1)
        dist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * G @ G.T, 0.0)
        m = min(max(len(left) - fb - 2, 1), len(left) - 1)
        scores = np.sort(dist, axis=1)[:, 1:m + 1].sum(axis=1)
        chosen.append(left.pop(int(np.argmin(scores))))
    S = updates[chosen]
    keep = max(len(chosen) - 2 * fb, 1)
    med = np.median(S, axis=0)
    order = np.argsort(np.abs(S - med), axis=0, kind="stable")[:keep]
    return np.take_along_axis(S, order, axis=0).mean(axis=0)


def geometric_median(updates, losses, f, memory):
    # Geometric median (RFA, Pillutla, Kakade & Harchaoui 2022) by Weiszfeld's iteration, smoothed
    # (distances floored at nu) as in RFA; 100 iterations from the mean, or until the point moves < 1e-10.
    nu = 1e-6
    z = updates.mean(axis=0)
    for _ in range(100):
        d = np.maximum(np.sqrt(((updates - z) ** 2).sum(axis=1)), nu)
        a = 1.0 / d
        z_new = (a[:, None] * updates).sum(axis=0) / a.sum()
        moved = float(np.sqrt(((z_new - z) ** 2).sum()))
        z = z_new
        if moved < 1e-10:
            break
    return z


def coordinate_median(updates, losses, f, memory):
    # Coordinate-wise median (Yin et al. 2018).
    return np.median(updates, axis=0)


def trimmed_mean(updates, losses, f, memory):
    # Coordinate-wise trimmed mean (Yin et al. 2018): drop the f largest and f smallest per coordinate.
    n = updates.shape[0]
    k = min(f, (n - 1) // 2)
    s = np.sort(updates, axis=0)
    return s[k:n - k].mean(axis=0)


def centered_clipping(updates, losses, f, memory):
    # Centred clipping (Karimireddy et al. 2021): start from the previous step, three rounds of
    # v += mean(clip(g_i - v, tau)); tau = the median distance to v (scale-free).
    v = memory.get("v")
    if v is None or v.shape != updates.shape[1:]:
        v = np.zeros(updates.shape[1])
    for _ in range(3):
        diff = updates - v
        norms = np.sqrt((diff ** 2).sum(axis=1))
        tau = float(np.median(norms)) + 1e-12
        v = v + (diff * np.minimum(1.0, tau / np.maximum(norms, 1e-12))[:, None]).mean(axis=0)
    memory["v"] = v
    return v


RULES = {"learnable_weights": learnable_weights, "fedavg": fedavg, "krum": krum, "multi_krum": multi_krum,
         "bulyan": bulyan, "geometric_median": geometric_median, "coordinate_median": coordinate_median,
         "trimmed_mean": trimmed_mean, "centered_clipping": centered_clipping}
