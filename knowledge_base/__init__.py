"""The hifo knowledge base: design principles that survive from one run (and problem) to the next.

One SQLite file holds every principle with its provenance and statistics.  The agent uses it in two
places of each generation:

* **recall** — ``kb.recall(problem, description, k)`` returns the principles most worth putting in the
  prompt (quality, relevance, recency, same-problem bonus; see `hifo.knowledge_base.ranking`);
* **propose** — each prompt gets its own Thompson-sampled subset of the recalled pool, every fourth
  prompt none at all (a control arm): `hifo.knowledge_base.bandit.assign_subsets`;
* **distill** — ``kb.add(text, tags, problem, source, provenance)`` stores what was learned (merging
  near-duplicates), and `hifo.knowledge_base.bandit.credit_generation` credits the principles of each
  offspring's prompt with its gain centred on the generation's other offspring (``kb.credit``);
  ``kb.retire_harmful()`` retires only principles whose credit is confidently negative.

`contrast_principles` states model-free hindsight from elites versus weak and failed candidates, so a
small model's run still learns something.  ``hifo principles …`` (`hifo.knowledge_base.cli.principles_app`)
lists, searches, exports, imports and prunes the store.

Example::

    from hifo.knowledge_base import KnowledgeBase, offspring_gain, gain_scale

    with KnowledgeBase() as kb:                          # $HIFO_KB or ~/.local/share/hifo/knowledge.sqlite
        p = kb.add("Prefer the bin that the item fills most tightly.", ["best-fit"], "bpp_online",
                   source="model", provenance={"run_id": "r1", "generation": 3, "candidate_ids": ["c17"]})
        prompt_principles = kb.recall("bpp_online", "online bin packing", k=5)
        gain = offspring_gain(child_fitness, parent_fitnesses, gain_scale(population_fitnesses))
        kb.credit([q.id for q in prompt_principles], gain, won=gain > 0)
"""

from ._rows import PrincipleNotFound
from ._schema import SCHEMA_VERSION, KnowledgeBaseError, default_kb_path
from .contrast import CodeFeatures, ContrastFinding, contrast_principles, extract_features
from .credit import (
    DEFAULT_ALPHA,
    FAILURE_GAIN,
    gain_scale,
    offspring_gain,
    offspring_won,
    update_utility,
    win_rate,
)
from .principle import SOURCES, STATUSES, Principle, Provenance
from .ranking import RecallWeights
from .similarity import DEFAULT_MERGE_THRESHOLD, similarity
from .store import KnowledgeBase
from .bandit import assign_subsets, credit_generation

__all__ = [
    "KnowledgeBase",
    "assign_subsets",
    "credit_generation",
    "KnowledgeBaseError",
    "PrincipleNotFound",
    "Principle",
    "Provenance",
    "RecallWeights",
    "default_kb_path",
    "SCHEMA_VERSION",
    "SOURCES",
    "STATUSES",
    "DEFAULT_ALPHA",
    "DEFAULT_MERGE_THRESHOLD",
    "FAILURE_GAIN",
    "offspring_gain",
    "offspring_won",
    "gain_scale",
    "update_utility",
    "win_rate",
    "similarity",
    "contrast_principles",
    "extract_features",
    "CodeFeatures",
    "ContrastFinding",
]
