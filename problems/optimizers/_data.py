"""Data for the small CPU tasks: sklearn's digits and a synthetic Markov-chain corpus.

* digits (``sklearn.datasets.load_digits``: 1,797 8x8 images, 10 classes, shipped inside
  scikit-learn, no download): a fixed permutation (seed 0) keeps 1,297 images for training and
  500 for validation; pixels are divided by 16.
* the Markov corpus: tokens from a seeded order-2 Markov source over ``vocab`` symbols whose
  transition rows are Dirichlet(``alpha``) draws. Its entropy rate (nats per token) is computed
  exactly from the stationary distribution of the pair chain, so a language model's validation
  loss has a known floor: :func:`markov_entropy_rate`. Training and validation streams are two
  independent samples of the same source.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

DIGITS_TRAIN = 1297  # the rest (500) is the validation split
MARKOV_VOCAB, MARKOV_ALPHA, MARKOV_SOURCE_SEED = 16, 0.2, 7
MARKOV_TRAIN_TOKENS, MARKOV_VAL_TOKENS = 20_000, 4_096


@dataclass(frozen=True)
class Split:
    """Inputs and targets of one split (for the corpus: ``inputs`` is the token stream)."""

    inputs: np.ndarray
    targets: np.ndarray

    def __len__(self) -> int:
        return len(self.inputs)


DIGITS_SPLIT_SEED, MARKOV_VAL_SEED = 0, 2  # the public defaults (an evaluator may hold its own, secret ones)


@lru_cache(maxsize=None)
def digits(which: str, split_seed: int = DIGITS_SPLIT_SEED) -> Split:
    """``"train"`` or ``"val"`` split of sklearn's digits, ``float32`` pixels in ``[0, 1]``.

    ``split_seed`` draws the permutation that decides which images are held out."""
    from sklearn.datasets import load_digits  # imported lazily: only the trusted side needs it

    data = load_digits()
    order = np.random.default_rng(split_seed).permutation(len(data.target))
    X = (data.data[order] / 16.0).astype(np.float32)
    y = data.target[order].astype(np.int64)
    if which == "train":
        return Split(X[:DIGITS_TRAIN], y[:DIGITS_TRAIN])
    if which == "val":
        return Split(X[DIGITS_TRAIN:], y[DIGITS_TRAIN:])
    raise KeyError(f"digits split must be 'train' or 'val', got {which!r}")


def markov_transitions(vocab: int = MARKOV_VOCAB, alpha: float = MARKOV_ALPHA,
                       seed: int = MARKOV_SOURCE_SEED) -> np.ndarray:
    """``P[a, b, c] = Pr(next = c | previous two = a, b)``."""
    return np.random.default_rng(seed).dirichlet(np.full(vocab, alpha), size=(vocab, vocab))


def markov_entropy_rate(P: np.ndarray) -> float:
    """Exact entropy rate (nats/token) of the order-2 chain: ``sum_ab pi(a, b) H(P[a, b, :])``."""
    V = P.shape[0]
    pi = np.full((V, V), 1.0 / V**2)
    for _ in range(10_000):  # power iteration on the pair chain (a, b) -> (b, c)
        new = np.einsum("ab,abc->bc", pi, P)
        if np.abs(new - pi).max() < 1e-14:
            break
        pi = new
    row_entropy = -np.sum(np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0), axis=-1)
    return float(np.sum(pi * row_entropy))


def markov_stream(P: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` tokens sampled from the chain (first two tokens uniform)."""
    rng = np.random.default_rng(seed)
    V = P.shape[0]
    cdf = np.cumsum(P, axis=-1)
    out = np.empty(n, dtype=np.int64)
    out[:2] = rng.integers(0, V, size=2)
    u = rng.random(n)
    for t in range(2, n):
        out[t] = min(int(np.searchsorted(cdf[out[t - 2], out[t - 1]], u[t])), V - 1)
    return out


@lru_cache(maxsize=None)
def markov_corpus(which: str, val_seed: int = MARKOV_VAL_SEED) -> Split:
    """``"train"`` (seed 1) or ``"val"`` (seed ``val_seed``) token stream of the default source."""
    sizes = {"train": (MARKOV_TRAIN_TOKENS, 1), "val": (MARKOV_VAL_TOKENS, val_seed)}
    if which not in sizes:
        raise KeyError(f"markov split must be 'train' or 'val', got {which!r}")
    if which == "val" and val_seed == 1:
        raise ValueError("the validation stream's seed must differ from the training stream's (1)")
    n, seed = sizes[which]
    return Split(markov_stream(markov_transitions(), n, seed), np.empty(0, dtype=np.int64))
