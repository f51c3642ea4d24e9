"""Discount Model Search's discount archive (Tjanaka et al., ICLR 2026, Section 5, Algorithm 1).

CMA-MAE keeps one discount value (threshold) per histogram cell; DMS replaces the histogram
with a smooth model ``D(m)`` -- an MLP over the measures scaled to ``[-1, 1]`` -- so that two
solutions with nearby but different high-dimensional measures still get different discounts.

Per iteration (the reference ``DiscountArchive``):

1. :meth:`DiscountArchive.add` -- the improvement of each evaluated solution is
   ``f(theta) - D(m(theta))``; its status is "added" (2) when that is positive, else 0. The
   emitters rank by it.
2. :meth:`DiscountArchive.train` -- training targets: at each evaluated measure, the CMA-MAE
   threshold update applied to the model's own discount,
   ``D'(m) = (1 - alpha) D(m) + alpha f`` if ``f > D(m)``, else ``D(m)`` (the paper's Eq. 1);
   plus ``empty_points`` centres of cells the *result archive* has not filled yet, with target
   ``threshold_min`` (so the model does not drift upward where nothing was found). The MLP is
   regressed on these points with Adam, minibatches of 32, for at most ``epochs`` epochs,
   stopping early once an epoch's MSE falls to ``cutoff_loss``.
3. Before the first iteration :meth:`init_model` fits ``D == threshold_min`` on
   ``init_points`` empty-cell centres.

``rule`` makes the update pluggable (for the ``qd_dms`` evaluator): it maps
``(objective, discount, normalised measures, progress)`` to ``(ranking values, targets)``.
The default, :func:`cma_mae_rule`, is the paper's: ranking by ``f - D`` and Eq. 1 targets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._archive import Archive
from ._mlp import MLP, Adam, fit_mse

DiscountRule = Callable[[np.ndarray, np.ndarray, np.ndarray, float], tuple[np.ndarray, np.ndarray]]


def cma_mae_rule(learning_rate: float) -> DiscountRule:
    """The paper's rule: rank by ``f - D(m)``; target ``(1-a) D + a f`` where ``f > D``."""
    alpha = float(learning_rate)

    def rule(objective, discount, measures, progress):
        targets = np.where(objective > discount, (1 - alpha) * discount + alpha * objective, discount)
        return objective - discount, targets

    return rule


@dataclass(frozen=True)
class DiscountModelConfig:
    """Discount model and training settings; defaults are the paper's (config ``mlp.yaml``,
    ``discount.yaml``): 2 hidden layers of 128 ReLU units, Adam(1e-3), <= 5 epochs, early stop at
    MSE 0.05 (5% of the objective range), batches of 32, 100 empty points, 1000 init points."""

    hidden: tuple[int, ...] = (128, 128)
    lr: float = 1e-3
    epochs: int = 5
    cutoff_loss: float = 0.05
    batch_size: int = 32
    empty_points: int = 100
    init_points: int = 1000


class DiscountArchive:
    """Improvement values from a discount model; holds no solutions itself."""

    def __init__(self, *, measure_bounds: tuple[np.ndarray, np.ndarray], result_archive: Archive,
                 learning_rate: float, threshold_min: float,
                 config: DiscountModelConfig = DiscountModelConfig(), rule: DiscountRule | None = None,
                 seed: int | np.random.SeedSequence | None = None) -> None:
        if not np.isfinite(threshold_min):
            raise ValueError("DMS needs a finite threshold_min (the target at empty cells)")
        self.low = np.asarray(measure_bounds[0], dtype=np.float64)
        self.high = np.asarray(measure_bounds[1], dtype=np.float64)
        self.measure_dim = len(self.low)
        self.result_archive = result_archive
        self.learning_rate = float(learning_rate)
        self.threshold_min = float(threshold_min)
        self.config = config
        self.rule = rule if rule is not None else cma_mae_rule(learning_rate)
        self.progress = 0.0  # fraction of the run's budget spent, set by the caller for rules
        ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        model_seed, train_seed = ss.spawn(2)
        self._rng = np.random.default_rng(train_seed)
        self.model = MLP((self.measure_dim, *config.hidden, 1), seed=model_seed)
        self.optimizer = Adam(self.model, lr=config.lr)
        self._cache: tuple[np.ndarray, np.ndarray] | None = None  # (measures, targets)
        self.last_losses: list[float] = []

    def normalize(self, measures: np.ndarray) -> np.ndarray:
        """Measures scaled linearly from the measure bounds to ``[-1, 1]``."""
        return 2.0 * (np.asarray(measures, dtype=np.float64) - self.low) / (self.high - self.low) - 1.0

    def discount(self, measures: np.ndarray) -> np.ndarray:
        """``D(m)`` for a batch of measures (one forward pass; no chunking to get wrong)."""
        return self.model(self.normalize(measures)).astype(np.float64)

    def add(self, solution: np.ndarray, objective: np.ndarray, measures: np.ndarray) -> dict[str, np.ndarray]:
        objective = np.asarray(objective, dtype=np.float64).reshape(-1)
        measures = np.asarray(measures, dtype=np.float64).reshape(len(objective), self.measure_dim)
        d = self.discount(measures)
        values, targets = self.rule(objective, d, self.normalize(measures), float(self.progress))
        values = _checked(values, len(objective), "ranking values")
        targets = _checked(targets, len(objective), "targets")
        self._cache = (measures, targets)
        return {"status": np.where(objective > d, 2, 0).astype(np.int32), "value": values, "discount": d}

    @property
    def pending(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(measures, targets)`` of the last :meth:`add`, waiting for :meth:`train`."""
        return self._cache

    def _fit(self, measures: np.ndarray, targets: np.ndarray) -> list[float]:
        c = self.config
        self.last_losses = fit_mse(self.model, self.optimizer, self.normalize(measures), targets,
                                   epochs=c.epochs, cutoff_loss=c.cutoff_loss, batch_size=c.batch_size,
                                   rng=self._rng)
        return self.last_losses

    def init_model(self) -> list[float]:
        """Fit ``D = threshold_min`` at ``init_points`` empty-cell centres of the result archive."""
        empty = self.result_archive.empty_cell_centers(self.config.init_points)
        return self._fit(empty, np.full(len(empty), self.threshold_min))

    def train(self) -> list[float]:
        """One training round on the last batch's targets plus fresh empty points."""
        if self._cache is None:
            raise RuntimeError("train() before add()")
        measures, targets = self._cache
        empty = self.result_archive.empty_cell_centers(self.config.empty_points)
        x = np.concatenate([measures, empty])
        t = np.concatenate([targets, np.full(len(empty), self.threshold_min)])
        return self._fit(x, t)


def _checked(arr, n: int, what: str) -> np.ndarray:
    out = np.asarray(arr, dtype=np.float64)
    if out.shape != (n,):
        raise ValueError(f"the discount rule must return {what} of shape ({n},), got {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"the discount rule returned non-finite {what}")
    return out
