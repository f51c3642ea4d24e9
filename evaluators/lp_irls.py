"""Evolving the weight update of a damped IRLS (ours) for ℓp regression ``min ||x||_p s.t. Ax = b``.

The algorithm is :func:`hifo.problems.lp_regression.damped_irls`: every iteration is one
weighted least-squares solve ``x = argmin sum r_i x_i^2 s.t. Ax = b``; the candidate
``update(r, x, p, iteration)`` proposes the next positive weights from the current weights and
solution and two scalars of the solve, the energy ``E = sum r_i x_i^2 = b^T y`` and the dual
certificate ``b^T y / ||A^T y||_q`` (``A^T y = r * x``, so both follow from ``r`` and ``x``; ``y`` itself
is not shown: across iterations it would reveal ``A``). It never sees ``A`` or ``b`` and cannot
solve anything; the algorithm projects them
onto the dual ball (``||r||_{p/(p-2)} <= 1``, or ``||1/r||_{p/(2-p)} <= 1`` for ``p < 2``) and pads
them, so the dual invariant holds whatever the rule returns.

The child returns the raw weights the rule proposed. The parent **replays** them with its own
normalisation and solves, and measures per instance ``solves`` — the number of linear-system
solves until ``||x||_p <= (1 + 1e-6) OPT`` (``OPT`` stored as data, from scipy), or
``2 x MAX_SOLVES`` when the budget of ``MAX_SOLVES`` runs out — and ``final_gap``
(``||x_last||_p / OPT - 1``). The primary metric is the mean of ``solves`` (minimised).
Residual trust gap (as in :mod:`hifo.evaluators.optimizer_update`): code that tampers with the
sandboxed frame could compute weights from data the slot is not given; the parent still counts
only the solves it replays itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from hifo.evaluators._data import load_refs
from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.lp_regression import lp_norm, normalise, damped_irls, random_instance, reference_optimum, \
    weighted_solve

EPS, MAX_SOLVES, DELTA = 1e-6, 40, 1e-6
REFS = Path(__file__).parent / "data" / "lp_regression" / "opt.json"
MAKE_REFS = "python -m hifo.evaluators.lp_irls"
# set -> instances (d, n, p, seed): every instance its own A and b (a shared A let a rule that recovered A's
# row space on one instance, from r * x = A^T y, solve the next one itself)
_SPECS = {
    "train": tuple((30, 120, p, 100 + i) for i, p in enumerate((1.5, 3.0, 4.0, 8.0))),
    "test": tuple((50, 200, p, 200 + 4 * j + i) for j in range(2) for i, p in enumerate((1.5, 3.0, 4.0, 8.0))),
}

_DOCSTRING = """Proposes the next IRLS weights for l_p regression min ||x||_p subject to Ax = b.

Each iteration solves the weighted least-squares problem x = argmin sum_i r_i x_i^2 s.t. Ax = b
(one linear-system solve). The optimum is reached when r is proportional to |x|^(p-2)
(for p > 2 the weights grow with |x|; for p < 2 they shrink). Your weights are rescaled onto a
norm ball (||r||_{p/(p-2)} <= 1 for p > 2, ||1/r||_{p/(2-p)} <= 1 for p < 2) and lightly padded,
so only their direction matters.

Args:
    r: (n,) the positive weights used in this iteration's solve.
    x: (n,) this iteration's solution (the residual of the problem min ||x||_p, Ax = b).
    p: the norm, p > 1 and p != 2.
    iteration: 0, 1, 2, ...
    energy: sum_i r_i x_i^2 = b^T y, y the dual solution of the solve (r * x = A^T y).
    lower: the dual certificate b^T y / ||A^T y||_q <= OPT (q = p / (p - 1)); ||x||_p / lower - 1
        bounds the current gap.

Return:
    (n,) finite, strictly positive weights for the next solve.
