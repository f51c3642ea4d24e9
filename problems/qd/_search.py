"""CMA-ME, CMA-MAE and DMS as one ask/tell loop, with the paper's experimental settings.

Per iteration (pyribs's ``Scheduler`` in batch mode, which both papers use): every emitter asks
for ``batch_size`` solutions, the whole batch is evaluated at once, offered to the *search
archive* (MAP-Elites for CMA-ME, the CMA-MAE threshold archive, or DMS's discount archive) and to
the *result archive* (a MAP-Elites archive on which QD score and coverage are measured), and each
emitter is told its slice of the search archive's answer. DMS then trains its discount model.

Defaults follow the experiments repository (``icaros-usc/discount-models``, config ``algo/`` and
``domain/``): 15 emitters x 36 = 540 evaluations per iteration, ``sigma0`` 0.5 (0.2 for the arm),
improvement ranking with ``mu`` selection, ``threshold_min = 0`` (the objectives' lower bound);
CMA-MAE ``alpha = 0.01``; DMS ``alpha = 0.1`` (0.001 for the arm). Archives: a 100 x 100 grid
for 2-D measures, a 10,000-cell CVT otherwise. Restarts: "basic" for 2-D domains, every 100
iterations for the 10-D+ LP domains. The image domain uses its TA (MNIST) settings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ._archive import Archive, CVTArchive, GridArchive, cvt_centroids
from ._discount import DiscountArchive, DiscountModelConfig, DiscountRule
from ._emitter import EvolutionStrategyEmitter, Ranker
from ._threads import single_thread_blas

ALGORITHMS = ("cma_me", "cma_mae", "dms")


@dataclass(frozen=True)
class QDConfig:
    """Everything that defines a run apart from the domain and the seed."""

    algorithm: str = "dms"
    num_emitters: int = 15
    batch_size: int = 36
    sigma0: float = 0.5
    ranker: str = "imp"
    selection_rule: str = "mu"
    restart_rule: str | int = "basic"
    learning_rate: float | None = None  # None: 0.01 for CMA-MAE, 0.1 for DMS, 1 for CMA-ME
    threshold_min: float = 0.0
    cma_update: str = "hansen"  # "pyribs": pyribs 0.12's CMA-ES update (see CMAEvolutionStrategy)
    grid_dims: tuple[int, ...] | None = None  # the result archive: a grid with these dims ...
    centroids: Any = field(default=None, compare=False, repr=False)  # ... or a CVT on these
    discount: DiscountModelConfig = DiscountModelConfig()

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if (self.grid_dims is None) == (self.centroids is None):
            raise ValueError("give exactly one of grid_dims and centroids for the archives")

    @property
    def alpha(self) -> float:
        if self.learning_rate is not None:
            return float(self.learning_rate)
        return {"cma_me": 1.0, "cma_mae": 0.01, "dms": 0.1}[self.algorithm]


def paper_config(algorithm: str, domain, *, cvt_cells: int = 10_000, centroid_seed: int = 42,
                 **overrides) -> QDConfig:
    """The paper's settings for ``domain`` (see the module docstring); ``overrides`` win."""
    kind = type(domain).__name__
    kw: dict[str, Any] = {"algorithm": algorithm, "sigma0": 0.2 if kind == "PlanarArm" else 0.5}
    if algorithm == "dms" and kind == "PlanarArm":
        kw["learning_rate"] = 0.001
    if kind == "TrianglesDigits":
        # TA (MNIST) settings: 5 emitters, sigma0 0.1, restarts every 50 iterations,
        # alpha 0.001 for both CMA-MAE and DMS, the dataset images as CVT centroids.
        kw.update(sigma0=0.1, num_emitters=5, restart_rule=50, centroids=domain.archive_centroids)
        if algorithm != "cma_me":
            kw["learning_rate"] = 0.001
    elif domain.measure_dim == 2:
        kw["grid_dims"] = (100, 100)
    else:
        low, high = domain.measure_bounds
        kw["centroids"] = cached_centroids(cvt_cells, tuple(zip(low.tolist(), high.tolist())), centroid_seed)
        kw["restart_rule"] = 100
    if algorithm == "cma_me":
        kw["ranker"], kw["threshold_min"] = "2imp", -np.inf
    kw.update(overrides)
    return QDConfig(**kw)


_CENTROIDS: dict[tuple, np.ndarray] = {}


def cached_centroids(cells: int, ranges: tuple, seed: int, samples: int = 50_000,
                     iterations: int = 15) -> np.ndarray:
    """:func:`cvt_centroids`, memoised per process (k-means on 10,000 cells takes seconds)."""
    key = (cells, ranges, seed, samples, iterations)
    if key not in _CENTROIDS:
        _CENTROIDS[key] = cvt_centroids(cells, ranges, samples=samples, iterations=iterations, seed=seed)
    return _CENTROIDS[key]


