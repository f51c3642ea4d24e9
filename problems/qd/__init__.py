"""Quality diversity: CMA-ME, CMA-MAE and Discount Model Search (DMS), with their benchmarks.

A plain library (it imports nothing else from this repository; numpy only):

* archives -- :class:`GridArchive`, :class:`CVTArchive` (brute-force nearest centroid) with
  CMA-MAE thresholds (``learning_rate``, ``threshold_min``); :func:`cvt_centroids`;
* :class:`CMAEvolutionStrategy` and :class:`EvolutionStrategyEmitter` (improvement ranking
  ``"imp"``, CMA-ME's two-stage ``"2imp"``, or any callable; ``mu``/``filter`` selection;
  basic / no-improvement / periodic restarts);
* DMS -- :class:`DiscountArchive`: an :class:`MLP` discount model ``D(m)`` over measures scaled
  to ``[-1, 1]``, improvement ``f - D(m)``, targets by the CMA-MAE update rule
  (:func:`cma_mae_rule`), empty-cell points at ``threshold_min``, early stopping on the fit error;
* :class:`QDSearch` -- the ask/tell loop for ``"cma_me"``, ``"cma_mae"`` and ``"dms"``;
  :func:`paper_config` gives the DMS paper's settings for a domain; :func:`single_thread_blas`
  (used by the loop; needs the optional ``threadpoolctl``) keeps BLAS on one thread;
* domains -- :class:`LinearProjection` (sphere / Rastrigin / flat, any measure dimension) and
  :class:`PlanarArm`; :class:`TrianglesDigits`, a small image-measure domain (optional
  scikit-learn, for its bundled digits).

Example::

    from hifo.problems.qd import LinearProjection, QDSearch, paper_config

    domain = LinearProjection("sphere", solution_dim=100, measure_dim=10)
    search = QDSearch(domain, paper_config("dms", domain), seed=0)
    history = search.run(200, log_every=50)
    print(history[-1]["qd_score"], history[-1]["coverage"])
"""

from ._archive import Archive, CVTArchive, GridArchive, cvt_centroids, nearest_centroid
from ._cmaes import CMAEvolutionStrategy
from ._discount import DiscountArchive, DiscountModelConfig, DiscountRule, cma_mae_rule
from ._domains import OBJECTIVES, LinearProjection, PlanarArm
from ._emitter import EvolutionStrategyEmitter, rank_improvement, rank_two_stage_improvement
from ._images import TrianglesDigits
from ._mlp import MLP, Adam, fit_mse
from ._search import ALGORITHMS, QDConfig, QDSearch, cached_centroids, paper_config, with_overrides
from ._threads import single_thread_blas

__all__ = [
    "ALGORITHMS",
    "OBJECTIVES",
    "Adam",
    "Archive",
    "CMAEvolutionStrategy",
    "CVTArchive",
    "DiscountArchive",
    "DiscountModelConfig",
    "DiscountRule",
    "EvolutionStrategyEmitter",
    "GridArchive",
    "LinearProjection",
    "MLP",
    "PlanarArm",
    "QDConfig",
    "QDSearch",
    "TrianglesDigits",
    "cached_centroids",
    "cma_mae_rule",
    "cvt_centroids",
    "fit_mse",
    "nearest_centroid",
    "paper_config",
    "rank_improvement",
    "rank_two_stage_improvement",
    "single_thread_blas",
    "with_overrides",
]
