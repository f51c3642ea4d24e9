"""Evolving the pessimism bonus of KL-PCB, the offline reverse-KL-regularised contextual bandit learner
(Zhao, Ji, Zhao, Zhang & Gu, ICLR 2026; :mod:`hifo.problems.fdiv_bandits`).

The learner sees ``n`` logged ``(context, action, Bernoulli reward)`` triples from a behaviour policy with
single-policy concentrability about ``kappa``, and returns ``pi ∝ pi_ref exp(eta (clip(r^ - b, 0, 1)))``.
The candidate ``bonus(counts, n, eta)`` sets ``b`` from the visit counts alone: it never sees the rewards,
the reference policy or the true model, and cannot solve anything. The child returns the bonus table;
the parent rebuilds the counts and means from the instance's data itself, forms the policy with the
returned bonus and measures ``subopt = J(pi*) - J(pi)`` on the true regularised objective (``pi*`` in
closed form, so no stored optimum is needed). The primary metric is ``n_subopt = n * subopt`` (the
constant of the 1/n rate the paper proves), averaged over instances, minimised.

Honest scope: with a behaviour policy that covers every action the plug-in learner (bonus 0) scores
better than the paper's Hoeffding bonus at these sample sizes; pessimism buys worst-case guarantees under
single-policy concentrability, not a better average here (see the README's bandit section).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.fdiv_bandits import kl_pcb, make_bandit, sample, statistics, suboptimality

N_CONTEXTS, N_ACTIONS, ETA = 4, 5, 4.0
# set -> instances (kappa, n, bandit seed)
_SPECS = {
    "train": tuple((k, n, s) for k in (4.0, 16.0) for n in (500, 2000, 8000) for s in (0, 1, 2)),
    "test": tuple((k, n, s) for k in (4.0, 16.0) for n in (1000, 4000, 16000) for s in (100, 101, 102, 103)),
}

_DOCSTRING = """Pessimism bonus of an offline KL-regularised contextual bandit learner.

From n logged (context, action, reward in {0, 1}) samples the learner estimates each pair's mean reward
r^(x, a) and plays pi(a|x) ∝ pi_ref(a|x) exp(eta * clip(r^(x, a) - bonus(x, a), 0, 1)); pairs never seen
get reward 0. It is judged by J(pi) = E_x[<pi, r> - KL(pi || pi_ref) / eta] against the best policy.
A larger bonus makes the learner more cautious about rarely seen pairs; a bonus that does not shrink
with the counts keeps the learner biased forever. The paper's bonus is sqrt(log(2 S A / delta) / (2 N)).

Args:
    counts: (S, A) float array, the number of samples N(x, a) of each context-action pair (may be 0).
    n: total number of samples (counts.sum()).
    eta: the inverse regularisation strength (larger eta = weaker KL penalty).

Return:
    (S, A) finite, non-negative bonuses.
