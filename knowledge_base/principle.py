"""The records the knowledge base keeps: a `Principle` and the `Provenance` of each time it was stated.

Both are plain dataclasses with a JSON-safe `to_dict` / `from_dict`, which the export format, the CLI's
``--json`` output and the agent's state all use.  Timestamps are Unix seconds (floats) so that an
export/import round trip is exact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .credit import win_rate

SOURCES = ("model", "contrast", "user", "import", "seed")
"""Who stated a principle: the language model (distill), the model-free contrast miner, a person, or a
file imported without ids."""

STATUSES = ("active", "retired")
"""Only active principles are recalled.  Retired ones are kept (never deleted) and can be reactivated."""


def check_source(source: str) -> str:
    if source not in SOURCES:
        raise ValueError(f"unknown principle source {source!r}; expected one of {', '.join(SOURCES)}")
    return source


def check_status(status: str) -> str:
    if status not in STATUSES:
        raise ValueError(f"unknown principle status {status!r}; expected one of {', '.join(STATUSES)}")
    return status


def clean_tags(tags: Any) -> list[str]:
    """Lower-case, strip and de-duplicate tags, keeping first-seen order; a bare string is one tag."""
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"tags must be strings, got {type(tag).__name__}")
        tag = " ".join(tag.strip().lower().split())
        if tag and tag not in out:
            out.append(tag)
    return out


@dataclass(frozen=True)
class Provenance:
    """Where one statement of a principle came from.

    ``run_id`` / ``generation`` / ``candidate_ids`` identify the search run, its generation and the
    candidates (elites, failures) the principle was distilled from; all are optional because people and
    imports state principles too.  ``problem`` and ``source`` are those of this statement, which may
    differ from the principle's origin when a near-duplicate was merged into it.
    """

    run_id: str | None = None
    generation: int | None = None
    candidate_ids: tuple[str, ...] = ()
    problem: str | None = None
    source: str | None = None
    recorded_at: float | None = None

    def __post_init__(self) -> None:
        # Candidate ids may arrive as ints from a run database; store them as strings so the
        # identity key below does not depend on the caller's type.
        object.__setattr__(self, "candidate_ids", tuple(str(c) for c in self.candidate_ids))
        if self.generation is not None:
            object.__setattr__(self, "generation", int(self.generation))
        if self.source is not None:
            check_source(self.source)

    def key(self) -> tuple:
        """Identity of a statement: the same run/generation/candidates/problem/source is one statement,
        however many times it is replayed (e.g. a resumed run repeating its distill step)."""
        return (self.run_id, self.generation, self.candidate_ids, self.problem, self.source)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "generation": self.generation,
            "candidate_ids": list(self.candidate_ids),
            "problem": self.problem,
            "source": self.source,
            "recorded_at": self.recorded_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provenance:
        unknown = set(data) - {"run_id", "generation", "candidate_ids", "problem", "source", "recorded_at"}
        if unknown:
            raise ValueError(f"unknown provenance field(s): {', '.join(sorted(unknown))}")
        run_id = data.get("run_id")
        return cls(
            run_id=None if run_id is None else str(run_id),
            generation=data.get("generation"),
            candidate_ids=tuple(data.get("candidate_ids") or ()),
            problem=data.get("problem"),
            source=data.get("source"),
            recorded_at=data.get("recorded_at"),
        )

    @classmethod
    def coerce(cls, value: Provenance | Mapping[str, Any] | None) -> Provenance:
        if value is None:
            return cls()
        if isinstance(value, Provenance):
            return value
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        raise TypeError(f"provenance must be a Provenance, a mapping or None, not {type(value).__name__}")

    def summary(self) -> str:
        """A short human line: ``run r7 · gen 3 · 2 candidates``."""
        parts = []
        if self.run_id is not None:
            parts.append(f"run {self.run_id}")
        if self.generation is not None:
            parts.append(f"gen {self.generation}")
        if self.candidate_ids:
            n = len(self.candidate_ids)
            parts.append(f"{n} candidate{'s' if n != 1 else ''}")
        return " · ".join(parts) if parts else "-"


@dataclass
class Principle:
    """A design principle: a sentence of advice plus everything needed to judge and trace it.

    ``utility`` is the exponential moving average of the normalised offspring gain credited to the
    principle (see `hifo.knowledge_base.credit`), in [-1, 1]; ``uses`` counts offspring whose prompt carried
    it and ``wins`` those that beat their best parent.  ``support`` counts how many distinct statements
    (provenance records) were merged into it.  ``merged_into`` is set on a retired duplicate and names
    the principle that absorbed it.
    ``credit_n`` / ``credit_sum`` / ``credit_sq`` are the count, sum and sum of squares of the *centred*
    credit it received (gain against the generation's reference, see `hifo.knowledge_base.bandit`);
    sampling and retirement read them.
    """

    id: str
    text: str
    tags: list[str] = field(default_factory=list)
    problem: str | None = None
    source: str = "model"
    provenance: list[Provenance] = field(default_factory=list)
    utility: float = 0.0
    uses: int = 0
    wins: int = 0
    support: int = 1
    created_at: float = 0.0
    updated_at: float = 0.0
    last_used_at: float | None = None
    status: str = "active"
    merged_into: str | None = None
    credit_n: int = 0
    credit_sum: float = 0.0
    credit_sq: float = 0.0

    @property
    def credit_mean(self) -> float:
        """Mean centred credit (0 before any use); see `hifo.knowledge_base.bandit`."""
        return self.credit_sum / self.credit_n if self.credit_n else 0.0

    @property
    def win_rate(self) -> float:
        """Laplace-smoothed win rate ``(wins + 1) / (uses + 2)``: 0.5 for an unused principle."""
        return win_rate(self.wins, self.uses)

    @property
    def problems(self) -> list[str]:
        """The origin problem followed by every other problem a merged statement came from."""
        out = [self.problem] if self.problem else []
        for prov in self.provenance:
            if prov.problem and prov.problem not in out:
                out.append(prov.problem)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "tags": list(self.tags),
            "problem": self.problem,
            "source": self.source,
            "provenance": [p.to_dict() for p in self.provenance],
            "utility": self.utility,
            "uses": self.uses,
            "wins": self.wins,
            "support": self.support,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "last_used_at": self.last_used_at,
            "status": self.status,
            "merged_into": self.merged_into,
            "credit_n": self.credit_n,
            "credit_sum": self.credit_sum,
            "credit_sq": self.credit_sq,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Principle:
        """Build from `to_dict` output; raises ValueError on a malformed record."""
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown principle field(s): {', '.join(sorted(unknown))}")
        for required in ("id", "text"):
            if not isinstance(data.get(required), str) or not data[required].strip():
                raise ValueError(f"principle record needs a non-empty string {required!r}")
        uses, wins = int(data.get("uses", 0)), int(data.get("wins", 0))
        if not 0 <= wins <= uses:
            raise ValueError(f"principle {data['id']}: need 0 <= wins <= uses, got wins={wins}, uses={uses}")
        utility = float(data.get("utility", 0.0))
        if not -1.0 <= utility <= 1.0:
            raise ValueError(f"principle {data['id']}: utility {utility} is outside [-1, 1]")
        return cls(
            id=data["id"],
            text=data["text"],
            tags=clean_tags(data.get("tags")),
            problem=data.get("problem"),
            source=check_source(data.get("source", "import")),
            provenance=[Provenance.from_dict(p) for p in data.get("provenance") or ()],
            utility=utility,
            uses=uses,
            wins=wins,
            support=int(data.get("support", 1)),
            created_at=float(data.get("created_at", 0.0)),
            updated_at=float(data.get("updated_at", data.get("created_at", 0.0))),
            last_used_at=None if data.get("last_used_at") is None else float(data["last_used_at"]),
            status=check_status(data.get("status", "active")),
            merged_into=data.get("merged_into"),
            credit_n=int(data.get("credit_n", 0)),
            credit_sum=float(data.get("credit_sum", 0.0)),
            credit_sq=float(data.get("credit_sq", 0.0)),
        )
