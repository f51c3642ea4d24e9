"""Federated softmax regression on digits with Byzantine clients: data split, local training, attacks.

Everything is deterministic given the seed (numpy only, float64), so a run can be replayed exactly
from the list of server aggregates (what the evaluator's parent does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Callable

import numpy as np

N_CLASSES = 10
ATTACKS = ("none", "sign_flip", "alie", "ipm", "label_flip")
SIGN_SCALE = 4.0   # sign flip sends -SIGN_SCALE x its own honest update
IPM_EPS = 0.5      # inner-product manipulation sends -IPM_EPS x the mean honest update


@lru_cache(maxsize=1)
def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits (on disk, nothing downloaded): features in [0, 1] plus a bias
    column; a fixed 1397/400 train/test split (permutation seed 0)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    X = np.hstack([d.data / 16.0, np.ones((len(d.data), 1))])
    y = d.target.astype(int)
    perm = np.random.default_rng(0).permutation(len(y))
    tr, te = perm[:1397], perm[1397:]
    return X[tr], y[tr], X[te], y[te]


def dirichlet_split(y: np.ndarray, n_clients: int, alpha: float, rng: np.random.Generator,
                    min_size: int = 8) -> list[np.ndarray]:
    """Label-heterogeneous split: each class's samples go to clients in Dirichlet(alpha) proportions
    (small alpha: each client sees few classes). Redrawn until every client has ``min_size`` samples."""
    for _ in range(100):
        parts: list[list[int]] = [[] for _ in range(n_clients)]
        for c in range(N_CLASSES):
            idx = rng.permutation(np.flatnonzero(y == c))
            cuts = (np.cumsum(rng.dirichlet(alpha * np.ones(n_clients)))[:-1] * len(idx)).astype(int)
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_size:
            return [np.sort(np.array(p, dtype=int)) for p in parts]
    raise RuntimeError("could not draw a Dirichlet split with every client non-empty")


def softmax_loss_grad(theta: np.ndarray, X: np.ndarray, y: np.ndarray, l2: float = 1e-4
                      ) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of softmax regression ``theta`` (d x 10, flattened) and its gradient."""
    W = theta.reshape(X.shape[1], N_CLASSES)
    Z = X @ W
    Z -= Z.max(axis=1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(axis=1, keepdims=True)
    n = len(y)
    loss = -np.log(P[np.arange(n), y] + 1e-300).mean() + 0.5 * l2 * float(theta @ theta)
    P[np.arange(n), y] -= 1.0
    grad = (X.T @ P / n).ravel() + l2 * theta
    return float(loss), grad


def accuracy(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(X @ theta.reshape(X.shape[1], N_CLASSES), axis=1) == y))


@dataclass(frozen=True)
class FLConfig:
    attack: str = "none"
    fraction: float = 0.0      # share of malicious clients
    seed: int = 0
    n_clients: int = 20
    alpha: float = 0.5         # Dirichlet concentration of the label split
    rounds: int = 30
    local_steps: int = 5
    local_lr: float = 0.5

    @property
    def n_malicious(self) -> int:
        return int(round(self.fraction * self.n_clients))


@dataclass
class FLSetup:
    """The clients of one configuration: data shards and which ones are malicious."""
    config: FLConfig
    shards: list[np.ndarray]
    malicious: np.ndarray          # bool (n_clients,)
    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    X_test: np.ndarray = field(repr=False)
    y_test: np.ndarray = field(repr=False)

    @property
    def dim(self) -> int:
        return self.X.shape[1] * N_CLASSES


def make_setup(config: FLConfig) -> FLSetup:
    if config.attack not in ATTACKS:
        raise ValueError(f"unknown attack {config.attack!r}; known: {', '.join(ATTACKS)}")
    X, y, Xt, yt = digits()
    rng = np.random.default_rng(config.seed)
    shards = dirichlet_split(y, config.n_clients, config.alpha, rng)
    malicious = np.zeros(config.n_clients, dtype=bool)
    if config.attack != "none":
        malicious[rng.choice(config.n_clients, config.n_malicious, replace=False)] = True
    return FLSetup(config, shards, malicious, X, y, Xt, yt)


def local_update(theta: np.ndarray, X: np.ndarray, y: np.ndarray, steps: int, lr: float) -> np.ndarray:
    """``steps`` full-batch gradient steps on one client's data; returns the model change."""
    local = theta.copy()
    for _ in range(steps):
        local -= lr * softmax_loss_grad(local, X, y)[1]
    return local - theta


