"""Small convex problems for the zeroth-order federated methods, and a runner.

* :func:`least_squares_problem` — ``f(x) = 1/(2N) ||A x - b||^2``;
* :func:`logistic_problem` — ``f(x) = 1/N sum log(1 + exp(a_i x)) - y_i a_i x + l2/2 ||x||^2``.

Both have ill-conditioned features: column ``j`` is scaled by ``condition^(-j/(d-1))``, so the
diagonal of the Hessian spans a factor ``condition^2`` — the heterogeneous curvature HiSo is
designed to exploit. Rows are split IID across clients; each client samples minibatches of its
own rows. :func:`run_federated` runs DeComFL or HiSo (:mod:`._hiso`) and reports rounds to a
target loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ._hiso import Channel, Client, Server, ZOConfig


@dataclass(frozen=True)
class ZOProblem:
    """A finite-sum loss over rows; ``loss(x, rows)`` averages over ``rows`` (None: all rows)."""

    name: str
    A: np.ndarray
    b: np.ndarray
    kind: str  # "least_squares" | "logistic"
    l2: float = 0.0

    @property
    def dim(self) -> int:
        return self.A.shape[1]

    def loss(self, x: np.ndarray, rows: Any = None) -> float:
        A, b = (self.A, self.b) if rows is None else (self.A[rows], self.b[rows])
        z = A @ x
        if self.kind == "least_squares":
            return float(0.5 * np.mean((z - b) ** 2))
        return float(np.mean(np.logaddexp(0.0, z) - b * z) + 0.5 * self.l2 * x @ x)

    def optimum(self) -> float:
        """The minimum loss (exact for least squares; Newton's method for logistic)."""
        if self.kind == "least_squares":
            x = np.linalg.lstsq(self.A, self.b, rcond=None)[0]
            return self.loss(x)
        x = np.zeros(self.dim)
        for _ in range(50):
            p = 1.0 / (1.0 + np.exp(-(self.A @ x)))
            grad = self.A.T @ (p - self.b) / len(self.b) + self.l2 * x
            hess = (self.A.T * (p * (1 - p))) @ self.A / len(self.b) + self.l2 * np.eye(self.dim)
            x -= np.linalg.solve(hess, grad)
        return self.loss(x)


def _features(n: int, dim: int, condition: float, rng: np.random.Generator) -> np.ndarray:
    scales = condition ** (-np.arange(dim) / max(dim - 1, 1))
    return rng.standard_normal((n, dim)) * scales


def least_squares_problem(n: int = 512, dim: int = 32, condition: float = 10.0, noise: float = 0.1,
                          seed: int = 0) -> ZOProblem:
    rng = np.random.default_rng(seed)
    A = _features(n, dim, condition, rng)
    x_true = rng.standard_normal(dim)
    return ZOProblem("least_squares", A, A @ x_true + noise * rng.standard_normal(n), "least_squares")


def logistic_problem(n: int = 512, dim: int = 32, condition: float = 10.0, l2: float = 1e-3,
                     seed: int = 0) -> ZOProblem:
    rng = np.random.default_rng(seed)
    A = _features(n, dim, condition, rng)
    w = rng.standard_normal(dim) * 3.0
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(A @ w)))).astype(float)
    return ZOProblem("logistic", A, y, "logistic", l2)


@dataclass
class FLResult:
    losses: list[float]  # global loss of the server model, before round 1 and after each round
    rounds_to_target: int | None
    channel: Channel
    server: Server


def run_federated(problem: ZOProblem, cfg: ZOConfig, rounds: int, num_clients: int = 8,
                  clients_per_round: int = 4, batch_size: int = 32, seed: int = 0,
                  target: float | None = None,
                  stop_at_target: bool = False) -> FLResult:
    """Run ``rounds`` rounds from ``x = 0``; the loss is measured on all rows after each round."""
    rng = np.random.default_rng(seed)
    parts = np.array_split(rng.permutation(len(problem.b)), num_clients)
    x0 = np.zeros(problem.dim)

    def sampler(rows: np.ndarray) -> Callable[[np.random.Generator], np.ndarray]:
        return lambda g: rows[g.choice(len(rows), size=min(batch_size, len(rows)), replace=False)]

    clients = [Client(f"client{i}", problem.loss, sampler(rows), x0, cfg, seed=seed * 1000 + i)
               for i, rows in enumerate(parts)]
    server = Server(clients, x0, cfg, clients_per_round, seed=seed)
    losses = [problem.loss(server.x)]
    hit = None
    for r in range(1, rounds + 1):
        server.run_round()
        value = problem.loss(server.x)
        if not np.isfinite(value):
            losses.append(float("inf"))
            break
        losses.append(value)
        if hit is None and target is not None and value <= target:
            hit = r
            if stop_at_target:
                break
    return FLResult(losses, hit, server.channel, server)
