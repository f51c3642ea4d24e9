"""Discount Model Search as a fitness function: evolve DMS's discount update and ranking.

The heuristic slot is the heart of DMS (Tjanaka et al., ICLR 2026, Section 5): given the
objectives ``f`` of one iteration's solutions, the discount model's values ``D(m)`` at their
measures (scaled to ``[-1, 1]``) and the fraction of the budget spent, it returns

* the *ranking values* the CMA-ES emitters sort their solutions by (DMS: ``f - D(m)``), and
* the *targets* the discount model is trained towards at those measures (DMS: the CMA-MAE
  update, ``(1 - alpha) D + alpha f`` where ``f > D``, else ``D``; paper's Eq. 1).

A candidate can therefore change the update rule, anneal ``alpha`` over the run (a training
schedule), or rank differently; its constants are the hyperparameters. Everything else is the
paper's DMS (see :mod:`hifo.problems.qd`): CMA-ES emitters with ``mu`` selection and periodic
restarts, an MLP discount model trained for at most 5 epochs with early stopping, empty-cell
points held at ``threshold_min = 0``.

The metric is the QD score (sum of objectives over the occupied cells of a CVT result archive)
at a fixed evaluation budget, on LP domains with 100-D solutions and high-dimensional
measures: ``train`` is LP (sphere) with 10-D measures; ``test`` holds the other objectives
(Rastrigin, flat with 10-D measures) and sphere with 20-D measures, at a larger budget.

Trust: the sandboxed ``solve`` returns only the elite *solutions* of its result archive. The
trusted ``score`` re-evaluates them on the domain, rebuilds the archive from the instance's
centroids and computes QD score and coverage itself; it rejects malformed data and more
elites than cells. It cannot verify how many evaluations the child spent (a candidate that
tampered with the search loop could search longer): the sandbox's CPU limit bounds that.

Secret test set (issue 28): ``test``'s three search seeds are drawn per evaluator object from a secret
(:meth:`Evaluator.secret_seed`). The search is chaotic, so from the published seeds (100-102) a rule could recognise
its run by the first objective value it is shown and play the learning rate that happens to do best on that very run
(``tests/evaluators/attacks/qd_seed_alpha.py`` beats every baseline there). Measured on the pinned kernels: the
best of six learning rates picked per published run (0.1, 0.5, 0.3) gives a mean QD score of 900.2 against the
paper's 844.0 (+56); the same picks on redrawn seeds (1100-1102) give 894.4 against 864.4 (+30), where the best
picks differ (0.1, 0.03, 0.3): about half of the published gain is the runs' own luck, which a table could carry. A
draw costs 0.01 s (three keyed hashes; the CVT centroids depend only on the measure dimension and are built once per
process for either set, 25 s measured under load 6 on 2 cores, as before); there is no reference to compute at the
draw: the baselines are scored on the same draw. The published set stays
available as ``test_published`` (and as ``test`` with ``public_seeds = True``): the set of the stored figures.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.qd import (CVTArchive, DiscountModelConfig, LinearProjection, QDConfig, QDSearch, cvt_centroids,
                        single_thread_blas)


@dataclass(frozen=True)
class DMSInstance:
    """One run of DMS: the LP domain, the result archive's CVT, the budget and the seed."""

    name: str
    objective: str
    measure_dim: int
    cells: int
    iterations: int
    num_emitters: int
    seed: int
    solution_dim: int = 100
    batch_size: int = 36
    restart_rule: int = 100
    centroids: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def evaluations(self) -> int:
        return self.iterations * self.num_emitters * self.batch_size

    def domain(self) -> LinearProjection:
        return LinearProjection(self.objective, self.solution_dim, self.measure_dim)


# (name, objective, measure dim, CVT cells, iterations, emitters, seed)
_SETS: dict[str, tuple[tuple, ...]] = {
    "train": (("sphere_m10_s0", "sphere", 10, 2000, 80, 5, 0),
              ("sphere_m10_s1", "sphere", 10, 2000, 80, 5, 1)),
    "test": (("rastrigin_m10", "rastrigin", 10, 5000, 150, 15, 100),
             ("flat_m10", "flat", 10, 5000, 150, 15, 101),
             ("sphere_m20", "sphere", 20, 5000, 150, 15, 102)),
}


