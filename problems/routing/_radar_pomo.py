"""RADAR on the ATSP: POMO rollouts, REINFORCE training with a shared baseline, inference.

Training follows the official trainer (MatNet/POMO ``_train_one_batch``): a batch of fresh
tmat instances, one rollout from every node (``pomo = n``) sampled from the policy,
advantage = tour reward minus the mean reward of the instance's ``n`` rollouts (the shared
baseline), loss = ``-mean(advantage * sum log p)``, Adam (lr 4e-4, weight decay 1e-6).

Inference (:func:`radar_solve`) exposes the knobs the ``radar_tune`` evaluator lets a
heuristic choose: Sinkhorn rounds in the encoder, logit clipping, softmax temperature, a
cost bias on the logits, start nodes, number of augmentations (re-encodings with random
SVD sign flips, or fresh one-hot draws without SVD) and greedy vs sampled decoding. The
best of all rollouts is returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ._matnet import MatNetConfig, MatNetModel
from ._radar import RadarConfig, RadarModel

WEIGHTS_DIR = Path(__file__).parent / "weights"


def tmat_batch(batch: int, n: int, generator: torch.Generator, int_max: int = 1_000_000) -> torch.Tensor:
    """A batch of tmat matrices in [0, 1) (MatNet/RADAR ``get_random_problems``, batched
    min-plus closure until a fixed point)."""
    m = torch.randint(0, int_max, (batch, n, n), generator=generator)
    idx = torch.arange(n)
    m[:, idx, idx] = 0
    while True:
        new = (m[:, :, :, None] + m[:, None, :, :]).min(dim=2).values
        if torch.equal(new, m):
            break
        m = new
    return m.float() / int_max


def tour_lengths(cost: torch.Tensor, tours: torch.Tensor) -> torch.Tensor:
    """Closed tour lengths: ``cost`` (B, n, n), ``tours`` (B, P, n) -> (B, P)."""
    b, p, n = tours.shape
    frm, to = tours, tours.roll(-1, dims=2)
    bidx = torch.arange(b)[:, None, None].expand(b, p, n)
    return cost[bidx, frm, to].sum(dim=2)


def make_model(cfg: RadarConfig | MatNetConfig) -> RadarModel | MatNetModel:
    """RADAR's single-stream model or MatNet's two-stream one, by the config's type."""
    return MatNetModel(cfg) if isinstance(cfg, MatNetConfig) else RadarModel(cfg)