def client_updates(setup: FLSetup, theta: np.ndarray) -> np.ndarray:
    """The (n_clients, dim) updates the server receives this round, attacks applied.

    Honest clients train locally. Malicious ones: ``label_flip`` trains on labels 9 - y;
    ``sign_flip`` sends -4 x its honest update; ``alie`` ("a little is enough", Baruch et al. 2019)
    sends mean - z * std of the honest updates (z from the number of clients and attackers);
    ``ipm`` (inner-product manipulation, Xie et al. 2020) sends -0.5 x the mean honest update.
    The omniscient attacks know every honest update of the round, as in the papers."""
    cfg = setup.config
    G = np.empty((cfg.n_clients, setup.dim))
    for k, idx in enumerate(setup.shards):
        labels = setup.y[idx]
        if setup.malicious[k] and cfg.attack == "label_flip":
            labels = N_CLASSES - 1 - labels
        G[k] = local_update(theta, setup.X[idx], labels, cfg.local_steps, cfg.local_lr)
    bad = setup.malicious
    if not bad.any() or cfg.attack == "label_flip":
        return G
    honest = G[~bad]
    if cfg.attack == "sign_flip":
        G[bad] = -SIGN_SCALE * G[bad]
    elif cfg.attack == "alie":
        n, f = cfg.n_clients, int(bad.sum())
        s = n // 2 + 1 - f
        z = NormalDist().inv_cdf(min(max((n - s) / n, 0.5), 0.999))
        G[bad] = honest.mean(axis=0) - z * honest.std(axis=0)
    elif cfg.attack == "ipm":
        G[bad] = -IPM_EPS * honest.mean(axis=0)
    return G


def clip_to_box(aggregate: np.ndarray, G: np.ndarray) -> np.ndarray:
    """The server accepts an aggregate only inside the coordinate-wise range of the updates it received."""
    return np.clip(aggregate, G.min(axis=0), G.max(axis=0))


Aggregator = Callable[[np.ndarray, int, dict], np.ndarray]


@dataclass
class FLRun:
    config: FLConfig
    test_acc: float
    train_loss: float
    aggregates: list[np.ndarray]
    curve: list[dict[str, float]]
    memories: list[dict[str, Any]]


def run_fl(config: FLConfig, aggregate: Aggregator | None = None, *,
           aggregates: list[np.ndarray] | None = None, log_every: int = 0) -> FLRun:
    """Federated training for ``config.rounds`` rounds.

    Either ``aggregate(updates, f, memory)`` computes each round's server step from the updates
    (``f``: the number of malicious clients, told to the defender as in the papers; ``memory``: a dict
    the rule owns, kept across rounds), or ``aggregates`` replays given steps. Every step is clipped
    into the box of that round's updates (:func:`clip_to_box`) before ``theta += step``."""
    if (aggregate is None) == (aggregates is None):
        raise ValueError("give exactly one of aggregate and aggregates")
    setup = make_setup(config)
    theta = np.zeros(setup.dim)
    memory: dict[str, Any] = {}
    used, curve, memories = [], [], []
    f = int(setup.malicious.sum())
    for t in range(config.rounds):
        G = client_updates(setup, theta)
        if aggregates is not None:
            if t >= len(aggregates):
                break
            step = np.asarray(aggregates[t], dtype=float)
        else:
            assert aggregate is not None
            step = np.asarray(aggregate(G.copy(), f, memory), dtype=float)
            memories.append({k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v)
                             for k, v in memory.items()})
        if step.shape != (setup.dim,) or not np.all(np.isfinite(step)):
            raise ValueError(f"round {t}: the aggregate must be a finite vector of shape ({setup.dim},), "
                             f"got shape {step.shape}")
        step = clip_to_box(step, G)
        used.append(step)
        theta = theta + step
        if log_every and (t % log_every == 0 or t == config.rounds - 1):
            curve.append({"round": t, "test_acc": accuracy(theta, setup.X_test, setup.y_test)})
    honest = np.concatenate([s for s, b in zip(setup.shards, setup.malicious) if not b])
    train_loss = softmax_loss_grad(theta, setup.X[honest], setup.y[honest], l2=0.0)[0]
    return FLRun(config, accuracy(theta, setup.X_test, setup.y_test), train_loss, used, curve, memories)