@lru_cache(maxsize=None)
def _centroids(measure_dim: int, cells: int) -> np.ndarray:
    low, high = LinearProjection("sphere", 100, measure_dim).measure_bounds
    # k-means on uniform samples, as pyribs's k_means_centroids (fewer samples: a fixed seed
    # makes the archive part of the instance, not of the candidate's luck).
    return cvt_centroids(cells, np.stack([low, high], 1), samples=5 * cells, iterations=10, seed=measure_dim)


_DOCSTRING = """Ranking values and discount-model targets for one iteration of Discount Model Search.

Args:
    objective: (n,) objective of each solution evaluated this iteration (about [0, 1], higher is better).
    discount: (n,) the discount model's current value D(m) at each solution's measures.
    measures: (n, k) the solutions' measures scaled to [-1, 1] (k = 10 or 20 here).
    progress: fraction of the evaluation budget already spent, in [0, 1).

Return:
    (ranking, targets): two finite arrays of shape (n,). Each CMA-ES emitter moves towards its
    solutions with the highest ranking values (and counts a solution as successful when
    objective > discount). The discount model is then trained so that D(measures) ~ targets
    (and D = 0 at the centres of still-empty archive cells). High targets where solutions were
    found push the search elsewhere; the goal is the largest QD score (sum of the best
    objective in every cell reached).
"""

_TEMPLATE = FunctionTemplate(
    name="discount_rule",
    signature="def discount_rule(objective: np.ndarray, discount: np.ndarray, measures: np.ndarray, "
              "progress: float) -> tuple[np.ndarray, np.ndarray]:",
    docstring=_DOCSTRING,
    baseline_body=("    alpha = 0.1\n"
                   "    ranking = objective - discount\n"
                   "    targets = np.where(objective > discount, (1.0 - alpha) * discount + alpha * objective, discount)\n"
                   "    return ranking, targets\n"),
)

_SMALL_ALPHA_BODY = _TEMPLATE.baseline_body.replace("alpha = 0.1", "alpha = 0.01")
_NO_DISCOUNT_BODY = ("    # CMA-ES on the objective alone; targets = D keeps D at threshold_min: no exploration pressure.\n"
                     "    return objective.copy(), discount.copy()\n")


def _source(body: str) -> str:
    return _TEMPLATE.source(body)


def _encode(arr: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(arr, dtype="<f4").tobytes()).decode("ascii")