def rollout(model: RadarModel | MatNetModel, cost: torch.Tensor, starts: torch.Tensor, *, greedy: bool,
            temperature: float = 1.0, logit_clipping: float | None = None, cost_weight: float = 0.0,
            generator: torch.Generator | None = None, augment: bool = False,
            sinkhorn_iters: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Decode one tour per start node for each instance.

    ``cost`` (B, n, n); ``starts`` (P,) node indices. Step policy:
    ``softmax((clip * tanh(score) - cost_weight * C~[current, :] + mask) / temperature)``.
    Returns tours (B, P, n), lengths (B, P) and summed log-probabilities (B, P).
    """
    b, n, _ = cost.shape
    p = starts.shape[0]
    clip = model.cfg.logit_clipping if logit_clipping is None else logit_clipping
    # queries come from ``rows`` (first and current node), keys from ``cols`` (MatNet's column
    # stream; both are RADAR's single stream)
    rows, cols, cost_z = model.encode_streams(cost, generator, augment, sinkhorn_iters)
    bidx = torch.arange(b)[:, None].expand(b, p)
    current = starts[None, :].expand(b, p)
    cache = model.decoder.prepare(cols, rows[bidx, current])
    mask = torch.zeros(b, p, n)
    mask[bidx, torch.arange(p)[None, :].expand(b, p), current] = float("-inf")
    tours = [current]
    logp = torch.zeros(b, p)
    for _ in range(n - 1):
        scores = model.decoder.scores(cache, rows[bidx, current], mask)
        logits = clip * torch.tanh(scores) + mask
        if cost_weight:
            logits = logits - cost_weight * cost_z[bidx, current]
        log_probs = torch.log_softmax(logits / temperature, dim=-1)
        if greedy:
            nxt = log_probs.argmax(dim=-1)
        else:
            nxt = torch.multinomial(log_probs.exp().reshape(b * p, n), 1, generator=generator).reshape(b, p)
        logp = logp + log_probs.gather(2, nxt[:, :, None]).squeeze(2)
        mask = mask.clone()
        mask[bidx, torch.arange(p)[None, :].expand(b, p), nxt] = float("-inf")
        current = nxt
        tours.append(current)
    tours_t = torch.stack(tours, dim=2)
    return tours_t, tour_lengths(cost, tours_t), logp


@dataclass
class TrainLog:
    steps: list[int]
    elapsed_s: list[float]
    train_len: list[float]  # mean best-of-POMO length of the training batch
    val_gap: list[float]  # mean gap (%) of greedy POMO on the validation set, when given


def train_radar(cfg: RadarConfig | MatNetConfig, n: int, *, seconds: float, batch_size: int = 64, lr: float = 4e-4,
                weight_decay: float = 1e-6, seed: int = 0, val_cost: torch.Tensor | None = None,
                val_ref: torch.Tensor | None = None, eval_every: int = 50, max_steps: int | None = None,
                model: RadarModel | MatNetModel | None = None) -> tuple[RadarModel | MatNetModel, TrainLog]:
    """Train with POMO REINFORCE for ``seconds`` of wall clock (or ``max_steps`` batches); a
    :class:`MatNetConfig` trains MatNet's two-stream model with the same loop."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = make_model(cfg) if model is None else model
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    log = TrainLog([], [], [], [])
    t0, step, starts = time.perf_counter(), 0, torch.arange(n)
    while time.perf_counter() - t0 < seconds and (max_steps is None or step < max_steps):
        model.train()
        cost = tmat_batch(batch_size, n, gen)
        _, lengths, logp = rollout(model, cost, starts, greedy=False, generator=gen, augment=True)
        reward = -lengths
        advantage = reward - reward.mean(dim=1, keepdim=True)
        loss = -(advantage * logp).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % eval_every == 0 or step == 1:
            log.steps.append(step)
            log.elapsed_s.append(time.perf_counter() - t0)
            log.train_len.append(float(lengths.min(dim=1).values.mean()))
            gap = float("nan")
            if val_cost is not None and val_ref is not None:
                gap = float(((greedy_pomo(model, val_cost) / val_ref - 1) * 100).mean())
            log.val_gap.append(gap)
    model.eval()
    return model, log


@torch.no_grad()
def greedy_pomo(model: RadarModel | MatNetModel, cost: torch.Tensor, augmentations: int = 1, seed: int = 0) -> torch.Tensor:
    """Best greedy POMO tour length per instance (B,), over ``augmentations`` encodings."""
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    n = cost.shape[1]
    best: torch.Tensor | None = None
    for a in range(augmentations):
        _, lengths, _ = rollout(model, cost, torch.arange(n), greedy=True, generator=gen, augment=a > 0)
        best = lengths.min(dim=1).values if best is None else torch.minimum(best, lengths.min(dim=1).values)
    if best is None:
        raise ValueError("augmentations must be at least 1")
    return best


@dataclass(frozen=True)
class RadarSettings:
    """Inference-time choices (see :func:`radar_solve`)."""

    sinkhorn_iters: int = 10
    logit_clipping: float = 10.0
    temperature: float = 1.0
    cost_weight: float = 0.0
    start_nodes: tuple[int, ...] | None = None  # None: every node (POMO)
    augmentations: int = 1
    sampling: bool = False


@torch.no_grad()
def radar_solve(model: RadarModel | MatNetModel, distance_matrix: np.ndarray, settings: RadarSettings = RadarSettings(),
                seed: int = 0) -> tuple[np.ndarray, float]:
    """Best tour over ``augmentations x len(start_nodes)`` rollouts, and its length under the
    given matrix. Augmentation 0 is the canonical encoding; the others flip SVD signs (or
    redraw one-hot embeddings). Deterministic for a fixed ``seed``."""
    model.eval()
    d = np.asarray(distance_matrix, dtype=np.float64)
    n = d.shape[0]
    cost = torch.tensor(d, dtype=torch.float32)[None]
    gen = torch.Generator().manual_seed(seed)
    starts = torch.arange(n) if settings.start_nodes is None else torch.tensor(settings.start_nodes)
    best_tour, best_len = None, float("inf")
    for a in range(settings.augmentations):
        tours, _, _ = rollout(model, cost, starts, greedy=not settings.sampling,
                              temperature=settings.temperature, logit_clipping=settings.logit_clipping,
                              cost_weight=settings.cost_weight, generator=gen, augment=a > 0,
                              sinkhorn_iters=settings.sinkhorn_iters)
        for tour in tours[0].numpy():
            length = float(d[tour, np.roll(tour, -1)].sum())  # exact, in float64
            if length < best_len:
                best_tour, best_len = tour, length
    return np.asarray(best_tour, dtype=np.int64), best_len


def save_radar(model: RadarModel | MatNetModel, path: Path, meta: dict | None = None) -> None:
    """Weights in float32 with the config (and ``arch``: ``radar`` or ``matnet``), as a small ``.pt`` file."""
    arch = "matnet" if isinstance(model, MatNetModel) else "radar"
    torch.save({"arch": arch, "config": model.cfg.to_dict(), "state_dict": model.state_dict(), "meta": meta or {}},
               path)


def load_radar(name_or_path: str | Path) -> RadarModel | MatNetModel:
    """Load a model saved by :func:`save_radar` (files without ``arch`` are RADAR models); a bare
    name is looked up in ``weights/``."""
    path = Path(name_or_path)
    if not path.suffix:
        path = WEIGHTS_DIR / f"{name_or_path}.pt"
    blob = torch.load(path, map_location="cpu", weights_only=True)
    cfg_cls = {"radar": RadarConfig, "matnet": MatNetConfig}[blob.get("arch", "radar")]
    model = make_model(cfg_cls(**blob["config"]))
    model.load_state_dict(blob["state_dict"])
    return model.eval()