class QDSearch:
    """One seeded run of ``config.algorithm`` on ``domain``.

    ``rule`` replaces DMS's discount update (see :class:`DiscountArchive`); ``ranker`` replaces
    the emitters' ranking.
    """

    def __init__(self, domain, config: QDConfig, seed: int | None = 0, *,
                 rule: DiscountRule | None = None, ranker: Ranker | None = None) -> None:
        self.domain = domain
        self.config = config
        ss = np.random.SeedSequence(seed)
        result_seed, search_seed, emitter_seed = ss.spawn(3)
        self.result_archive = self._make_archive(config, 1.0, -np.inf, result_seed)
        alpha = config.alpha
        if config.algorithm == "cma_me":
            self.archive: Any = self.result_archive  # one MAP-Elites archive, as in CMA-ME
        elif config.algorithm == "cma_mae":
            self.archive = self._make_archive(config, alpha, config.threshold_min, search_seed)
        else:
            self.archive = DiscountArchive(measure_bounds=domain.measure_bounds,
                                           result_archive=self.result_archive, learning_rate=alpha,
                                           threshold_min=config.threshold_min, config=config.discount,
                                           rule=rule, seed=search_seed)
        restart_from = self.result_archive if config.algorithm == "dms" else self.archive
        self.emitters = [
            EvolutionStrategyEmitter(x0=domain.initial_solution(), sigma0=config.sigma0,
                                     batch_size=config.batch_size, ranker=ranker or config.ranker,
                                     selection_rule=config.selection_rule, restart_rule=config.restart_rule,
                                     restart_archive=restart_from, seed=s,
                                     cma_update=config.cma_update)
            for s in emitter_seed.spawn(config.num_emitters)
        ]
        self.iterations = 0
        self.evaluations = 0
        self.discount_losses: list[float] = []
        if config.algorithm == "dms":
            with single_thread_blas():
                self.discount_losses = self.archive.init_model()

    def _make_archive(self, config: QDConfig, alpha: float, tmin: float, seed) -> Archive:
        dim = self.domain.solution_dim
        if config.grid_dims is not None:
            low, high = self.domain.measure_bounds
            return GridArchive(solution_dim=dim, dims=config.grid_dims, ranges=np.stack([low, high], 1),
                               learning_rate=alpha, threshold_min=tmin, seed=seed)
        return CVTArchive(solution_dim=dim, centroids=config.centroids, learning_rate=alpha,
                          threshold_min=tmin, seed=seed)

    @property
    def restarts(self) -> int:
        return sum(e.restarts for e in self.emitters)

    def step(self, progress: float = 0.0) -> None:
        """One iteration: ask, evaluate, add, tell (and train DMS's model)."""
        with single_thread_blas():
            self._step(progress)

    def _step(self, progress: float) -> None:
        batches = [e.ask() for e in self.emitters]
        solutions = np.concatenate(batches)
        objective, measures = self.domain.evaluate(solutions)
        if self.config.algorithm == "dms":
            self.archive.progress = progress
        info = self.archive.add(solutions, objective, measures)
        if self.archive is not self.result_archive:
            self.result_archive.add(solutions, objective, measures)
        start = 0
        for emitter, batch in zip(self.emitters, batches):
            end = start + len(batch)
            emitter.tell(info["status"][start:end], info["value"][start:end])
            start = end
        if self.config.algorithm == "dms":
            self.discount_losses = self.archive.train()
        self.iterations += 1
        self.evaluations += len(solutions)

    def run(self, iterations: int, log_every: int = 0) -> list[dict[str, float]]:
        """Run ``iterations`` more iterations; return the metrics every ``log_every`` iterations
        (and after the last)."""
        history = []
        t0 = time.process_time()
        for i in range(iterations):
            self.step(progress=i / iterations)
            if (log_every and self.iterations % log_every == 0) or i == iterations - 1:
                history.append(self.metrics(cpu_s=time.process_time() - t0))
        return history

    def metrics(self, **extra: float) -> dict[str, float]:
        m = {"iteration": float(self.iterations), "evaluations": float(self.evaluations),
             **self.result_archive.stats(), "restarts": float(self.restarts)}
        if self.config.algorithm == "dms" and self.discount_losses:
            m["discount_loss"] = float(self.discount_losses[-1])
            m["discount_epochs"] = float(len(self.discount_losses))
        m.update(extra)
        return m


def with_overrides(config: QDConfig, **kw) -> QDConfig:
    """A copy of ``config`` with fields replaced."""
    return replace(config, **kw)
