"""Generic seed principles for an empty knowledge base (HiFo-Prompt starts its insight pool the same
way): problem-independent advice, so that the first run's prompts can already carry principles and
credit can start telling them apart.  Stated with source ``seed`` (``user`` in stores made before
schema v4) and the tag ``seed``; they are credited, sampled and retired like any other principle."""

from __future__ import annotations

from .store import KnowledgeBase

GENERIC_PRINCIPLES = (
    "Score each option by how well it fits the current need, and prefer the tightest good fit.",
    "Combine a greedy local measure with a term that looks one step ahead at what the choice leaves behind.",
    "Normalise quantities of different scales before adding them, so that no single term dominates by accident.",
    "Keep the heuristic simple and vectorised; add a term only when it changes which option wins.",
    "Break ties deliberately with a secondary criterion instead of relying on the order of the options.",
)


def seed_if_empty(kb: KnowledgeBase) -> list[str]:
    """Add `GENERIC_PRINCIPLES` when the store holds no principle at all (any status); returns their ids."""
    if kb.stats()["principles"]:
        return []
    return [kb.add(text, tags=["seed", "generic"], source="seed").id for text in GENERIC_PRINCIPLES]
