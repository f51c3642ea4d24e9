"""Credit assignment: how much an offspring's result says about the principles in its prompt.

Pure functions; the store (`KnowledgeBase.credit`) applies them.  Fitness is **higher-is-better**
throughout: an evaluator that minimises (tour length, bins used) must be negated by the caller first.
A failed candidate has fitness ``-inf`` (``None`` and NaN are read the same way).

The arithmetic, exactly:

* scale (`gain_scale`):  ``s = max(F) - min(F)`` over the finite fitnesses ``F`` of the current
  population; when that spread is 0, ``s = |max(F)|``; when that is 0 too (or nothing is finite), ``s = 1``.
  So a gain of 1 means "improved on the best parent by the whole population's spread".
* gain (`offspring_gain`):  ``g = clip((child - max(finite parents)) / s, -1, 1)``;
  a failed child gets ``g = FAILURE_GAIN`` (-0.5: failing is bad, but usually the model's slip rather than
  the principle's fault, so it weighs less than the worst real regression);
  a finite child whose parents all failed gets ``g = 1`` (anything working beats nothing).
* won (`offspring_won`):  the child is finite and strictly better than its best finite parent
  (or finite where every parent failed).
* utility (`update_utility`), an exponential moving average starting at 0 (neutral):
  ``u' = u + α · (g - u) = (1 - α) · u + α · g`` with ``α = DEFAULT_ALPHA = 0.3``; ``u`` stays in [-1, 1].
* smoothed win rate (`win_rate`):  ``(wins + 1) / (uses + 2)`` — 0.5 for a principle never used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

FAILURE_GAIN = -0.5
DEFAULT_ALPHA = 0.3


def _is_failure(value: float | None) -> bool:
    return value is None or math.isnan(value) or value == -math.inf


def _finite(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def gain_scale(population_fitnesses: Iterable[float | None]) -> float:
    """The divisor that turns a fitness difference into a gain (see the module docstring); always > 0."""
    finite = _finite(population_fitnesses)
    if not finite:
        return 1.0
    spread = max(finite) - min(finite)
    if spread > 0:
        return spread
    best = abs(max(finite))
    return best if best > 0 else 1.0


def offspring_gain(
    child_fitness: float | None,
    parent_fitnesses: Iterable[float | None],
    scale: float,
    *,
    failure_gain: float = FAILURE_GAIN,
) -> float:
    """Normalised improvement of a child over its best parent, clipped to [-1, 1].

    ``scale`` must be positive and finite (use `gain_scale`).  ``parent_fitnesses`` must not be empty:
    an offspring with no parent has nothing to be compared with.
    """
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    if not -1.0 <= failure_gain <= 1.0:
        raise ValueError(f"failure_gain must lie in [-1, 1], got {failure_gain!r}")
    parents = list(parent_fitnesses)
    if not parents:
        raise ValueError("offspring_gain needs at least one parent fitness")
    if child_fitness is None or _is_failure(child_fitness):
        return float(failure_gain)
    finite_parents = _finite(parents)
    if not finite_parents:
        return 1.0
    raw = (float(child_fitness) - max(finite_parents)) / scale
    return max(-1.0, min(1.0, raw))


def offspring_won(child_fitness: float | None, parent_fitnesses: Iterable[float | None]) -> bool:
    """True when the child is finite and strictly beats its best finite parent (or all parents failed)."""
    if child_fitness is None or _is_failure(child_fitness):
        return False
    finite_parents = _finite(parent_fitnesses)
    return not finite_parents or float(child_fitness) > max(finite_parents)


def update_utility(utility: float, gain: float, alpha: float = DEFAULT_ALPHA) -> float:
    """One step of the utility EMA: ``u + alpha * (clip(gain, -1, 1) - u)``."""
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {alpha!r}")
    if gain is None or math.isnan(gain):
        raise ValueError("gain must be a number (use offspring_gain for failed children)")
    clipped = max(-1.0, min(1.0, float(gain)))
    return utility + alpha * (clipped - utility)


def win_rate(wins: int, uses: int) -> float:
    """Laplace-smoothed win rate ``(wins + 1) / (uses + 2)``."""
    if uses < 0 or wins < 0 or wins > uses:
        raise ValueError(f"need 0 <= wins <= uses, got wins={wins}, uses={uses}")
    return (wins + 1) / (uses + 2)
