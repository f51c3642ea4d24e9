"""The hyperparameter operator: tunes the numeric constants of an elite without the model.

It is a (1+lambda) evolution strategy over the constants found in the elite's AST
(:func:`hifo.agents.code.find_constants`), spread across generations so every variant goes
through the same sandbox and run store as any other candidate (and survives a resume):

* ask: each variant multiplies every constant ``c`` by ``exp(sigma * z)``, ``z ~ N(0, 1)``
  (log-normal, sign-preserving, scale-free); integers are rounded, and a zero constant is
  replaced by ``sigma * z`` so it can move at all;
* tell: once the variants are scored, the step size follows Rechenberg's 1/5 success rule:
  ``sigma *= exp((success_rate - 1/5) / (1 - 1/5))`` (a success is a variant strictly better
  than its elite), clipped to [0.01, 2.0]. The per-elite state (sigma, trials, successes)
  is kept in the run store.

With a small base model this operator does most of the improving: the model's offspring are
mostly small variants of their parents, while this search moves constants systematically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hifo.agents.code import find_constants, substitute_constants

SIGMA0 = 0.3
SIGMA_MIN, SIGMA_MAX = 0.01, 2.0


@dataclass
class HyperState:
    sigma: float = SIGMA0
    trials: int = 0
    successes: int = 0

    def to_dict(self) -> dict:
        return {"sigma": self.sigma, "trials": self.trials, "successes": self.successes}


def ask(code: str, entry: str, n: int, sigma: float, rng: np.random.Generator, max_tries: int = 4) -> list[str]:
    """Up to ``n`` distinct variants of ``code`` with perturbed constants ([] if it has none)."""
    consts = find_constants(code, entry)
    if not consts:
        return []
    base = np.array([c.value for c in consts], dtype=float)
    out: list[str] = []
    seen = {code}
    for _ in range(n * max_tries):
        z = rng.standard_normal(len(base))
        vals = np.where(base != 0, base * np.exp(sigma * z), sigma * z)
        new = substitute_constants(code, [float(v) for v in vals], entry)
        if new not in seen:
            seen.add(new)
            out.append(new)
        if len(out) >= n:
            break
    return out


def tell(state: HyperState, n_variants: int, n_successes: int) -> HyperState:
    if n_variants <= 0:
        return state
    rate = n_successes / n_variants
    sigma = state.sigma * math.exp((rate - 0.2) / 0.8)
    return HyperState(sigma=float(min(SIGMA_MAX, max(SIGMA_MIN, sigma))),
                      trials=state.trials + n_variants, successes=state.successes + n_successes)
