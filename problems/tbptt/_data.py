"""Simulated system-identification data: a Wiener-Hammerstein system (generated here, seeded).

``u -> G1 (2nd-order IIR) -> static nonlinearity -> G2 (2nd-order IIR) -> y + noise``. Both linear
blocks are lightly damped resonances, so the output depends on the input far back (slow memory):
an RNN started from a zero state needs many steps before its state matches the system's.
"""

from __future__ import annotations

import numpy as np


def _resonance(r: float, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients (b, a) of a 2nd-order resonance with poles r e^{+-i theta}, unit DC gain."""
    a = np.array([1.0, -2 * r * np.cos(theta), r * r])
    b = np.array([a.sum(), 0.0])
    return b, a


def _lfilter(b: np.ndarray, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    y = np.zeros_like(x)
    for t in range(len(x)):
        acc = b[0] * x[t] + (b[1] * x[t - 1] if t >= 1 else 0.0)
        if t >= 1:
            acc -= a[1] * y[t - 1]
        if t >= 2:
            acc -= a[2] * y[t - 2]
        y[t] = acc
    return y


def wiener_hammerstein(u: np.ndarray, noise: float = 0.0, rng: np.random.Generator | None = None) -> np.ndarray:
    """The system's output for input ``u`` from rest; ``noise``: std of white output noise."""
    x = _lfilter(*_resonance(0.95, 0.25), u)
    z = np.tanh(1.5 * x) + 0.2 * x
    y = _lfilter(*_resonance(0.97, 0.6), z)
    if noise:
        y = y + noise * (rng or np.random.default_rng(0)).normal(size=len(y))
    return y


def make_data(seed: int, n_train: int = 2000, n_test: int = 1000, noise: float = 0.02
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train and test records (independent inputs: low-pass filtered Gaussian noise), each simulated
    from rest; returns ``u_train, y_train, u_test, y_test`` (float32)."""
    rng = np.random.default_rng(seed)
    out = []
    for n in (n_train, n_test):
        u = _lfilter(*_resonance(0.6, 0.0), rng.normal(size=n))
        y = wiener_hammerstein(u, noise, rng)
        out += [u.astype(np.float32), y.astype(np.float32)]
    return out[0], out[1], out[2], out[3]
