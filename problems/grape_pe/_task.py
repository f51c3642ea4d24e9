"""Multi-query associative recall at growing distances (for :mod:`hifo.problems.grape_pe`).

A sequence of length ``L`` opens with ``pairs`` key/value pairs (distinct keys), continues with random
filler tokens and ends with ``pairs`` queries (the keys in a new order); at each query the model must
output that key's value. Content is the same at every length; only the distances between a query and
its key grow with ``L``, so training at ``L = 32`` and testing at 64 or 128 measures how a positional
encoding extrapolates. Solving it needs a previous-token step (offset 1) and a content match at long
range (the classic two-layer induction construction).

*Latest-value recall* (``writes = 2``): every key is written twice with different values and the query
asks for the later one. Content alone cannot tell the two writes apart. Measured (seed 0-2, 500 steps):
too hard for this model and budget: RoPE reaches only 0.27 at the training length and NoPE 0.24-0.27, so
no evaluator uses it (``docs/families/grape_pe.md``).
"""

from __future__ import annotations

import threading

import torch
import torch.nn.functional as F

from ._model import TinyTransformer

N_KEYS, N_VALUES, N_FILL = 32, 32, 8
VOCAB = N_KEYS + N_VALUES + N_FILL


def make_batch(batch: int, length: int, pairs: int, gen: torch.Generator, writes: int = 1):
    """``(tokens, targets)``; targets are ``-100`` except at the query positions.

    ``writes`` passes over the same ``pairs`` keys open the sequence, each pass in a fresh order with fresh
    values (a key's value in the last pass differs from its value in the pass before); the targets are the
    values of the *last* pass. ``writes = 1`` is plain recall; ``writes = 2`` (latest-value recall) needs
    position, since both writes of a key match its query equally by content."""
    if length < (2 * writes + 1) * pairs:
        raise ValueError("length too short for the pairs and queries")
    keys = torch.argsort(torch.rand(batch, N_KEYS, generator=gen), 1)[:, :pairs]
    vals = torch.randint(0, N_VALUES, (batch, pairs), generator=gen)
    passes = []
    for w in range(writes):
        if w:  # a new value for every key: shift by 1 .. N_VALUES - 1
            vals = (vals + torch.randint(1, N_VALUES, (batch, pairs), generator=gen)) % N_VALUES
        order = torch.argsort(torch.rand(batch, pairs, generator=gen), 1) if w else torch.arange(pairs).expand(batch, -1)
        passes.append(torch.stack([keys.gather(1, order), N_KEYS + vals.gather(1, order)], -1).flatten(1))
    fill = N_KEYS + N_VALUES + torch.randint(0, N_FILL, (batch, length - (2 * writes + 1) * pairs), generator=gen)
    order = torch.argsort(torch.rand(batch, pairs, generator=gen), 1)
    queries = keys.gather(1, order)
    x = torch.cat([*passes, fill, queries], 1)
    y = torch.full_like(x, -100)
    y[:, length - pairs:] = N_KEYS + vals.gather(1, order)
    return x, y


_INIT_LOCK = threading.Lock()


def train_model(pe: str, seed: int = 0, steps: int = 500, length: int = 32, pairs: int = 4, batch: int = 32,
                omegas: torch.Tensor | None = None, lr: float = 3e-3, d: int = 64, heads: int = 4,
                writes: int = 1, slopes: torch.Tensor | None = None) -> TinyTransformer:
    """Train a :class:`TinyTransformer` with positional encoding ``pe`` on recall at ``length`` (``writes``:
    see :func:`make_batch`; AdamW, one-cycle schedule); deterministic given the arguments (run with one torch thread)."""
    with _INIT_LOCK:  # initialisation draws from torch's global RNG; keep it per model under threads
        torch.manual_seed(seed)
        model = TinyTransformer(VOCAB, pe, d=d, heads=heads, omegas=omegas, slopes=slopes)
    gen = torch.Generator().manual_seed(10_000 + seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.1)
    for _ in range(steps):
        x, y = make_batch(batch, length, pairs, gen, writes)
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    model.eval()
    return model


def accuracy(model: TinyTransformer, length: int, pairs: int = 4, n: int = 256, seed: int = 0,
             writes: int = 1) -> float:
    """Fraction of queries answered correctly on ``n`` fresh sequences of ``length``."""
    gen = torch.Generator().manual_seed(20_000 + 7919 * seed + length)
    x, y = make_batch(n, length, pairs, gen, writes)
    with torch.no_grad():
        pred = model(x).argmax(-1)
    m = y != -100
    return float((pred[m] == y[m]).float().mean())


def train_and_test(pe: str, seed: int = 0, lengths: tuple[int, ...] = (32, 64, 128), **kw) -> dict[int, float]:
    """Train at ``kw.get('length', 32)`` and return the recall accuracy at each of ``lengths``."""
    model = train_model(pe, seed, **kw)
    pairs = kw.get("pairs", 4)
    return {L: accuracy(model, L, pairs, seed=seed, writes=kw.get("writes", 1)) for L in lengths}
