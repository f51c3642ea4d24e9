"""HiSo and DeComFL: zeroth-order federated learning in which only scalars travel.

DeComFL (Li et al., 2024, "Achieving Dimension-Free Communication in Federated Learning via
Zeroth-Order Optimization"; reference code ``ZidongLiu/DeComFL``) and HiSo (Li et al., 2025,
"Converge Faster, Talk Less: Hessian-Informed Federated Zeroth-Order Optimization", arXiv
2506.02370; its estimator is ``AdamForwardGradientEstimatorBatch`` in the same repository) share
one round structure. Round ``r``, with global model ``x_r`` and diagonal curvature ``h_r`` that
every party holds identically:

1. the server samples clients and ``K`` seeds ``s_1..s_K`` (one per local step);
2. each sampled client starts from ``x_r`` and, for ``k = 1..K``, draws ``u_{k,p} ~ N(0, I)``
   from ``(s_k, p)``, sets ``z = h_r^{-1/2} u`` and computes the two-point (forward) directional
   derivatives ``g_{k,p} = (f_i(x + mu z; xi) - f_i(x; xi)) / mu`` on one minibatch ``xi``, then
   steps locally ``x <- x - lr / P * sum_p g_{k,p} z_{k,p}``; it uploads the ``K x P`` scalars;
3. the server averages them per ``(k, p)`` and broadcasts the averages (and the seeds);
4. every party rebuilds ``x_{r+1} = x_r - lr sum_k 1/P sum_p g_{k,p} h_r^{-1/2} u_{k,p}`` from the
   seeds and scalars alone, then HiSo updates the curvature from the last local step's
   reconstructed gradient ``g_hat = 1/P sum_p g_{K,p} h_r^{-1/2} u_{K,p}``:
   ``h_{r+1} = beta h_r + (1 - beta) g_hat^2`` (``hessian_smooth = beta``, the reference's
   "last local update" strategy). DeComFL is the same with ``h`` fixed to ones.

Since ``E[z z^T] = h^{-1}``, the expected step is the preconditioned gradient ``h^{-1} grad f``;
with ``h = 1`` it is plain ZO-SGD. A client that missed rounds catches up by replaying the
broadcast ``(seeds, scalars)`` history, so no party ever sends a vector of model size — the
:class:`Channel` records every message to check that.

Deviations: ``h`` is floored at ``eps`` before ``h^{-1/2}`` (the reference divides by
``sqrt(h)`` unguarded); minibatches are drawn per client from a seeded generator; the data split
across clients is IID.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

LossFn = Callable[[np.ndarray, Any], float]  # loss(x, batch) -> float


@dataclass(frozen=True)
class ZOConfig:
    """Hyperparameters of one ZO-FL run. ``hessian_smooth=None`` is DeComFL (``h = 1``)."""

    lr: float
    mu: float = 1e-3
    num_pert: int = 1
    local_steps: int = 1
    hessian_smooth: float | None = 0.95
    eps: float = 1e-8
    difference: str = "forward"  # or "central"

    def __post_init__(self) -> None:
        if self.difference not in ("forward", "central"):
            raise ValueError(f"difference must be 'forward' or 'central', got {self.difference!r}")
        if self.num_pert < 1 or self.local_steps < 1:
            raise ValueError("num_pert and local_steps must be >= 1")


def perturbation(seed: int, index: int, dim: int) -> np.ndarray:
    """``u ~ N(0, I_dim)`` rebuilt identically by every party from ``(seed, index)``."""
    return np.random.default_rng((int(seed), int(index))).standard_normal(dim)


def _inv_sqrt(h: np.ndarray, eps: float) -> np.ndarray:
    return 1.0 / np.sqrt(np.maximum(h, eps))


def directional_derivatives(loss: LossFn, x: np.ndarray, h: np.ndarray, seed: int, cfg: ZOConfig,
                            batch: Any = None) -> np.ndarray:
    """Step 2: the ``P`` scalars ``g_p`` of one local step (what a client uploads)."""
    scale = _inv_sqrt(h, cfg.eps)
    f0 = loss(x, batch) if cfg.difference == "forward" else None
    out = np.empty(cfg.num_pert)
    for p in range(cfg.num_pert):
        z = scale * perturbation(seed, p, x.size)
        plus = loss(x + cfg.mu * z, batch)
        if f0 is not None:  # forward differences
            out[p] = (plus - f0) / cfg.mu
        else:
            out[p] = (plus - loss(x - cfg.mu * z, batch)) / (2 * cfg.mu)
    return out


def reconstruct_gradient(h: np.ndarray, seed: int, scalars: np.ndarray, cfg: ZOConfig) -> np.ndarray:
    """``1/P sum_p g_p h^{-1/2} u_p``: the ZO gradient estimate, rebuilt from seed and scalars."""
    scale = _inv_sqrt(h, cfg.eps)
    grad = np.zeros_like(h)
    for p, g in enumerate(np.asarray(scalars, dtype=np.float64)):
        grad += g * perturbation(seed, p, h.size)
    return scale * grad / len(scalars)


def apply_round(x: np.ndarray, h: np.ndarray, seeds: Sequence[int], scalars: np.ndarray,
                cfg: ZOConfig) -> tuple[np.ndarray, np.ndarray]:
    """Step 4: ``(x_{r+1}, h_{r+1})`` from ``(x_r, h_r)``, the round's seeds and ``K x P`` scalars."""
    x = x.copy()
    for seed, g in zip(seeds, scalars):
        x -= cfg.lr * reconstruct_gradient(h, seed, g, cfg)
    if cfg.hessian_smooth is not None:
        g_hat = reconstruct_gradient(h, seeds[-1], scalars[-1], cfg)
        h = cfg.hessian_smooth * h + (1 - cfg.hessian_smooth) * g_hat**2
    return x, h


