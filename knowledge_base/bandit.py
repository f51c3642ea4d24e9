"""Identifiable credit for principles: per-prompt Thompson sampling, a control arm, centred gains and
retirement on a confidence bound.

The earlier scheme put the same ``recall_k`` principles into every prompt of a generation and credited
each offspring's gain against its *best parent*.  Principles shown together then received identical
credit (they could not be told apart), typical offspring scored negative, and the end-of-run prune
retired nearly everything (issue 12: 87-100 % in a 5-generation simulation).  Here instead:

* **Assignment** (`assign_subsets`): each prompt of a generation gets its own subset of the recalled
  pool.  Every ``control_every``-th prompt (positions 0, c, 2c, ...) is a *control*: no principles at
  all.  The others take the ``k`` principles with the highest Thompson draw
  ``theta ~ Normal(posterior mean, posterior sd)`` (see `posterior`), so a little-used principle, whose
  posterior is wide, is drawn often (the exploration bonus), and principles recalled in the same
  generation end up in different prompts.
* **Raw score** (`raw_scores`): a scored child gets ``clip((fitness - median) / scale, -1, 1)``, where
  ``median`` is the median finite fitness of the generation's offspring (all arms) and ``scale``
  `hifo.knowledge_base.credit.gain_scale`; a failed child gets ``FAILURE_GAIN`` (-0.5).
* **Centred gain** (`centred_gains`): raw score minus the mean raw score of the *other* offspring of
  the same generation (leave-one-out, controls included).  A principle that makes no difference has
  expected centred gain 0 whatever the failure rate or the parents' quality; that is the fair
  reference.  The control arm's mean against the principled prompts' mean says whether principles as
  a whole help (`arm_summary`).
* **Retirement** (`is_harmful`): only when the *upper* confidence bound of the mean centred credit,
  ``mean + z * sd / sqrt(n)`` (``z = 1.645``, one-sided 95 %), is below zero after at least
  ``min_uses`` credited uses, counted across runs (the statistics live in the knowledge base).  In
  words: a lower confidence bound on the principle's *harm* is above zero.  Nothing is deleted.

Pure functions; `hifo.knowledge_base.store.KnowledgeBase` stores the statistics
(``credit_n``, ``credit_sum``, ``credit_sq`` on each principle).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .credit import FAILURE_GAIN

if TYPE_CHECKING:  # numpy is imported where it is used: `hifo --help` must not load it
    import numpy as np

PRIOR_N = 2.0
"""Pseudo-observations of credit 0 that shrink a principle's posterior mean towards neutral."""
NOISE_SD = 0.35
"""Assumed per-use sd of centred credit until a principle has its own estimate (and its floor /
2): centred gains of real searches spread about 0.3-0.5 on [-1, 1]."""
RETIRE_Z = 1.645
RETIRE_MIN_USES = 8
CONTROL_EVERY = 4


@dataclass(frozen=True)
class Posterior:
    mean: float
    sd: float
    n: int


def _sample_sd(n: int, total: float, sq: float) -> float:
    if n < 2:
        return NOISE_SD
    var = max(0.0, (sq - total * total / n) / (n - 1))
    return max(math.sqrt(var), NOISE_SD / 2)


def posterior(n: int, total: float, sq: float) -> Posterior:
    """Normal posterior of a principle's mean centred credit from its count, sum and sum of squares,
    with ``PRIOR_N`` pseudo-observations at 0."""
    sd = _sample_sd(n, total, sq)
    return Posterior(total / (n + PRIOR_N), sd / math.sqrt(n + PRIOR_N), n)


def upper_bound(n: int, total: float, sq: float, z: float = RETIRE_Z) -> float:
    """``mean + z * sd / sqrt(n)`` of the observed centred credit (+inf before any use)."""
    if n <= 0:
        return math.inf
    return total / n + z * _sample_sd(n, total, sq) / math.sqrt(n)


def lower_bound(n: int, total: float, sq: float, z: float = RETIRE_Z) -> float:
    """``mean - z * sd / sqrt(n)`` of the observed centred credit (-inf before any use)."""
    if n <= 0:
        return -math.inf
    return total / n - z * _sample_sd(n, total, sq) / math.sqrt(n)


