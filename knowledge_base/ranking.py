"""How `KnowledgeBase.recall` ranks principles for a problem.

For each active principle ``p`` (all problems when ``cross_problem`` is true; otherwise only those
stated for this problem, plus general ones that have no problem):

    score(p) = w_quality   · quality(p)
             + w_relevance · relevance(p)
             + w_recency   · recency(p)
             + w_problem   · [problem ∈ p.problems]
             + w_probation · max(0, 1 - credit_n / PROBATION_USES)

with the default weights 0.45 / 0.25 / 0.10 / 0.20 (they sum to 1) and a probation bonus of 0.30 that
fades over a new principle's first ``PROBATION_USES`` credited uses (`hifo.knowledge_base.pool`), so
scores lie in [0, 1.3]; and

* ``quality(p)    = ½ · (wins + 1) / (uses + 2) + ½ · (utility + 1) / 2`` — the smoothed win rate and the
  utility EMA mapped from [-1, 1] to [0, 1]; exactly 0.5 for a principle never used;
* ``relevance(p)  = bm25(p) / max over candidates of bm25`` — SQLite FTS5 bm25 (sign flipped so larger
  is better) of the problem name and description, as an OR of their content words, against the
  principle's text (weight 1) and tags (weight 0.5); 0 when the principle matches no word;
* ``recency(p)    = 0.5 ** (age / half_life)`` with ``age`` the time since the principle was last created,
  restated, credited or edited (``max(created_at, updated_at, last_used_at)``) and a half-life of 30 days.

Ties break on the principle id, so the order is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

from .credit import win_rate
from .pool import PROBATION_USES
from .principle import Principle

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class RecallWeights:
    """Weights of the recall score; see the module docstring."""

    quality: float = 0.45
    relevance: float = 0.25
    recency: float = 0.10
    same_problem: float = 0.20
    half_life_days: float = 30.0
    probation: float = 0.30  # bonus of a principle with no credited use (see hifo.knowledge_base.pool)

    def __post_init__(self) -> None:
        for name in ("quality", "relevance", "recency", "same_problem", "probation"):
            if getattr(self, name) < 0:
                raise ValueError(f"recall weight {name} must be >= 0")
        if self.half_life_days <= 0:
            raise ValueError("half_life_days must be > 0")


def quality(p: Principle) -> float:
    """Half smoothed win rate, half utility mapped to [0, 1]."""
    return 0.5 * win_rate(p.wins, p.uses) + 0.5 * (p.utility + 1.0) / 2.0


def recency(p: Principle, now: float, half_life_days: float) -> float:
    """Exponential freshness in (0, 1]; 1 for a principle touched at ``now`` (or in the future)."""
    touched = max(p.created_at, p.updated_at, p.last_used_at or 0.0)
    age_days = max(0.0, now - touched) / SECONDS_PER_DAY
    return 0.5 ** (age_days / half_life_days)


def normalise_relevance(raw: dict[str, float]) -> dict[str, float]:
    """Map positive bm25 scores (id → score) to (0, 1] by dividing by the largest."""
    top = max(raw.values(), default=0.0)
    if top <= 0:
        return {}
    return {pid: max(0.0, value) / top for pid, value in raw.items()}


def recall_score(
    p: Principle,
    *,
    problem: str | None,
    relevance: float,
    now: float,
    weights: RecallWeights = RecallWeights(),
) -> float:
    same = 1.0 if problem is not None and problem in p.problems else 0.0
    return (
        weights.quality * quality(p)
        + weights.relevance * relevance
        + weights.recency * recency(p, now, weights.half_life_days)
        + weights.same_problem * same
        + weights.probation * max(0.0, 1.0 - p.credit_n / PROBATION_USES)
    )


def rank(
    principles: list[Principle],
    *,
    problem: str | None,
    relevance: dict[str, float],
    now: float,
    k: int,
    weights: RecallWeights = RecallWeights(),
) -> list[tuple[float, Principle]]:
    """The ``k`` best principles as ``(score, principle)``, best first, ties broken by id."""
    scored = [
        (recall_score(p, problem=problem, relevance=relevance.get(p.id, 0.0), now=now, weights=weights), p)
        for p in principles
    ]
    scored.sort(key=lambda item: (-item[0], item[1].id))
    return scored[: max(0, k)]
