"""EoH's survivor and parent selection, for the ``selection = "eoh"`` setting (the EoH arm of
``benchmarks/discovery.py``).

Both follow the official EoH code (Liu et al., ICML 2024; github.com/FeiLiu36/EoH,
``eoh/src/eoh/methods/management/pop_greedy.py`` and ``methods/selection/prob_rank.py``, the defaults
``management = "pop_greedy"`` and ``selection = "prob_rank"``):

* **Survivors** (`pop_greedy`): individuals without an objective are dropped; of the rest, in their
  order (the population first, then the offspring), an individual whose objective *equals* one already
  seen is dropped (the first one stays); the best ``min(size, len(valid))`` of the distinct ones survive.
  The population can thus be smaller than ``size`` when there are not enough distinct objectives; hifo's
  default selection (`hifo.agents.selection`) instead keeps behavioural clones in leftover slots.
* **Parents** (`rank_weights` / `choose_parents`): with the population sorted best first, rank
  ``r = 0, 1, …`` is drawn with probability proportional to ``1 / (r + 1 + n)``, ``n`` the population
  size, *with* replacement (EoH uses ``random.choices``): an E1/E2 prompt may show the same parent twice.

Not reproduced (the arm's README paragraph says so): EoH runs each of its operators on the whole
population in turn and manages the population after each one; hifo draws an operator per offspring and
selects once per generation.  Selection is a ranking by hifo's ``fitness`` (higher is better, the
objective's sign taken care of), which orders and ties exactly as EoH's objective does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")


def pop_greedy(individuals: Sequence[T], size: int, fitness: Callable[[T], float | None]) -> list[T]:
    """EoH's ``population_management``: the best ``size`` individuals with distinct fitness, best first."""
    valid = [(f, i, x) for i, x in enumerate(individuals)
             if (f := fitness(x)) is not None and not math.isnan(f)]
    seen: set[float] = set()
    unique = []
    for f, i, x in valid:
        if f not in seen:
            seen.add(f)
            unique.append((f, i, x))
    unique.sort(key=lambda t: (-t[0], t[1]))
    return [x for _, _, x in unique[: max(0, min(size, len(valid)))]]


def rank_weights(n: int) -> list[float]:
    """EoH's ``prob_rank`` probabilities for ranks ``0 … n-1`` (best first), normalised."""
    raw = [1.0 / (r + 1 + n) for r in range(n)]
    total = sum(raw)
    return [w / total for w in raw]


def choose_parents(n: int, k: int, rng: np.random.Generator) -> list[int]:
    """``k`` ranks drawn with replacement with `rank_weights` (indices into the best-first population)."""
    if n <= 0 or k <= 0:
        return []
    return [int(j) for j in rng.choice(n, size=k, replace=True, p=rank_weights(n))]
