"""Server aggregation rules, each ``rule(updates, f, memory) -> step``.

``updates`` is (n_clients, dim), ``f`` the number of Byzantine clients the defender is told, ``memory``
a dict the rule owns across rounds. Every function here is self-contained (numpy only, helpers
nested), so its body is also a valid candidate for the evaluator's slot
(:mod:`hifo.evaluators.fl_aggregate` builds its baselines from these sources).
"""

from __future__ import annotations

import numpy as np


def fedlaw(updates, f, memory):
    # FedLAW-style alternating minimisation (after Parsa et al., ICLR 2026) of
    #   J(u, w) = sum_i w_i ||u - g_i||^2   over the step u and the weights w in the capped simplex
    #   {0 <= w_i <= 1/(n - f), sum w = 1}:
    # u-step exact (weighted mean), w-step one projected gradient step; w is kept across rounds.
    n = updates.shape[0]
    cap = 1.0 / max(n - f, 1)

    def project(v):
        # Euclidean projection onto {0 <= w <= cap, sum w = 1}: w = clip(v - tau, 0, cap), bisection on tau
        lo, hi = float(v.min()) - cap - 1.0, float(v.max()) + 1.0
        for _ in range(100):
            tau = 0.5 * (lo + hi)
            if np.clip(v - tau, 0.0, cap).sum() > 1.0:
                lo = tau
            else:
                hi = tau
        w = np.clip(v - 0.5 * (lo + hi), 0.0, cap)
        return w / w.sum()

    w = memory.get("w")
    if w is None or w.shape != (n,):
        w = project(np.full(n, 1.0 / n))
    objective = []
    for _ in range(10):
        u = w @ updates
        d = ((updates - u) ** 2).sum(axis=1)
        objective.append(float(w @ d))
        scale = float(np.median(d)) + 1e-12
        w = project(w - 0.5 * cap * d / scale)
    u = w @ updates
    objective.append(float(w @ ((updates - u) ** 2).sum(axis=1)))
    memory["w"] = w
    memory["objective"] = objective
    return u


def fedavg(updates, f, memory):
    # Plain mean of the updates (McMahan et al. 2017).
    return updates.mean(axis=0)


def krum(updates, f, memory):
    # Krum (Blanchard et al. 2017): the update with the smallest sum of squared distances to its
    # n - f - 2 nearest neighbours.
    n = updates.shape[0]
    sq = (updates ** 2).sum(axis=1)
    dist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * updates @ updates.T, 0.0)
    m = max(n - f - 2, 1)
    scores = np.sort(dist, axis=1)[:, 1:m + 1].sum(axis=1)
    return updates[int(np.argmin(scores))].copy()


def coordinate_median(updates, f, memory):
    # Coordinate-wise median (Yin et al. 2018).
    return np.median(updates, axis=0)


def trimmed_mean(updates, f, memory):
    # Coordinate-wise trimmed mean (Yin et al. 2018): drop the f largest and f smallest per coordinate.
    n = updates.shape[0]
    k = min(f, (n - 1) // 2)
    s = np.sort(updates, axis=0)
    return s[k:n - k].mean(axis=0)


def centered_clipping(updates, f, memory):
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


RULES = {"fedlaw": fedlaw, "fedavg": fedavg, "krum": krum, "coordinate_median": coordinate_median,
         "trimmed_mean": trimmed_mean, "centered_clipping": centered_clipping}