"""

_TEMPLATE = FunctionTemplate(
    name="bonus",
    signature="def bonus(counts: np.ndarray, n: int, eta: float) -> np.ndarray:",
    docstring=_DOCSTRING,
    baseline_body=("    # Hoeffding bonus of KL-PCB, delta = 0.1.\n"
                   "    return np.sqrt(np.log(2 * counts.size / 0.1) / (2 * np.maximum(counts, 1.0)))\n"),
)

_PLUGIN_BODY = "    # No pessimism: the plug-in learner.\n    return np.zeros_like(counts)\n"
_INVERSE_BODY = "    # A bonus that shrinks like 1/N instead of 1/sqrt(N).\n    return 1.0 / np.maximum(counts, 1.0)\n"


def _source(body: str) -> str:
    return _TEMPLATE.source(body)


@dataclass(frozen=True)
class BanditInstance:
    """What the child gets: the logged data and the sizes. The true model is rebuilt by the parent
    from ``(kappa, bandit_seed)`` in :meth:`FdivPessimism.score`; the slot sees only the counts."""
    name: str
    kappa: float
    n: int
    bandit_seed: int
    x: np.ndarray
    a: np.ndarray
    y: np.ndarray


@lru_cache(maxsize=None)
def _bandit(kappa: float, seed: int):
    return make_bandit(N_CONTEXTS, N_ACTIONS, ETA, kappa, seed, "kl")


@lru_cache(maxsize=64)
def _instance(name: str, kappa: float, n: int, bandit_seed: int, sample_seed: int) -> BanditInstance:
    x, a, y = sample(_bandit(kappa, bandit_seed), n, sample_seed)
    return BanditInstance(name, kappa, n, bandit_seed, x, a, y)


class FdivPessimism(Evaluator):
    """n x suboptimality of KL-PCB on the reverse-KL-regularised objective.

    Instance sets: ``train`` (4 contexts x 5 actions, eta = 4, concentrability ~4 and ~16, n in
    {500, 2000, 8000}, 3 bandits; public seeds) and ``test`` (same sizes, n in {1000, 4000, 16000}, 4 other
    bandits per cell; drawn from the object's secret key, the published seeds with ``public_seeds = True``).
    """

    name = "fdiv_pessimism"
    description = (
        "Offline KL-regularised contextual bandit (KL-PCB): from logged samples the learner plays "
        "pi ∝ pi_ref exp(eta (r^ - bonus)). Design the pessimism bonus as a function of the visit counts "
        "so that the regularised objective's suboptimality, scaled by the sample size n, is as small as "
        "possible across sample sizes and data coverages."
    )
    direction = "minimize"
    primary_metric = "n_subopt"
    template = _TEMPLATE
    instance_sets = ("train", "test")
    limits = Limits(timeout_s=30.0, cpu_s=45, memory_mb=1024)
    baselines = {"hoeffding": _source(_TEMPLATE.baseline_body), "plugin": _source(_PLUGIN_BODY),
                 "inverse_count": _source(_INVERSE_BODY)}
    # Measured by tests/evaluators/test_fdiv_pessimism.py (train and test; rounded, checked to 1e-4 relative).
    reference_figures = {  # measured_figures (6 decimals); bit-identical on every CPU (fitness_rtol 0)
        "hoeffding": {"train": {"n_subopt": 36.720606, "subopt": 0.025991},
                      "test": {"n_subopt": 31.846271, "subopt": 0.011451}},
        "plugin": {"train": {"n_subopt": 8.535336, "subopt": 0.008541},
                   "test": {"n_subopt": 4.139058, "subopt": 0.001634}},
        "inverse_count": {"train": {"n_subopt": 10.447586, "subopt": 0.010243},
                          "test": {"n_subopt": 5.619555, "subopt": 0.002513}},
    }
    # the test bandits and samples are drawn per evaluator object from a secret (Evaluator.secret_seed): a table
    # of answers to the published test instances, fingerprinted by their counts, does not apply to them
    secret_sets = ("test",)
    slot_process = True  # called once per instance: the candidate runs in a process of its own (sandbox/_slotproc.py)
    tags = ("contextual bandits", "offline reinforcement learning", "kl regularisation", "pessimism", "statistics")

    def load_instances(self, instance_set: str) -> list[BanditInstance]:
        if instance_set not in _SPECS:
            raise self.unknown_instance_set(instance_set, _SPECS)
        secret = self.seeds_secret(instance_set)
        out = []
        for i, (kappa, n, seed) in enumerate(_SPECS[instance_set]):
            # the bandit (true model) and the logged sample: published seeds, or drawn from this object's key
            bandit_seed = self.secret_seed(seed, instance_set, i, "bandit")
            sample_seed = self.secret_seed(10_000 + 97 * seed + n, instance_set, i, "sample")
            name = f"kappa{kappa:g}_n{n}_" + (f"secret{i}" if secret else f"seed{seed}")
            out.append(_instance(name, kappa, n, bandit_seed, sample_seed))
        return out

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: BanditInstance) -> dict[str, Any]:
        counts, _ = statistics((N_CONTEXTS, N_ACTIONS), instance.x, instance.a, instance.y)
        out = np.asarray(heuristic(counts.copy(), int(instance.n), float(ETA)), dtype=float)
        try:  # a scalar (one bonus for every pair) or a per-action row is broadcast to the table
            out = np.broadcast_to(out, counts.shape)
        except ValueError:
            raise ValueError(f"bonus returned shape {out.shape}, expected {counts.shape}") from None
        return {"bonus": out.tolist()}

    def score(self, instance: BanditInstance, solution: Any) -> dict[str, float]:
        raw = solution.get("bonus") if isinstance(solution, dict) else None
        try:
            b = np.asarray(raw, dtype=float)
        except (TypeError, ValueError):
            raise InfeasibleSolution(f"{instance.name}: the bonus is not a numeric table") from None
        if b.shape != (N_CONTEXTS, N_ACTIONS) or not np.all(np.isfinite(b)) or np.any(b < 0):
            raise InfeasibleSolution(f"{instance.name}: the bonus must be a finite, non-negative "
                                     f"{N_CONTEXTS} x {N_ACTIONS} table")
        bandit = _bandit(instance.kappa, instance.bandit_seed)
        counts, means = statistics(bandit.r.shape, instance.x, instance.a, instance.y)
        gap = max(0.0, suboptimality(bandit, kl_pcb(counts, means, bandit.pi_ref, ETA, b)))
        return {"n_subopt": float(instance.n * gap), "subopt": float(gap)}
