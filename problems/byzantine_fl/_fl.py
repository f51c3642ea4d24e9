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
ATTACKS = ("none", "sign_flip", "alie", "ipm", "label_flip", "min_max", "min_sum")
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


def _adaptive_scale(mu: np.ndarray, direction: np.ndarray, noise: np.ndarray, honest: np.ndarray,
                    kind: str) -> float:
    """The largest gamma (bisection, Shejwalkar & Houmansadr 2021, "AGR-agnostic" attacks) for which every
    malicious row ``mu + gamma * direction + noise_k`` stays as close to the honest updates as the honest
    updates are to each other (-1 when even gamma = 0 does not): ``min_max``: its largest distance to an
    honest update at most the largest honest pairwise distance; ``min_sum``: its sum of squared distances
    to the honest updates at most the largest such sum of an honest update."""
    sq = ((honest[:, None, :] - honest[None, :, :]) ** 2).sum(axis=2)
    bound = float(np.sqrt(sq.max())) if kind == "min_max" else float(sq.sum(axis=1).max())

    def fits(gamma: float) -> bool:
        rows = mu + gamma * direction + noise
        d2 = ((rows[:, None, :] - honest[None, :, :]) ** 2).sum(axis=2)
        return bool(np.sqrt(d2.max()) <= bound) if kind == "min_max" else bool(d2.sum(axis=1).max() <= bound)

    if not fits(0.0):
        return -1.0  # the noise alone breaks the constraint
    lo, hi = 0.0, 1.0
    while fits(hi) and hi < 1e6:
        lo, hi = hi, 2.0 * hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def client_round(setup: FLSetup, theta: np.ndarray, round_index: int, phase: int = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """What the clients send for the model ``theta``: the (n_clients, dim) updates and each client's
    training loss at ``theta`` (n_clients,), attacks applied.

    Honest clients report their cross-entropy on their own shard and train locally. Malicious ones:
    ``label_flip`` trains (and reports its loss) on labels 9 - y; ``sign_flip`` sends -4 x its honest
    update; ``alie`` ("a little is enough", Baruch et al. 2019) sends mean - z * std of the honest updates
    (z from the number of clients and attackers); ``ipm`` (inner-product manipulation, Xie et al. 2020)
    sends -0.5 x the mean honest update; ``min_max`` / ``min_sum`` (Shejwalkar & Houmansadr 2021, the
    aggregation-agnostic attacks) send mean - gamma * mean / |mean| (their "inverse unit vector") with
    gamma as large as keeps them inside the honest updates' spread (:func:`_adaptive_scale`). On ALIE,
    IPM, min-max and min-sum each attacker adds its own Gaussian noise of the honest updates'
    per-coordinate std (min-max / min-sum: halved until the attack's constraint holds at gamma = 0), so
    no two attackers send the same vector. Every attacker but the label flipper reports the smallest
    honest loss of the round (a loss that buys weight). The omniscient attacks know every honest update
    of the round, as in the papers. The noise comes from a generator seeded by ``(seed, round_index,
    phase)``, so a replay draws the same noise whatever extra rounds (``phase`` 1: a probe, see
    :func:`run_fl`) a rule asked for."""
    cfg = setup.config
    G = np.empty((cfg.n_clients, setup.dim))
    losses = np.empty(cfg.n_clients)
    for k, idx in enumerate(setup.shards):
        labels = setup.y[idx]
        if setup.malicious[k] and cfg.attack == "label_flip":
            labels = N_CLASSES - 1 - labels
        losses[k] = softmax_loss_grad(theta, setup.X[idx], labels)[0]
        G[k] = local_update(theta, setup.X[idx], labels, cfg.local_steps, cfg.local_lr)
    bad = setup.malicious
    if not bad.any() or cfg.attack == "label_flip":
        return G, losses
    honest = G[~bad]
    losses[bad] = losses[~bad].min()
    f = int(bad.sum())
    mu, sd = honest.mean(axis=0), honest.std(axis=0)
    noise = np.random.default_rng([cfg.seed, round_index, phase]).standard_normal((f, setup.dim)) * sd
    if cfg.attack == "sign_flip":
        G[bad] = -SIGN_SCALE * G[bad]
    elif cfg.attack == "alie":
        n = cfg.n_clients
        s = n // 2 + 1 - f
        z = NormalDist().inv_cdf(min(max((n - s) / n, 0.5), 0.999))
        G[bad] = mu - z * sd + noise
    elif cfg.attack == "ipm":
        G[bad] = -IPM_EPS * mu + noise
    elif cfg.attack in ("min_max", "min_sum"):
        direction = -mu / max(float(np.sqrt(mu @ mu)), 1e-12)  # the "inverse unit vector" perturbation
        gamma = _adaptive_scale(mu, direction, noise, honest, cfg.attack)
        for _ in range(30):
            if gamma >= 0.0:
                break
            noise = 0.5 * noise
            gamma = _adaptive_scale(mu, direction, noise, honest, cfg.attack)
        G[bad] = mu + max(gamma, 0.0) * direction + noise
    return G, losses


def clip_to_box(aggregate: np.ndarray, G: np.ndarray) -> np.ndarray:
    """The server accepts an aggregate only inside the coordinate-wise range of the updates it received."""
    return np.clip(aggregate, G.min(axis=0), G.max(axis=0))


Aggregator = Callable[[np.ndarray, np.ndarray, int, dict], Any]


@dataclass
class FLRun:
    config: FLConfig
    test_acc: float
    train_loss: float
    aggregates: list[np.ndarray]
    curve: list[dict[str, float]]
    memories: list[dict[str, Any]]


def _as_step(value: Any, dim: int, what: str) -> np.ndarray:
    step = np.asarray(value, dtype=float)
    if step.shape != (dim,) or not np.all(np.isfinite(step)):
        raise ValueError(f"{what} must be a finite vector of shape ({dim},), got shape {step.shape}")
    return step


def run_fl(config: FLConfig, aggregate: Aggregator | None = None, *,
           aggregates: list[np.ndarray] | None = None, log_every: int = 0) -> FLRun:
    """Federated training for ``config.rounds`` rounds.

    Either ``aggregate(updates, losses, f, memory)`` computes each round's server step from what the
    clients sent (:func:`client_round`: updates and training losses; ``f``: the number of malicious
    clients, told to the defender as in the papers; ``memory``: a dict the rule owns, kept across rounds),
    or ``aggregates`` replays given steps. A rule may once per round return ``{"probe": step}`` instead
    of a step: the clients then answer for the model ``theta + step`` (a second communication round, as
    the learnable-weights rule of Parsa et al. needs), their answer is put in ``memory["probe"]``
    (``step``, ``updates``, ``losses``) and the rule is called again with the same arguments; it must
    then return the step. The probe never moves the model, so a replay needs only the steps. Every step
    (and probe) is clipped into the box of the round's updates (:func:`clip_to_box`) before use."""
    if (aggregate is None) == (aggregates is None):
        raise ValueError("give exactly one of aggregate and aggregates")
    setup = make_setup(config)
    theta = np.zeros(setup.dim)
    memory: dict[str, Any] = {}
    used, curve, memories = [], [], []
    f = int(setup.malicious.sum())
    for t in range(config.rounds):
        G, losses = client_round(setup, theta, t)
        if aggregates is not None:
            if t >= len(aggregates):
                break
            step = _as_step(aggregates[t], setup.dim, f"round {t}: the aggregate")
        else:
            assert aggregate is not None
            memory.pop("probe", None)
            out = aggregate(G.copy(), losses.copy(), f, memory)
            if isinstance(out, dict):
                if set(out) != {"probe"}:
                    raise ValueError(f"round {t}: a dict answer must be {{'probe': step}}, got keys {sorted(out)}")
                probe = clip_to_box(_as_step(out["probe"], setup.dim, f"round {t}: the probe"), G)
                Gp, lp = client_round(setup, theta + probe, t, phase=1)
                memory["probe"] = {"step": probe, "updates": Gp, "losses": lp}
                out = aggregate(G.copy(), losses.copy(), f, memory)
                if isinstance(out, dict):
                    raise ValueError(f"round {t}: one probe per round; the second call must return the step")
            step = _as_step(out, setup.dim, f"round {t}: the aggregate")
            memories.append({k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v)
                             for k, v in memory.items()})
        step = clip_to_box(step, G)
        used.append(step)
        theta = theta + step
        if log_every and (t % log_every == 0 or t == config.rounds - 1):
            curve.append({"round": t, "test_acc": accuracy(theta, setup.X_test, setup.y_test)})
    honest = np.concatenate([s for s, b in zip(setup.shards, setup.malicious) if not b])
    train_loss = softmax_loss_grad(theta, setup.X[honest], setup.y[honest], l2=0.0)[0]
    return FLRun(config, accuracy(theta, setup.X_test, setup.y_test), train_loss, used, curve, memories)