@dataclass(frozen=True)
class Message:
    """One transmission. ``scalars`` are model-size independent; ``seeds`` are integers."""

    sender: str
    receiver: str
    round: int
    scalars: np.ndarray
    seeds: tuple[int, ...] = ()

    @property
    def nbytes(self) -> int:
        return int(self.scalars.nbytes) + 8 * len(self.seeds)


@dataclass
class Channel:
    """Every message of a run, in order (the tests assert on their sizes)."""

    messages: list[Message] = field(default_factory=list)

    def send(self, message: Message) -> Message:
        self.messages.append(message)
        return message

    @property
    def total_bytes(self) -> int:
        return sum(m.nbytes for m in self.messages)


class Client:
    """Holds its data, its own copy of ``(x, h)`` and the number of rounds it has replayed."""

    def __init__(self, name: str, loss: LossFn, sample_batch: Callable[[np.random.Generator], Any],
                 x0: np.ndarray, cfg: ZOConfig, seed: int) -> None:
        self.name, self.loss, self.sample_batch, self.cfg = name, loss, sample_batch, cfg
        self.x = np.array(x0, dtype=np.float64)
        self.h = np.ones_like(self.x)
        self.synced = 0  # rounds of the broadcast history applied so far
        self.rng = np.random.default_rng(seed)

    def pull(self, seeds: Sequence[Sequence[int]], scalars: Sequence[np.ndarray]) -> None:
        """Replay missed rounds from the broadcast seeds and averaged scalars (step 4)."""
        for round_seeds, round_scalars in zip(seeds, scalars):
            self.x, self.h = apply_round(self.x, self.h, round_seeds, round_scalars, self.cfg)
            self.synced += 1

    def local_update(self, seeds: Sequence[int]) -> np.ndarray:
        """Step 2: ``K x P`` scalars; the synced model is left as it was."""
        x = self.x.copy()
        out = np.empty((len(seeds), self.cfg.num_pert))
        for k, seed in enumerate(seeds):
            batch = self.sample_batch(self.rng)
            out[k] = directional_derivatives(self.loss, x, self.h, seed, self.cfg, batch)
            x -= self.cfg.lr * reconstruct_gradient(self.h, seed, out[k], self.cfg)
        return out


