"""Foresight: the controller that reads the population once per generation and chooses a
search regime (explore / exploit / balance) and one design directive.

It runs in the graph's own process, from numbers held in the graph state and the run
store: never inside a worker, so no statistic is lost (the reference HiFo-Prompt code
updates its navigator inside joblib workers and loses those updates).

Decision rule (every threshold is a field of :class:`ForesightConfig`; the defaults are
HiFo-Prompt's reference values as issue 12 read them from the official code: stagnation after
3 generations, improvement tolerance 1e-4, exploit after two improvements in a row):

1. generation 0 (no history yet): ``balance``;
2. ``stagnation >= stagnation_explore`` (generations since the best fitness last improved by
   more than ``improve_tol``), or code diversity below ``min_code_diversity``, or behaviour
   diversity below ``min_behaviour_diversity``: ``explore``;
3. the best improved in each of the last ``exploit_streak`` generations and diversity is above
   the floors: ``exploit``;
4. otherwise: ``balance``.

The directive is drawn from the pool of the most specific reason (stagnation, collapse of code
diversity, collapse of behaviour diversity, many failed offspring, recent improvement), by
generation (deterministic, so a replay renders the same prompts), so every decision is explained
by the numbers that caused it.  Besides the directive, every operator prompt carries the regime's
instruction for that operator (`regime_instruction`), so the regime reaches the model in words and
not only through the operator weights.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from typing import Sequence

from hifo.agents.code import code_distance

OPERATORS = ("e1", "e2", "m1", "m2", "m3", "hyper")

REGIME_WEIGHTS: dict[str, dict[str, float]] = {
    "explore": {"e1": 0.35, "e2": 0.30, "m1": 0.20, "m2": 0.05, "m3": 0.10, "hyper": 0.0},
    "balance": {"e1": 0.15, "e2": 0.25, "m1": 0.30, "m2": 0.15, "m3": 0.15, "hyper": 0.5},
    "exploit": {"e1": 0.05, "e2": 0.10, "m1": 0.35, "m2": 0.35, "m3": 0.15, "hyper": 1.0},
}
# "hyper" is not sampled with the LLM operators: its weight scales how many constant-tuning
# variants the hyperparameter operator proposes in that regime (x RunConfig.hyper_lambda).

DIRECTIVE_POOL: dict[str, tuple[str, ...]] = {
    "stagnation": (
        "The search has stalled: design a heuristic built on a different principle than the current ones.",
        "Progress has stopped: drop the current scoring idea and try a different quantity to rank by.",
        "No gain for several generations: combine two inputs the current heuristics ignore.",
    ),
    "code_collapse": (
        "The population's code has become nearly identical: introduce a new term or a new way to combine the inputs.",
        "All heuristics look alike: restructure the computation instead of changing a constant.",
    ),
    "behaviour_collapse": (
        "All heuristics behave alike on the instances: change what the score rewards, not only its constants.",
        "Every heuristic makes the same choices: make the score depend on a quantity they all ignore.",
    ),
    "failures": (
        "Many recent candidates failed: keep the code short, vectorised, and guarded against division by zero and NaN.",
        "Many recent candidates failed: use only the given arguments and numpy, and return the documented type.",
    ),
    "improving": (
        "The last changes helped: refine the best heuristic further, keeping its core idea.",
        "The search is improving: tune the strongest term of the best heuristic and keep the rest.",
    ),
    "balance": (
        "Combine the strongest idea of the best heuristic with a complementary idea from another elite.",
        "Keep what the best heuristic does well and change one weak part of it.",
    ),
    "start": (
        "Start from the baseline's idea and improve on it with one clear, well-motivated change.",
    ),
}
DIRECTIVES = {k: v[0] for k, v in DIRECTIVE_POOL.items()}

REGIME_INSTRUCTIONS: dict[str, dict[str, str]] = {
    "explore": {
        "i1": "Explore: propose an idea unlike the usual one for this task.",
        "e1": "Explore: make the new heuristic as different from both parents as you can.",
        "e2": "Explore: keep only the shared backbone of the parents and add a new idea to it.",
        "m1": "Explore: change the structure of the heuristic, not only its numbers.",
        "m2": "Explore: change the constants boldly, by a factor, not a few percent.",
        "m3": "Explore: remove the terms that do not help and replace one with a new idea.",
    },
    "balance": {
        "i1": "Balance: start from a sound, simple idea and add one improvement.",
        "e1": "Balance: take a different idea than the parents, but keep what clearly works.",
        "e2": "Balance: combine the parents' common backbone with one new element.",
        "m1": "Balance: make one structural change and keep the rest.",
        "m2": "Balance: adjust the constants moderately.",
        "m3": "Balance: simplify where it does not cost quality.",
    },
    "exploit": {
        "i1": "Exploit: write the most reliable version of the best known idea.",
        "e1": "Exploit: stay close to the better parent; change only what the other parent does better.",
        "e2": "Exploit: keep the parents' shared backbone and refine it.",
        "m1": "Exploit: make a small, careful change to the best heuristic.",
        "m2": "Exploit: fine-tune the constants by small steps.",
        "m3": "Exploit: simplify the best heuristic without changing its behaviour much.",
    },
}


def regime_instruction(regime: str | None, operator: str) -> str:
    """The regime's sentence for one operator ('' for an unknown regime or operator)."""
    return REGIME_INSTRUCTIONS.get(regime or "", {}).get(operator, "")


