"""CMA-ES emitters and their rankings (CMA-ME, Fontaine et al. 2020; CMA-MAE; DMS).

An :class:`EvolutionStrategyEmitter` owns one :class:`CMAEvolutionStrategy`. After its batch is
evaluated and offered to the archive, the archive's ``add`` result (``status``, ``value``)
decides the ranking; the ES moves towards the best-ranked solutions.

Rankings (``ranker``):

* ``"imp"`` -- by improvement value alone, descending. This is CMA-MAE's and DMS's ranking:
  the value is ``f - t_e`` (CMA-MAE) or ``f - D(m)`` (DMS).
* ``"2imp"`` -- CMA-ME's two-stage improvement ranking: solutions that found a new cell first,
  then those that improved a cell, then the rest, each group by value.
* any callable ``(status, value) -> sort keys`` (higher is better) for custom rankings.

Ties: ``"imp"`` keeps the batch order among equal values (a stable sort); pyribs 0.12's
``ImprovementRanker`` reverses ``argsort`` and so puts the *last* of equal values first. With
continuous objectives ties do not occur; this is the only difference between this emitter and
pyribs's ``EvolutionStrategyEmitter`` (same ``mu`` selection, the same restart rules, restart
elites drawn uniformly from the emitter's archive).

Parent selection: ``"mu"`` takes the best half (``lambda // 2``); ``"filter"`` takes the
solutions the archive accepted. Restarts (from a random elite of ``restart_archive``): ``"basic"``
only on CMA-ES's own stop conditions; ``"no_improvement"`` also when nothing was accepted;
an integer ``k`` also every ``k`` iterations (the paper's rule for its 10-D+ domains).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._cmaes import CMAEvolutionStrategy

Ranker = Callable[[np.ndarray, np.ndarray], np.ndarray]


def rank_improvement(status: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Indices best-first by value (stable on ties)."""
    return np.argsort(-np.asarray(value, dtype=np.float64), kind="stable")


def rank_two_stage_improvement(status: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Indices best-first by (status, value): new cell > improved cell > not added."""
    return np.lexsort((-np.asarray(value, dtype=np.float64), -np.asarray(status)))


_RANKERS: dict[str, Ranker] = {"imp": rank_improvement, "2imp": rank_two_stage_improvement}


class EvolutionStrategyEmitter:
    """A CMA-ES that proposes ``batch_size`` solutions per iteration.

    ``restart_archive`` supplies the restart points (the annealing archive in CMA-MAE, the
    result archive in DMS -- the discount model holds no solutions). ``cma_update``:
    ``"hansen"`` or ``"pyribs"`` (see :class:`CMAEvolutionStrategy`).
    """

    def __init__(self, *, x0: np.ndarray, sigma0: float, batch_size: int | None = None,
                 ranker: str | Ranker = "imp", selection_rule: str = "mu",
                 restart_rule: str | int = "basic", restart_archive=None,
                 seed: int | np.random.SeedSequence | None = None,
                 cma_update: str = "hansen") -> None:
        self.x0 = np.asarray(x0, dtype=np.float64)
        self.ranker: Ranker = _RANKERS[ranker] if isinstance(ranker, str) else ranker
        if selection_rule not in ("mu", "filter"):
            raise ValueError(f"unknown selection_rule {selection_rule!r}")
        if not (restart_rule in ("basic", "no_improvement") or
                (isinstance(restart_rule, (int, np.integer)) and restart_rule > 0)):
            raise ValueError(f"unknown restart_rule {restart_rule!r}")
        self.selection_rule = selection_rule
        self.restart_rule = restart_rule
        self.restart_archive = restart_archive
        self.opt = CMAEvolutionStrategy(len(self.x0), sigma0, batch_size, seed=seed,
                                        update=cma_update)
        self.opt.reset(self.x0)
        self.batch_size = self.opt.batch_size
        self.restarts = 0
        self.iterations = 0

    def ask(self) -> np.ndarray:
        return self.opt.ask()

    def tell(self, status: np.ndarray, value: np.ndarray) -> None:
        """Rank the last batch from the archive's answer, adapt the ES, restart if due."""
        status = np.asarray(status)
        value = np.asarray(value, dtype=np.float64)
        self.iterations += 1
        accepted = int(np.count_nonzero(status))
        order = np.asarray(self.ranker(status, value))
        if order.shape != (self.batch_size,) or not np.array_equal(np.sort(order), np.arange(self.batch_size)):
            raise ValueError("a ranker must return a permutation of the batch indices")
        parents = accepted if self.selection_rule == "filter" else self.batch_size // 2
        self.opt.tell(order, parents)
        if self.opt.check_stop(value[order]) or self._rule_restart(accepted):
            self._restart()

    def _rule_restart(self, accepted: int) -> bool:
        if self.restart_rule == "basic":
            return False
        if self.restart_rule == "no_improvement":
            return accepted == 0
        return self.iterations % int(self.restart_rule) == 0

    def _restart(self) -> None:
        archive = self.restart_archive
        x0 = archive.sample_elites(1)[0] if archive is not None and len(archive) else self.x0
        self.opt.reset(x0)
        self.restarts += 1
