"""Hindsight bookkeeping of a search generation: which offspring count as evidence about the
principles in their prompts, and how they are credited (`hifo.knowledge_base.bandit`).

Evidence: every LLM offspring of the generation whose prompt was actually answered and judged —
evaluated (feasible or not) or rejected as invalid code.  Left out: baselines, the constant-tuning
``hyper`` operator (no prompt), duplicates (their outcome is an earlier candidate's), and candidates
that were never judged (the model call failed, or a budget stopped the evaluation).  Controls (prompts
without principles) count towards the generation's reference but credit nothing.
"""

from __future__ import annotations

from typing import Any, Sequence

from hifo.knowledge_base import credit_generation, gain_scale

_NOT_JUDGED = ("not evaluated", "model call failed")


def evidence(store: Any, generation: int) -> list[Any]:
    """The generation's candidates that are evidence (see the module docstring), in id order."""
    rows = store.candidates(generation=generation, not_operator=("baseline", "hyper"),
                            status=("evaluated", "invalid"))
    return sorted((c for c in rows if not (c.error or "").startswith(_NOT_JUDGED)), key=lambda c: c.id)


def credit_offspring(store: Any, kb: Any, generation: int, population_fitnesses: Sequence[float | None],
                     key_prefix: str, problem: str | None = None) -> dict[str, Any]:
    """Credit the principles of one generation's prompts; returns the arms' summary
    (control vs principled mean raw score, counts)."""
    kids = evidence(store, generation)
    fits = [c.fitness if c.ok else None for c in kids]
    scale = gain_scale([*population_fitnesses, *fits])
    return credit_generation(kb, [(c.principle_ids, f) for c, f in zip(kids, fits)], scale,
                             key_prefix=key_prefix, keys=[c.id for c in kids], problem=problem)