def is_harmful(n: int, total: float, sq: float, *, min_uses: int = RETIRE_MIN_USES, z: float = RETIRE_Z) -> bool:
    """True when enough uses say, with one-sided confidence ``z``, that the principle lowers gains."""
    return n >= min_uses and upper_bound(n, total, sq, z) < 0.0


def assign_subsets(
    stats: Sequence[tuple[str, int, float, float]],
    n_prompts: int,
    k: int,
    rng: np.random.Generator,
    control_every: int = CONTROL_EVERY,
) -> list[list[str]]:
    """One principle subset per prompt (see the module docstring).  ``stats`` holds
    ``(id, credit_n, credit_sum, credit_sq)`` for the recalled pool; ``control_every = 0`` disables
    the control arm.  Deterministic for a given ``rng`` state."""
    import numpy as np

    if k < 0 or n_prompts < 0:
        raise ValueError("k and n_prompts must be >= 0")
    posts = [(pid, posterior(n, s, q)) for pid, n, s, q in stats]
    out: list[list[str]] = []
    for i in range(n_prompts):
        if not posts or k == 0 or (control_every and i % control_every == 0):
            out.append([])
            continue
        draws = rng.normal([p.mean for _, p in posts], [p.sd for _, p in posts])
        order = np.argsort(-draws, kind="stable")[:k]
        out.append([posts[j][0] for j in order])
    return out


def raw_scores(fitnesses: Sequence[float | None], scale: float, failure_gain: float = FAILURE_GAIN) -> list[float]:
    """Each child's score against the median finite fitness of the generation (failures: ``failure_gain``)."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be positive and finite, got {scale!r}")
    finite = [float(f) for f in fitnesses if f is not None and math.isfinite(f)]
    med = statistics.median(finite) if finite else 0.0
    return [failure_gain if f is None or not math.isfinite(f) else max(-1.0, min(1.0, (float(f) - med) / scale))
            for f in fitnesses]


def centred_gains(raw: Sequence[float]) -> list[float]:
    """Leave-one-out centring: ``raw[i] - mean(raw[j] for j != i)``, clipped to [-1, 1] (0 for a lone child)."""
    n = len(raw)
    if n < 2:
        return [0.0] * n
    total = float(sum(raw))
    return [max(-1.0, min(1.0, r - (total - r) / (n - 1))) for r in raw]


def arm_summary(subsets: Sequence[Sequence[str]], raw: Sequence[float]) -> dict[str, float | int | None]:
    """Mean raw score of the control prompts (no principles) and of the principled ones."""
    ctrl = [r for s, r in zip(subsets, raw) if not s]
    prin = [r for s, r in zip(subsets, raw) if s]
    return {"control_n": len(ctrl), "control_mean": statistics.fmean(ctrl) if ctrl else None,
            "principled_n": len(prin), "principled_mean": statistics.fmean(prin) if prin else None}


def credit_generation(kb, offspring: Sequence[tuple[Sequence[str], float | None]], scale: float,
                      key_prefix: str | None = None, keys: Sequence[str] | None = None,
                      problem: str | None = None) -> dict[str, float | int | None]:
    """Credit one generation: ``offspring`` is ``(principle_ids, fitness or None)`` per child, all arms
    (controls have no ids).  Each principled child's principles receive its centred gain via
    ``kb.credit`` (idempotent under ``key_prefix:keys[i]``, or ``key_prefix:i``; counted for ``problem``
    in the per-problem use table, `hifo.knowledge_base.pool`); returns `arm_summary`
    plus the number of credited children."""
    raw = raw_scores([f for _, f in offspring], scale)
    gains = centred_gains(raw)
    credited = 0
    for i, ((ids, fit), g) in enumerate(zip(offspring, gains)):
        if not ids:
            continue
        won = fit is not None and math.isfinite(fit) and g > 0
        kb.credit(list(ids), g, won=won, key=None if key_prefix is None else f"{key_prefix}:{keys[i] if keys else i}",
                  problem=problem)
        credited += 1
    return {**arm_summary([ids for ids, _ in offspring], raw), "credited": credited}