class QDDiscountModelSearch(Evaluator):
    """QD score of DMS with a candidate discount rule, at a fixed budget (maximise)."""

    name = "qd_dms"
    description = (
        "Quality-diversity optimisation with Discount Model Search (DMS). CMA-ES emitters search "
        "100-dimensional solutions whose 10- or 20-dimensional measures should cover a CVT "
        "archive with high objective values. A neural discount model D(m) over measure space "
        "says how good a solution must be at measures m to count as progress; after each "
        "iteration it is trained towards targets you choose, and the emitters rank solutions by "
        "values you choose. Design the function that returns (ranking values, discount targets) "
        "so that the final archive has the highest QD score (sum over cells of the best "
        "objective) for a fixed number of evaluations."
    )
    direction = "maximize"
    primary_metric = "qd_score"
    template = _TEMPLATE
    instance_sets = ("train", "test", "test_published")
    limits = Limits(timeout_s=180.0, cpu_s=300, memory_mb=4096, max_solution_bytes=32 * 1024 * 1024)
    baselines = {
        "dms_paper": _TEMPLATE.baseline_source(),
        "dms_alpha_0.01": _source(_SMALL_ALPHA_BODY),
        "objective_only": _source(_NO_DISCOUNT_BODY),
    }
    # Measured in-process on the pinned kernels (hifo.sandbox._numeric; `measured_figures`, 6 decimals):
    # bit-identical on every x86-64 CPU with AVX2 (fitness_rtol 0). Unpinned, OpenBLAS's AVX-512 and
    # Haswell float32 kernels round differently and the chaotic search drifted by up to ~20 % (issue 26).
    reference_figures = {
        "dms_paper": {"train": {"qd_score": 162.090688, "coverage": 0.10325},
                     "test": {"qd_score": 843.965278, "coverage": 0.2208}},
        "dms_alpha_0.01": {"train": {"qd_score": 179.588553, "coverage": 0.10425},
                          "test": {"qd_score": 739.77722, "coverage": 0.169467}},
        "objective_only": {"train": {"qd_score": 20.848557, "coverage": 0.01075},
                          "test": {"qd_score": 34.803477, "coverage": 0.0076}},
    }
    # the "test" figures are those of the published seeds: also stored under "test_published"
    reference_figures = {k: {**v, "test_published": v["test"]} for k, v in reference_figures.items()}
    slot_process = True  # issue 28: the candidate in a process of its own, a fresh one per instance
    tags = ("quality diversity", "dms", "cma-mae", "continuous")
    # the test runs' search seeds are drawn per evaluator object from a secret: from the published seeds a rule can
    # recognise its run by its first batch and answer from a table of what did best on that very run
    secret_sets = ("test",)

    def load_instances(self, instance_set: str) -> list[DMSInstance]:
        secret = instance_set == "test" and self.seeds_secret("test")
        if instance_set == "test_published":
            instance_set = "test"
        if instance_set not in _SETS:
            raise QDDiscountModelSearch.unknown_instance_set(instance_set)
        specs = _SETS[instance_set]
        if secret:  # the same objectives, measures, archives and budgets; the search seeds secret
            specs = tuple((f"{n}_secret{i}", o, k, c, it, e, self.secret_seed(s, "test", i))
                          for i, (n, o, k, c, it, e, s) in enumerate(specs))
        return [DMSInstance(name=n, objective=o, measure_dim=k, cells=c, iterations=it, num_emitters=e,
                            seed=s, centroids=_centroids(k, c)) for n, o, k, c, it, e, s in specs]

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: DMSInstance) -> dict[str, Any]:
        """Run DMS with ``heuristic`` as its discount rule; return the result archive's elites."""

        def rule(objective, discount, measures, progress):
            out = heuristic(objective.copy(), discount.copy(), measures.copy(), float(progress))
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise ValueError("discount_rule must return a tuple (ranking, targets)")
            return out

        config = QDConfig(algorithm="dms", num_emitters=instance.num_emitters, batch_size=instance.batch_size,
                          sigma0=0.5, restart_rule=instance.restart_rule, threshold_min=0.0,
                          centroids=instance.centroids, discount=DiscountModelConfig())
        search = QDSearch(instance.domain(), config, seed=instance.seed, rule=rule)
        search.run(instance.iterations)
        elites = search.result_archive.elites()["solution"]
        return {"elites": _encode(elites), "shape": list(elites.shape), "evaluations": search.evaluations}

    def score(self, instance: DMSInstance, solution: Any) -> dict[str, float]:
        elites = self._decode(instance, solution)
        domain = instance.domain()
        assert instance.centroids is not None  # load_instances always sets them
        archive = CVTArchive(solution_dim=instance.solution_dim, centroids=instance.centroids)
        if len(elites):
            with single_thread_blas():
                objective, measures = domain.evaluate(elites)
                archive.add(elites, objective, measures)
        stats = archive.stats()
        return {"qd_score": stats["qd_score"], "coverage": stats["coverage"],
                "norm_qd_score": stats["norm_qd_score"], "num_elites": stats["num_elites"],
                "obj_max": stats["obj_max"] if len(archive) else 0.0}

    @staticmethod
    def _decode(instance: DMSInstance, solution: Any) -> np.ndarray:
        where = f"{instance.name}: "
        if not isinstance(solution, dict) or not isinstance(solution.get("elites"), str):
            raise InfeasibleSolution(where + "the solution must be a dict with an 'elites' string")
        shape = solution.get("shape")
        if (not isinstance(shape, list) or len(shape) != 2 or not all(isinstance(s, int) for s in shape)
                or shape[1] != instance.solution_dim or shape[0] < 0):
            raise InfeasibleSolution(where + f"'shape' must be [n, {instance.solution_dim}], got {shape!r}")
        if shape[0] > instance.cells:
            raise InfeasibleSolution(where + f"{shape[0]} elites but the archive has only {instance.cells} cells")
        try:
            raw = base64.b64decode(solution["elites"].encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError) as exc:
            raise InfeasibleSolution(where + f"'elites' is not base64 ({exc})") from None
        if len(raw) != 4 * shape[0] * shape[1]:
            raise InfeasibleSolution(where + f"'elites' holds {len(raw)} bytes, expected {4 * shape[0] * shape[1]}")
        elites = np.frombuffer(raw, dtype="<f4").reshape(shape).astype(np.float64)
        if not np.all(np.isfinite(elites)):
            raise InfeasibleSolution(where + "elites contain NaN or infinite values")
        return elites

    def aggregate(self, per_instance: list[dict[str, float]]) -> dict[str, float]:
        if not per_instance:
            raise ValueError("no per-instance metrics to aggregate")
        return {k: float(np.mean([m[k] for m in per_instance])) for k in per_instance[0]}