class Server:
    """Samples clients and seeds, averages scalars, keeps the broadcast history and its own model."""

    def __init__(self, clients: Sequence[Client], x0: np.ndarray, cfg: ZOConfig,
                 clients_per_round: int, seed: int, channel: Channel | None = None) -> None:
        self.clients, self.cfg, self.per_round = list(clients), cfg, clients_per_round
        self.x = np.array(x0, dtype=np.float64)
        self.h = np.ones_like(self.x)
        self.rng = np.random.default_rng(seed)
        self.channel = channel if channel is not None else Channel()
        self.history_seeds: list[tuple[int, ...]] = []
        self.history_scalars: list[np.ndarray] = []

    def run_round(self) -> None:
        r = len(self.history_seeds)
        chosen = self.rng.choice(len(self.clients), size=self.per_round, replace=False)
        seeds = tuple(int(s) for s in self.rng.integers(0, 2**31 - 1, size=self.cfg.local_steps))
        uploads = []
        for index in sorted(int(i) for i in chosen):
            client = self.clients[index]
            missed = slice(client.synced, r)
            if client.synced < r:  # download: seeds and averaged scalars of the missed rounds
                flat_seeds = tuple(s for rs in self.history_seeds[missed] for s in rs)
                self.channel.send(Message("server", client.name, r,
                                          np.concatenate([a.ravel() for a in self.history_scalars[missed]]),
                                          flat_seeds))
                client.pull(self.history_seeds[missed], self.history_scalars[missed])
            self.channel.send(Message("server", client.name, r, np.empty(0), seeds))
            scalars = client.local_update(seeds)
            uploads.append(self.channel.send(Message(client.name, "server", r, scalars.copy())).scalars)
        averaged = np.mean(uploads, axis=0)
        self.history_seeds.append(seeds)
        self.history_scalars.append(averaged)
        self.x, self.h = apply_round(self.x, self.h, seeds, averaged, self.cfg)

    def sync_all(self) -> None:
        """Bring every client up to date (a final broadcast of the missed seeds and scalars)."""
        r = len(self.history_seeds)
        for client in self.clients:
            if client.synced < r:
                missed = slice(client.synced, r)
                self.channel.send(Message("server", client.name, r,
                                          np.concatenate([a.ravel() for a in self.history_scalars[missed]]),
                                          tuple(s for rs in self.history_seeds[missed] for s in rs)))
                client.pull(self.history_seeds[missed], self.history_scalars[missed])


def centralized_zo_round(loss: LossFn, x: np.ndarray, h: np.ndarray, seeds: Sequence[int],
                         cfg: ZOConfig, batches: Sequence[Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The same round computed by one machine with no messages: ``K`` Hessian-informed ZO-SGD
    steps on ``x`` with fixed ``h``, then the curvature update (reference for the tests)."""
    x = np.array(x, dtype=np.float64)
    scale = _inv_sqrt(h, cfg.eps)
    last_grad = np.zeros_like(x)
    for k, seed in enumerate(seeds):
        batch = None if batches is None else batches[k]
        us = [perturbation(seed, p, x.size) for p in range(cfg.num_pert)]
        f0 = loss(x, batch)
        grad = np.zeros_like(x)
        for u in us:
            z = scale * u
            if cfg.difference == "forward":
                g = (loss(x + cfg.mu * z, batch) - f0) / cfg.mu
            else:
                g = (loss(x + cfg.mu * z, batch) - loss(x - cfg.mu * z, batch)) / (2 * cfg.mu)
            grad += g * z / cfg.num_pert
        x = x - cfg.lr * grad
        last_grad = grad
    if cfg.hessian_smooth is not None:
        h = cfg.hessian_smooth * h + (1 - cfg.hessian_smooth) * last_grad**2
    return x, h