"""

_TEMPLATE = FunctionTemplate(
    name="update",
    signature=("def update(r: np.ndarray, x: np.ndarray, p: float, iteration: int, energy: float, "
               "lower: float) -> np.ndarray:"),
    docstring=_DOCSTRING,
    baseline_body=("    # Damped multiplicative update towards |x|^(p-2), step 1/(p-1).\n"
                   "    eta = min(1.0, 1.0 / (p - 1))\n"
                   "    target = np.maximum(np.abs(x), 1e-12 * np.abs(x).max()) ** (p - 2)\n"
                   "    return r ** (1 - eta) * target ** eta\n"),
)

_CLASSIC_BODY = ("    # Classic IRLS: jump straight to |x|^(p-2).\n"
                 "    return np.maximum(np.abs(x), 1e-12 * np.abs(x).max()) ** (p - 2)\n")
_HALF_BODY = ("    # Fixed damping 1/2.\n"
              "    target = np.maximum(np.abs(x), 1e-12 * np.abs(x).max()) ** (p - 2)\n"
              "    return np.sqrt(r * target)\n")


def _source(body: str) -> str:
    return _TEMPLATE.source(body)


class _TargetMet(Exception):
    """Raised by the algorithm (never by the slot) when the target is reached."""


@dataclass(frozen=True)
class LpInstance:
    name: str
    A: np.ndarray
    b: np.ndarray
    p: float
    opt: float


def _key(d: int, n: int, p: float, seed: int) -> str:
    return f"d{d}_n{n}_p{p:g}_seed{seed}"


def _optimum(A: np.ndarray, b: np.ndarray, p: float) -> float:
    """OPT from scipy, improved by 200 damped IRLS solves when those do better (about 0.2 s at 50 x 200)."""
    return min(reference_optimum(A, b, p)[0], min(damped_irls(A, b, p, iterations=200).value))


def make_refs() -> dict[str, float]:
    """OPT of every instance of the published seeds."""
    out = {}
    for specs in _SPECS.values():
        for d, n, p, seed in specs:
            A, b = random_instance(d, n, seed)
            out[_key(d, n, p, seed)] = _optimum(A, b, p)
    return out


@lru_cache(maxsize=None)
def _load(instance_set: str) -> tuple[LpInstance, ...]:
    if instance_set not in _SPECS:
        raise LpIRLS.unknown_instance_set(instance_set, _SPECS)
    refs = load_refs(REFS, MAKE_REFS)
    out = []
    for d, n, p, seed in _SPECS[instance_set]:
        A, b = random_instance(d, n, seed)
        out.append(LpInstance(_key(d, n, p, seed), A, b, p, float(refs[_key(d, n, p, seed)])))
    return tuple(out)


class LpIRLS(Evaluator):
    """Linear-system solves to a (1 + 1e-6)-optimal ℓp regression solution.

    Instance sets: ``train`` (A 30 x 120, p in {1.5, 3, 4, 8}, seeds 100-103) and ``test``
    (A 50 x 200, the same p twice): every instance its own A. The test seeds are drawn per evaluator object
    from a secret (:meth:`Evaluator.secret_seed`; ``public_seeds = True`` gives the published seeds 200-207,
    on which the reference figures were measured), so a rule that rebuilds the published instances and solves
    them itself (``tests/evaluators/attacks/lp_irls_seed_replay.py``) meets none of them. The slot runs in a fresh
    process per instance and is not called once the target is met. Per instance ``solves``,
    ``final_gap`` (at the last solve: the one that met the target, or the budget's last).
    """

    name = "lp_irls"
    description = (
        "Damped iteratively reweighted least squares (ours, not a published algorithm) for l_p regression "
        "(minimise ||x||_p subject to Ax = b, "
        "p in {1.5, 3, 4, 8}). Each iteration solves one weighted least-squares problem with weights r; "
        "design the rule that turns the current weights r, solution x, energy and dual lower bound into the next weights so "
        "that ||x||_p reaches (1 + 1e-6) times the optimum in as few linear-system solves as possible "
        f"(budget {MAX_SOLVES}). Classic IRLS (r = |x|^(p-2)) oscillates for large p; the weights are "
        "rescaled onto a norm ball, so only their direction matters."
    )
    direction = "minimize"
    primary_metric = "solves"
    template = _TEMPLATE
    instance_sets = ("train", "test")
    limits = Limits(timeout_s=60.0, cpu_s=90, memory_mb=2048)
    baselines = {"damped": _source(_TEMPLATE.baseline_body), "classic_irls": _source(_CLASSIC_BODY),
                 "half_damped": _source(_HALF_BODY)}
    # Measured by tests/evaluators/test_lp_irls.py (train and test; re-measured when every instance got its own A).
    reference_figures = {
        "damped": {"train": {"solves": 8.75, "reached": 1.0}, "test": {"solves": 9.125, "reached": 1.0}},
        "classic_irls": {"train": {"solves": 62.25, "reached": 0.25}, "test": {"solves": 62.25, "reached": 0.25}},
        "half_damped": {"train": {"solves": 28.0, "reached": 0.75}, "test": {"solves": 28.375, "reached": 0.75}},
    }
    slot_process = True  # at most 40 calls per instance: a process of its own, a fresh one per instance
    tags = ("regression", "lp norm", "irls", "convex optimisation", "linear algebra")

    secret_sets = ("test",)

    def load_instances(self, instance_set: str) -> list[LpInstance]:
        if not self.seeds_secret(instance_set):
            return list(_load(instance_set))

        def draw() -> Iterator[LpInstance]:
            for i, (d, n, p, public) in enumerate(_SPECS[instance_set]):
                A, b = random_instance(d, n, self.secret_seed(public, instance_set, i))
                yield LpInstance(f"d{d}_n{n}_p{p:g}_secret{i}", A, b, p, float(_optimum(A, b, p)))

        return self.drawn_once(instance_set, draw)

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: LpInstance) -> dict[str, Any]:
        proposed: list[list[float]] = []

        def rule(r: np.ndarray, x: np.ndarray, p: float, it: int) -> np.ndarray:
            if lp_norm(x, p) <= (1 + EPS) * instance.opt:
                raise _TargetMet  # solved: the slot is not called again (each call shows it a vector of A's row space)
            energy = float(np.sum(r * x * x))
            lower = energy / max(lp_norm(r * x, p / (p - 1)), 1e-300)
            out = np.asarray(heuristic(r, x, p, it, energy, lower), dtype=float)
            if out.shape != r.shape:
                raise ValueError(f"update returned shape {out.shape}, expected {r.shape}")
            proposed.append(out.tolist())
            return out

        try:
            damped_irls(instance.A, instance.b, instance.p, rule=rule, iterations=MAX_SOLVES, delta=DELTA)
        except _TargetMet:
            pass
        return {"weights": proposed[: MAX_SOLVES - 1]}

    def score(self, instance: LpInstance, solution: Any) -> dict[str, float]:
        weights = solution.get("weights") if isinstance(solution, dict) else None
        if not isinstance(weights, list) or len(weights) > MAX_SOLVES - 1:
            raise InfeasibleSolution(f"{instance.name}: the solution must hold at most {MAX_SOLVES - 1} weight vectors")
        n = instance.A.shape[1]
        r = normalise(np.ones(n), instance.p, DELTA)
        solves, reached, value = 0, None, float("inf")
        for step in range(len(weights) + 1):
            x, _ = weighted_solve(instance.A, instance.b, r)
            solves += 1
            value = lp_norm(x, instance.p)
            if reached is None and value <= (1 + EPS) * instance.opt:
                reached = solves
            if step < len(weights):
                try:
                    raw = np.asarray(weights[step], dtype=float)
                    if raw.shape != (n,):
                        raise ValueError(f"weight vector {step} has shape {raw.shape}, expected ({n},)")
                    r = normalise(raw, instance.p, DELTA)
                except (ValueError, TypeError) as exc:
                    raise InfeasibleSolution(f"{instance.name}: {exc}") from None
        return {"solves": float(reached if reached is not None else 2 * MAX_SOLVES),
                "final_gap": float(value / instance.opt - 1.0), "reached": float(reached is not None)}


if __name__ == "__main__":
    REFS.parent.mkdir(parents=True, exist_ok=True)
    REFS.write_text(json.dumps(make_refs(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFS}")
