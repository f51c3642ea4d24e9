"""Evolving the pessimism bonus of KL-PCB, the offline reverse-KL-regularised contextual bandit learner
(Zhao, Ji, Zhao, Zhang & Gu, ICLR 2026, arXiv:2502.06051; :mod:`hifo.problems.fdiv_bandits`).

The learner sees ``n`` logged ``(context, action, Bernoulli reward)`` triples from a behaviour policy with
single-policy concentrability ``C* ~ kappa``, and returns ``pi ∝ pi_ref exp(eta (clip(r^ - b, 0, 1)))``.
The candidate ``bonus(counts, n, eta)`` sets ``b`` from the visit counts alone: it never sees the rewards,
the reference policy or the true model, and cannot solve anything. The child returns the bonus tables;
the parent rebuilds the counts and means from the instance's data itself, forms the policy with the
returned bonus and measures ``subopt = J(pi*) - J(pi)`` on the true regularised objective (``pi*`` in
closed form, so no stored optimum is needed).

Each instance is one bandit with ``REPLICAS`` independent logged datasets. The paper's guarantee is a
high-probability bound (with probability ``1 - delta``, ``subopt <= O~(eta C* / n)``), so the primary metric
is ``n_subopt_q90``: the 90th percentile over the datasets of ``n * subopt`` (delta = 0.1, the delta of the
paper-style Hoeffding bonus), averaged over instances, minimised; ``n_subopt`` (the mean) and
``n_subopt_max`` are reported beside it. Half the instances are *covered* (every action seen often: there
pessimism can only cost) and half *starved* (the same ``C*``, but the actions off the optimum's mode are seen
only as often as ``C*`` forces: the paper's regime, where the plug-in learner's tail blows up and pessimism
is needed). A good bonus has to be right in both.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from pathlib import Path

import numpy as np

from hifo.evaluators._seed_noise import load_figures, write_refs
from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.fdiv_bandits import COVERAGES, kl_pcb, make_bandit, sample, statistics, suboptimality

# eta = 10: strong enough that exp(eta r^) turns a rare pair's noisy over-estimate into a costly policy (at eta = 4
# the plug-in learner's tail is mild even on starved data; benchmarks/fdiv_bandits.py shows both)
N_CONTEXTS, N_ACTIONS, ETA, REPLICAS = 4, 5, 10.0, 10
REFS = Path(__file__).parent / "data" / "fdiv_bandits" / "reference_figures.json"
# set -> instances (coverage, kappa, n, bandit seed)
_SPECS = {
    "train": tuple((c, k, n, s) for c in COVERAGES for k in (4.0, 16.0) for n in (500, 2000, 8000) for s in (0, 1)),
    "test": tuple((c, k, n, s) for c in COVERAGES for k in (4.0, 16.0) for n in (1000, 4000, 16000)
                  for s in (100, 101, 102)),
}

_DOCSTRING = """Pessimism bonus of an offline KL-regularised contextual bandit learner.

From n logged (context, action, reward in {0, 1}) samples the learner estimates each pair's mean reward
r^(x, a) and plays pi(a|x) ∝ pi_ref(a|x) exp(eta * clip(r^(x, a) - bonus(x, a), 0, 1)); pairs never seen
get reward 0. It is judged by J(pi) = E_x[<pi, r> - KL(pi || pi_ref) / eta] against the best policy, through
the 90th percentile over logged datasets of n * (J(pi*) - J(pi)) (a high-probability guarantee, not an average).
Some datasets cover every action well (there a bonus only costs); in others the actions the best policy
rarely plays are seen rarely, and their noisy estimates, amplified by exp(eta r^), ruin an unpessimistic
learner. A larger bonus makes the learner more cautious about rarely seen pairs; a bonus that does not
shrink with the counts keeps the learner biased forever. The paper-style bonus is
sqrt(log(2 S A / delta) / (2 N)) with delta = 0.1.

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
    """What the child gets: the logged datasets (``x``, ``a``, ``y`` of shape ``(REPLICAS, n)``) and the
    sizes. The true model is rebuilt by the parent from ``(coverage, kappa, bandit_seed)`` in
    :meth:`FdivPessimism.score`; the slot sees only the counts of one dataset at a time."""
    name: str
    coverage: str
    kappa: float
    n: int
    bandit_seed: int
    x: np.ndarray
    a: np.ndarray
    y: np.ndarray


@lru_cache(maxsize=None)
def _bandit(coverage: str, kappa: float, seed: int):
    return make_bandit(N_CONTEXTS, N_ACTIONS, ETA, kappa, seed, "kl", coverage)


@lru_cache(maxsize=128)
def _instance(name: str, coverage: str, kappa: float, n: int, bandit_seed: int,
              sample_seeds: tuple[int, ...]) -> BanditInstance:
    data = [sample(_bandit(coverage, kappa, bandit_seed), n, s) for s in sample_seeds]
    x, a, y = (np.stack([d[k] for d in data]) for k in range(3))
    return BanditInstance(name, coverage, kappa, n, bandit_seed, x, a, y)


