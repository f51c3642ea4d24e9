"""Component swaps for the CMA-MAE comparison in :mod:`benchmarks.qd`: our loop with one part of
pyribs 0.12 put in, to locate a difference between the two implementations.

* ``ours_ribs_archive`` -- our :class:`QDSearch` (our emitters, our CMA-ES with pyribs's update,
  our result archive) whose CMA-MAE *search archive* is pyribs's ``CVTArchive``/``GridArchive``
  (``learning_rate``, ``threshold_min``): ``add`` answers (status, value) and restart elites
  come from pyribs's archive.
* ``ours_ribs_es`` -- our loop and archives, every emitter's optimizer replaced by pyribs's
  ``ribs.emitters.opt.CMAEvolutionStrategy`` (our emitter still ranks, selects and restarts).

CMA-MAE only (DMS's search archive is a discount model, not a threshold archive). The swaps
reach into :class:`QDSearch` after construction (``search.archive``, ``emitter.opt``); this is
benchmark instrumentation, not an API.
"""

from __future__ import annotations

import numpy as np

from hifo.problems.qd import LinearProjection, QDSearch, nearest_centroid, paper_config

SWAPS = ("ours_ribs_archive", "ours_ribs_es")


class _RibsArchive:
    """Our archive interface (``add`` -> status/value, ``sample_elites``, ``len``) over pyribs's."""

    def __init__(self, archive) -> None:
        self.archive = archive

    def add(self, solution, objective, measures):
        info = self.archive.add(solution, objective, measures)
        return {"status": np.asarray(info["status"]), "value": np.asarray(info["value"], dtype=np.float64)}

    def __len__(self) -> int:
        return len(self.archive)

    def sample_elites(self, n: int) -> np.ndarray:
        return np.asarray(self.archive.sample_elites(n)["solution"])


class _RibsES:
    """pyribs's CMA-ES behind our optimizer interface (``tell(ranking, num_parents)``)."""

    def __init__(self, n: int, sigma0: float, batch_size: int, seed: int) -> None:
        from ribs.emitters.opt import CMAEvolutionStrategy

        self.opt = CMAEvolutionStrategy(sigma0=sigma0, solution_dim=n, batch_size=batch_size, seed=seed,
                                        dtype=np.float64)
        self.batch_size = batch_size

    def reset(self, x0: np.ndarray) -> None:
        self.opt.reset(np.asarray(x0, dtype=np.float64))

    def ask(self) -> np.ndarray:
        return np.array(self.opt.ask())

    def tell(self, ranking: np.ndarray, num_parents: int) -> None:
        # pyribs's CMA-ES does not read the ranking values in tell()
        self.opt.tell(np.asarray(ranking), None, int(num_parents))

    def check_stop(self, ranking_values: np.ndarray) -> bool:
        return bool(self.opt.check_stop(np.asarray(ranking_values)))


def run_swap(impl: str, measure_dim: int, seed: int, iterations: int, log_every: int, centroids,
             objective: str = "sphere"):
    """One seeded CMA-MAE run of ``impl`` (one of :data:`SWAPS`) on LP(``objective``)."""
    domain = LinearProjection(objective, 100, measure_dim)
    cfg = paper_config("cma_mae", domain, cma_update="pyribs",
                       **({"centroids": centroids} if centroids is not None else {}))
    search = QDSearch(domain, cfg, seed=seed)
    ss = np.random.SeedSequence([seed, 7])
    if impl == "ours_ribs_archive":
        search.archive = _RibsArchive(_ribs_archive(domain, centroids, cfg.alpha, cfg.threshold_min,
                                                    int(ss.generate_state(1)[0])))
        for e in search.emitters:
            e.restart_archive = search.archive
    elif impl == "ours_ribs_es":
        for e, s in zip(search.emitters, ss.spawn(len(search.emitters))):
            e.opt = _RibsES(domain.solution_dim, cfg.sigma0, cfg.batch_size, int(s.generate_state(1)[0]))
            e.opt.reset(e.x0)
    else:
        raise ValueError(f"unknown swap {impl!r}")
    return search.run(iterations, log_every=log_every)


def _ribs_archive(domain, centroids, alpha: float, threshold_min: float, seed: int):
    from ribs.archives import CVTArchive, GridArchive

    low, high = domain.measure_bounds
    ranges = list(zip(low.tolist(), high.tolist()))
    kw = {"learning_rate": alpha, "threshold_min": threshold_min, "seed": seed}
    if centroids is None:
        return GridArchive(solution_dim=domain.solution_dim, dims=(100, 100), ranges=ranges, **kw)

    class MatmulCVTArchive(CVTArchive):  # the same exact nearest centroid, faster (see benchmarks.qd)
        def index_of(self, measures):
            return nearest_centroid(np.asarray(measures, dtype=np.float64), self.centroids).astype(np.int32)

    return MatmulCVTArchive(solution_dim=domain.solution_dim, centroids=centroids, ranges=ranges,
                            nearest_neighbors="brute_force", **kw)