@dataclass(frozen=True)
class ForesightConfig:
    stagnation_explore: int = 3
    improve_tol: float = 1e-4
    exploit_streak: int = 2
    min_code_diversity: float = 0.15
    min_behaviour_diversity: float = 1e-3
    max_failure_rate: float = 0.6


@dataclass
class ForesightDecision:
    generation: int
    regime: str
    directive: str
    reason: str
    weights: dict[str, float]
    numbers: dict[str, float | int | None] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def improvement_streak(best_history: Sequence[float], tol: float = 1e-4) -> int:
    """How many of the last generations in a row improved the best-so-far by more than ``tol``."""
    count = 0
    for prev, cur in zip(reversed(best_history[:-1]), reversed(best_history[1:])):
        if cur > prev + tol * max(1.0, abs(prev)):
            count += 1
        else:
            break
    return count


def stagnation(best_history: Sequence[float], tol: float = 1e-4) -> int:
    """Generations since the best-so-far fitness last rose by more than ``tol`` (relative
    to its magnitude, with ``tol`` also as an absolute floor)."""
    if not best_history:
        return 0
    count = 0
    best = best_history[0]
    for value in best_history[1:]:
        if value > best + tol * max(1.0, abs(best)):
            best, count = value, 0
        else:
            count += 1
    return count


def code_diversity(codes: Sequence[str]) -> float:
    """Mean pairwise AST 3-gram Jaccard distance, in [0, 1]; 0 for fewer than two codes."""
    pairs = list(itertools.combinations(codes, 2))
    if not pairs:
        return 0.0
    return sum(code_distance(a, b) for a, b in pairs) / len(pairs)


def behaviour_diversity(vectors: Sequence[Sequence[float]]) -> float:
    """Mean pairwise distance between per-instance score vectors, relative to their mean
    magnitude: ``mean_pairs(mean_i |a_i - b_i|) / mean(|x|)``. Scale-free, 0 when every
    candidate scores every instance identically."""
    vecs = [list(v) for v in vectors if v and all(math.isfinite(x) for x in v)]
    vecs = [v for v in vecs if len(v) == len(vecs[0])] if vecs else []
    pairs = list(itertools.combinations(vecs, 2))
    if not pairs:
        return 0.0
    scale = sum(abs(x) for v in vecs for x in v) / (len(vecs) * len(vecs[0])) or 1.0
    dist = sum(sum(abs(x - y) for x, y in zip(a, b)) / len(a) for a, b in pairs) / len(pairs)
    return dist / scale


def decide(
    generation: int,
    best_history: Sequence[float],
    population_codes: Sequence[str],
    population_vectors: Sequence[Sequence[float]],
    offspring_failure_rate: float | None,
    cfg: ForesightConfig = ForesightConfig(),
) -> ForesightDecision:
    stag = stagnation(best_history, cfg.improve_tol)
    cdiv = code_diversity(population_codes)
    bdiv = behaviour_diversity(population_vectors)
    streak = improvement_streak(best_history, cfg.improve_tol)
    numbers = {
        "best_fitness": best_history[-1] if best_history else None,
        "stagnation": stag,
        "improvement_streak": streak,
        "code_diversity": round(cdiv, 4),
        "behaviour_diversity": round(bdiv, 6),
        "failure_rate": None if offspring_failure_rate is None else round(offspring_failure_rate, 3),
        "population": len(population_codes),
    }
    enough = len(population_codes) >= 2
    if len(best_history) <= 1:
        regime, key = "balance", "start"
    elif stag >= cfg.stagnation_explore:
        regime, key = "explore", "stagnation"
    elif enough and cdiv < cfg.min_code_diversity:
        regime, key = "explore", "code_collapse"
    elif enough and bdiv < cfg.min_behaviour_diversity:
        regime, key = "explore", "behaviour_collapse"
    elif streak >= cfg.exploit_streak:
        regime, key = "exploit", "improving"
    else:
        regime, key = "balance", "balance"
    if offspring_failure_rate is not None and offspring_failure_rate > cfg.max_failure_rate and key != "stagnation":
        key = "failures"  # the regime stands; the directive addresses the failures first
    reason = {
        "start": "no fitness history yet",
        "stagnation": f"best fitness unchanged for {stag} generation(s) (>= {cfg.stagnation_explore})",
        "code_collapse": f"code diversity {cdiv:.3f} < {cfg.min_code_diversity}",
        "behaviour_collapse": f"behaviour diversity {bdiv:.2e} < {cfg.min_behaviour_diversity}",
        "improving": f"best fitness improved in each of the last {streak} generations (>= {cfg.exploit_streak})",
        "balance": f"improvement streak {streak} < {cfg.exploit_streak}, stagnation below threshold, diversity healthy",
        "failures": f"{offspring_failure_rate:.0%} of the last offspring failed (> {cfg.max_failure_rate:.0%})"
        if offspring_failure_rate is not None else "",
    }[key]
    pool = DIRECTIVE_POOL[key]
    directive = pool[generation % len(pool)]
    return ForesightDecision(generation, regime, directive, reason, dict(REGIME_WEIGHTS[regime]), numbers)


def without_foresight(generation: int) -> ForesightDecision:
    """The decision of a run with foresight off: regime ``none`` (no regime sentence in the prompts),
    no directive, the balanced operator weights, every generation."""
    return ForesightDecision(generation, "none", "", "foresight off", dict(REGIME_WEIGHTS["balance"]), {})