class FdivPessimism(Evaluator):
    """90th percentile over logged datasets of n x suboptimality of KL-PCB on the reverse-KL objective.

    Instance sets: ``train`` (4 contexts x 5 actions, eta = 10, covered and starved coverage, concentrability
    4 and 16, n in {500, 2000, 8000}, 2 bandits per cell, 10 datasets each; public seeds) and ``test`` (same
    sizes, n in {1000, 4000, 16000}, 3 other bandits per cell; drawn from the object's secret key, the
    published seeds with ``public_seeds = True``). Figures and seed-to-seed noise:
    ``python -m hifo.evaluators.fdiv_pessimism`` (writes ``data/fdiv_bandits/reference_figures.json``).
    """

    name = "fdiv_pessimism"
    description = (
        "Offline KL-regularised contextual bandit (KL-PCB): from logged samples the learner plays "
        "pi ∝ pi_ref exp(eta (r^ - bonus)). Design the pessimism bonus as a function of the visit counts "
        "so that the 90th percentile over datasets of the regularised objective's suboptimality, scaled by "
        "the sample size n, is as small as possible across sample sizes and data coverages (some datasets "
        "cover every action well, others see the actions the best policy rarely plays only rarely)."
    )
    direction = "minimize"
    primary_metric = "n_subopt_q90"
    template = _TEMPLATE
    instance_sets = ("train", "test")
    limits = Limits(timeout_s=30.0, cpu_s=45, memory_mb=1024)
    baselines = {"hoeffding": _source(_TEMPLATE.baseline_body), "plugin": _source(_PLUGIN_BODY),
                 "inverse_count": _source(_INVERSE_BODY)}
    # published-seed figures (6 decimals, bit-identical on every CPU: fitness_rtol 0) and seed-to-seed noise,
    # measured by `python -m hifo.evaluators.fdiv_pessimism`; checked by tests/evaluators/test_fdiv_pessimism.py
    reference_figures = load_figures(REFS)
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
        for i, (coverage, kappa, n, seed) in enumerate(_SPECS[instance_set]):
            # the bandit (true model) and the logged datasets: published seeds, or (a secret set) drawn from this
            # object's key; secret_seed alone would draw the train set too, which is published
            def draw(public: int, *label: Any) -> int:
                return self.secret_seed(public, instance_set, i, *label) if secret else public

            bandit_seed = draw(seed, "bandit")
            sample_seeds = tuple(draw(10_000 + 97 * seed + n + 1_000_003 * j, "sample", j) for j in range(REPLICAS))
            name = f"{coverage}_kappa{kappa:g}_n{n}_" + (f"secret{i}" if secret else f"seed{seed}")
            out.append(_instance(name, coverage, kappa, n, bandit_seed, sample_seeds))
        return out

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: BanditInstance) -> dict[str, Any]:
        tables = []
        for x, a, y in zip(instance.x, instance.a, instance.y):  # one call per logged dataset
            counts, _ = statistics((N_CONTEXTS, N_ACTIONS), x, a, y)
            out = np.asarray(heuristic(counts.copy(), int(instance.n), float(ETA)), dtype=float)
            try:  # a scalar (one bonus for every pair) or a per-action row is broadcast to the table
                out = np.broadcast_to(out, counts.shape)
            except ValueError:
                raise ValueError(f"bonus returned shape {out.shape}, expected {counts.shape}") from None
            tables.append(out.tolist())
        return {"bonus": tables}

    def score(self, instance: BanditInstance, solution: Any) -> dict[str, float]:
        raw = solution.get("bonus") if isinstance(solution, dict) else None
        try:
            b = np.asarray(raw, dtype=float)
        except (TypeError, ValueError):
            raise InfeasibleSolution(f"{instance.name}: the bonus is not a numeric table") from None
        if b.shape != (len(instance.x), N_CONTEXTS, N_ACTIONS) or not np.all(np.isfinite(b)) or np.any(b < 0):
            raise InfeasibleSolution(f"{instance.name}: the bonus must be {len(instance.x)} finite, non-negative "
                                     f"{N_CONTEXTS} x {N_ACTIONS} tables (one per logged dataset)")
        bandit = _bandit(instance.coverage, instance.kappa, instance.bandit_seed)
        gaps = []
        for j in range(len(instance.x)):
            counts, means = statistics(bandit.r.shape, instance.x[j], instance.a[j], instance.y[j])
            gaps.append(max(0.0, suboptimality(bandit, kl_pcb(counts, means, bandit.pi_ref, ETA, b[j]))))
        scaled = instance.n * np.array(gaps)
        return {"n_subopt_q90": float(np.quantile(scaled, 0.9)), "n_subopt": float(scaled.mean()),
                "n_subopt_max": float(scaled.max()), "subopt": float(np.mean(gaps))}


if __name__ == "__main__":
    write_refs(FdivPessimism, REFS)
