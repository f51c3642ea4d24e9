# evaluator: ridge_schedule
# expect: no better than the best baseline
# wins on the published seeds
# instances: 3
# Attack (issue 28): the instance is known from (horizon, d, degree) and its published seeds; rebuild theta*,
# theta_0 and the whole noise stream of the parent's replay, then choose each round's (eta, lam) greedily
# against that exact realisation (the schedule is open-loop, but the realisation is not random to us).
import numpy as np

PUBLISHED = {(10, 3000, 1): 0, (16, 3000, 1): 5, (10, 3000, 2): 10, (14, 3000, 2): 15, (8, 3000, 3): 20,
             (12, 3000, 3): 25, (20, 5000, 1): 100, (16, 5000, 2): 110, (16, 5000, 3): 120, (24, 5000, 3): 130}
LINK = {1: lambda x: x, 2: lambda x: x * np.abs(x), 3: lambda x: x ** 3}
ETAS = np.array([0.0, 0.05, 0.2, 0.5, 1.5, 5.0, 10.0])
LAMS = np.array([0.02, 0.1, 0.3, 0.6, 0.9])


def _instance(d, seed):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(2, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    if v[0] @ v[1] < 0:
        v[1] = -v[1]
    return v[0], v[1]


def schedule(horizon, d, degree):
    base = PUBLISHED.get((d, horizon, degree), 0)
    pairs = [_instance(d, base + r) for r in range(4)]
    ts, theta = np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
    f = LINK[degree]
    rng = np.random.default_rng(7919 + base)
    eta_out, lam_out = np.zeros(horizon), np.zeros(horizon)
    E, L = np.meshgrid(ETAS, LAMS, indexing="ij")
    E, L = E.ravel(), L.ravel()
    c = np.sqrt(1 - L * L)
    fc = f(c)
    slope = (f(c + 1e-6) - f(c - 1e-6)) / 2e-6
    for t in range(horizon):
        u = rng.normal(size=theta.shape)
        u -= np.einsum("rd,rd->r", u, theta)[:, None] * theta
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        noise = 0.1 * rng.normal(size=len(theta))
        a = c[:, None, None] * theta[None] + L[:, None, None] * u[None]
        fs = f(np.einsum("krd,rd->kr", a, ts))
        y = fs + noise[None]
        step = (E[:, None] * (y - fc[:, None]) * slope[:, None] * L[:, None])[:, :, None] * u[None]
        new = theta[None] + step
        new /= np.linalg.norm(new, axis=2, keepdims=True)
        value = (1 - fs).mean(axis=1) + 50.0 * (1 - np.einsum("krd,rd->kr", new, ts).mean(axis=1))
        k = int(np.argmin(value))
        eta_out[t], lam_out[t] = E[k], L[k]
        theta = new[k]
    return eta_out, lam_out
