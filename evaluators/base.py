"""The evaluator contract: the plug-in API between the agent and a problem.

An evaluator splits its work between untrusted and trusted code:

* :meth:`Evaluator.solve` runs **inside the sandbox**, in a child process, with the
  candidate heuristic. It must be a ``staticmethod`` (or classmethod) that depends only on
  its arguments, and it returns a JSON-serialisable solution (lists, numbers, strings).
* :meth:`Evaluator.score` runs **in the trusted parent**. It receives the instance and the
  solution the child sent back, checks feasibility itself and computes the metrics from the
  solution alone. A candidate can therefore never report its own fitness.

Instances are produced on the trusted side by :meth:`Evaluator.load_instances` and must be
picklable (they travel parent -> child only; nothing is ever unpickled from the child).

A user's evaluator is a subclass of :class:`Evaluator` in their own package, registered
under the entry-point group ``hifo.evaluators``::

    [project.entry-points."hifo.evaluators"]
    my_problem = "my_pkg.my_module:MyEvaluator"
"""

from __future__ import annotations

import hashlib
import math
import secrets
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal

Direction = Literal["minimize", "maximize"]


# one lock for every object's secret draws (rare, and an object with a lock in it could not be pickled)
_DRAW_LOCK = threading.RLock()

class InfeasibleSolution(ValueError):
    """Raised by :meth:`Evaluator.score` when a returned solution violates the problem."""


@dataclass(frozen=True)
class FunctionTemplate:
    """The heuristic slot: what the candidate must define.

    ``imports`` are lines prepended to the candidate when it is executed (and shown to the
    model); ``signature`` is the ``def`` line; ``docstring`` describes inputs/outputs;
    ``baseline_body`` is an indented body that makes a valid baseline heuristic.
    """

    name: str
    signature: str
    docstring: str
    baseline_body: str
    imports: str = "import numpy as np"

    def render(self, body: str | None = None, name: str | None = None) -> str:
        """Full source of a function with this template's header and ``body``."""
        sig = self.signature
        if name is not None and name != self.name:
            sig = sig.replace(f"def {self.name}(", f"def {name}(", 1)
        doc = '    """' + self.docstring.strip().replace("\n", "\n    ") + '\n    """\n'
        return f"{sig}\n{doc}{body if body is not None else self.baseline_body}".rstrip() + "\n"

    def source(self, body: str | None = None) -> str:
        """Full source of a heuristic with ``body`` (default: the baseline body): imports + function."""
        return f"{self.imports}\n\n\n{self.render(body)}"

    def baseline_source(self) -> str:
        return self.source()


@dataclass(frozen=True)
class SlotGrammar:
    """An optional description of the small Python subset a slot's body may be written in, for
    grammar-constrained decoding of small local models (`hifo.agents.llm.grammar` turns it into a
    llama.cpp GBNF grammar).  Pure data: the evaluator says which expressions are arrays and which are
    numbers, and what the function returns; the builder adds arithmetic, comparisons, ``np.where`` and an
    allowlist of numpy functions, and a few assignments to local names.

    ``returns``: ``"array"`` (the return expression must contain one of ``array_atoms``, so it has their
    shape: all array atoms must have the same shape) or ``"choice"`` (``return int(<choice_from>[np.argmin(e)])``
    or ``np.argmax``, ``e`` an expression over the atoms; all array atoms then must have the length of
    ``choice_from``).  ``array_names`` are the argument names that hold arrays (to type the local names an
    edit start defines).  ``locals`` are the fresh local names a body may assign, in order."""

    array_atoms: tuple[str, ...]
    scalar_atoms: tuple[str, ...]
    returns: Literal["array", "choice"] = "array"
    choice_from: str | None = None
    array_names: tuple[str, ...] = ()
    locals: tuple[str, ...] = ("score", "penalty", "weight")


@dataclass(frozen=True)
class Limits:
    """Per-candidate resource limits applied by the sandbox."""

    timeout_s: float = 30.0  # wall clock for one candidate on a whole instance set
    cpu_s: int = 60
    memory_mb: int = 2048  # address-space limit (RLIMIT_AS)
    max_output_bytes: int = 64 * 1024
    max_solution_bytes: int = 32 * 1024 * 1024


@dataclass
class Score:
    """The outcome of evaluating one candidate on one instance set.

    ``fitness`` is always *higher is better* (the primary metric, negated when the
    evaluator minimises) so selection code never needs to know the direction.
    ``objective`` is the primary metric in the evaluator's own units and direction.
    """

    feasible: bool
    fitness: float = -math.inf
    objective: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    per_instance: list[dict[str, float]] = field(default_factory=list)
    error: str | None = None
    wall_s: float = 0.0
    stdout: str = ""
    node: str | None = None  # the machine (Ray node) that ran the candidate
    isolation: dict[str, Any] = field(default_factory=dict)  # the sandbox layers it ran under there

    def to_dict(self) -> dict[str, Any]:
        return {
            "feasible": self.feasible,
            "fitness": None if not math.isfinite(self.fitness) else self.fitness,
            "objective": self.objective,
            "metrics": self.metrics,
            "per_instance": self.per_instance,
            "error": self.error,
            "wall_s": self.wall_s,
            "stdout": self.stdout,
            "node": self.node,
            "isolation": self.isolation,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Score":
        fit = d.get("fitness")
        return cls(
            feasible=bool(d["feasible"]),
            fitness=-math.inf if fit is None else float(fit),
            objective=d.get("objective"),
            metrics=dict(d.get("metrics") or {}),
            per_instance=list(d.get("per_instance") or []),
            error=d.get("error"),
            wall_s=float(d.get("wall_s") or 0.0),
            stdout=d.get("stdout") or "",
            node=d.get("node"),
            isolation=dict(d.get("isolation") or {}),
        )

    @classmethod
    def failed(cls, reason: str, wall_s: float = 0.0, stdout: str = "") -> "Score":
        return cls(feasible=False, error=reason, wall_s=wall_s, stdout=stdout)


class Evaluator(ABC):
    """Base class of every problem evaluator. Subclasses set the class attributes and
    implement :meth:`load_instances`, :meth:`solve` and :meth:`score`."""

    name: str = ""
    description: str = ""  # the task as told to the model
    direction: Direction = "minimize"
    primary_metric: str = ""
    template: FunctionTemplate
    instance_sets: tuple[str, ...] = ("train", "test")
    default_train_set: str = "train"
    default_test_set: str = "test"
    limits: Limits = Limits()
    # name -> full source of a reference heuristic (imports + function)
    baselines: dict[str, str] = {}
    # name -> {instance set -> {metric -> value it should reach}}
    reference_figures: dict[str, dict[str, dict[str, float]]] = {}
    tags: tuple[str, ...] = ()
    # optional: the body's Python subset for grammar-constrained decoding of the embedded model (None: none)
    slot_grammar: SlotGrammar | None = None
    # What the candidate's code may import (the slot fence, :mod:`hifo.sandbox._fence`): stdlib
    # helpers and numpy by default; never evaluators/problems, solver libraries, sys/inspect/gc/os.
    slot_imports: tuple[str, ...] = (
        "numpy", "math", "cmath", "random", "itertools", "heapq", "functools", "collections", "operator",
        "statistics", "bisect", "typing", "dataclasses", "numbers", "copy", "fractions", "decimal", "array",
        "enum", "abc", "re",
    )
    # True: in the sandbox the candidate runs in a process of its own that sees only the slot's
    # arguments and answers over a shared-memory channel (:mod:`hifo.sandbox._slotproc`); every included
    # evaluator sets it (issue 28; each call costs a round trip). The algorithm gets a proxy whose
    # ``slot_cpu_s`` is the CPU time spent there, for budgets counted in CPU time.
    slot_process: bool = False
    # Instance sets whose seeds (data, noise, held-out draws) come from :meth:`secret_seed`: drawn by the
    # parent from a key no candidate sees, so a candidate cannot rebuild them from the public source or
    # answer them from a table computed offline. ``public_seeds = True`` (on an object) gives the published
    # seeds instead: the reproducible sets the stored reference figures were measured on.
    secret_sets: tuple[str, ...] = ()
    public_seeds: bool = False
    # Reproducible fitness (:mod:`hifo.evaluators.determinism`): a score must be the same number on every
    # machine. ``fitness_rtol`` is the relative difference the evaluator's metrics may show across CPUs
    # (SIMD width, BLAS core type, thread count) and load: 0.0 means bit-identical, and anything else
    # must be a *measured* figure (``python -m hifo.evaluators.determinism NAME``), not one picked to
    # pass. ``load_dependent``: the budget is wall-clock time (the solver offers nothing else), so scores
    # change with the machine's load; the evaluator's docs say so.
    # A dict gives the tolerance per metric (key ``"*"``: every other metric).
    fitness_rtol: float | dict[str, float] = 0.0
    load_dependent: bool = False
    # metrics that are wall-clock measurements (informative, never primary): left out of the check
    timing_metrics: tuple[str, ...] = ()
    # the set the test suite's cross-kernel check runs on (``tests/evaluators/test_determinism.py``): the train set
    # unless checking it under two configurations costs minutes; then a loadable subset of it, named here (the full
    # train set's check is stored in benchmarks/results/determinism.json)
    determinism_set: str = "train"

    @classmethod
    def metric_rtol(cls, metric: str) -> float:
        """The declared relative tolerance of ``metric`` (see ``fitness_rtol``)."""
        tol = cls.fitness_rtol
        if isinstance(tol, dict):
            return float(tol.get(metric, tol.get("*", 0.0)))
        return float(tol)

    # ---- trusted side -------------------------------------------------------------
    @abstractmethod
    def load_instances(self, instance_set: str) -> list[Any]:
        """Picklable instances of a named set. Raise ``KeyError`` for an unknown set."""

    @abstractmethod
    def score(self, instance: Any, solution: Any) -> dict[str, float]:
        """Check ``solution`` against ``instance`` and return per-instance metrics.

        Raise :class:`InfeasibleSolution` with a readable reason when it is infeasible.
        """

    def aggregate(self, per_instance: list[dict[str, float]]) -> dict[str, float]:
        """Combine per-instance metrics (default: the mean of each metric)."""
        keys = per_instance[0].keys() if per_instance else ()
        return {k: float(sum(m[k] for m in per_instance) / len(per_instance)) for k in keys}

    def probe_instances(self) -> list[Any] | None:
        """A few small instances on which the search compares a new candidate's *behaviour* with the earlier
        ones before it is evaluated (`hifo.agents.probe`): two candidates whose solutions on every probe
        instance are identical count as one, however their code differs. Public, fixed and unscored (never
        part of a fitness); None (the default): novelty is judged by normalised code alone."""
        return None

    def instance_time_limit(self, instance: Any) -> float | None:
        """Seconds one instance may take in the child (solver and candidate together), checked by
        the parent against the child's per-instance timing; None: only the job's wall clock."""
        return None

    def fitness(self, metrics: dict[str, float]) -> float:
        value = float(metrics[self.primary_metric])
        return -value if self.direction == "minimize" else value

    # ---- untrusted side (runs in the sandbox) ----------------------------------
    @staticmethod
    @abstractmethod
    def solve(heuristic: Callable[..., Any], instance: Any) -> Any:
        """Run the algorithm with ``heuristic`` in its slot; return a JSON-able solution."""

    # ---- helpers -------------------------------------------------------------------
    def secret_seed(self, public: int, *label: Any) -> int:
        """The seed an instance of a secret set uses: ``public`` when :attr:`public_seeds` is set, else a
        63-bit number derived from ``label`` under a key drawn with :mod:`secrets` once per evaluator object,
        in the trusted parent (never shipped to the sandbox: the child imports the evaluator's module, not
        this object). So every candidate of one run meets the same instances (a fair comparison) and no
        candidate can know them in advance."""
        if self.public_seeds:
            return int(public)
        key = self.__dict__.get("_secret_key")
        if key is None:
            key = self.__dict__["_secret_key"] = secrets.token_bytes(32)
        digest = hashlib.blake2b(repr((self.name, *label)).encode(), key=key, digest_size=8).digest()
        return int.from_bytes(digest, "little") >> 1

    def use_secret_key(self, key: bytes) -> None:
        """Draw this object's secret sets from ``key`` (32 bytes) instead of a key of its own: a run keeps its key
        in its run store, so a resumed or replayed run meets the same instances (agents/run_kb.py). Forgets the
        instances drawn so far."""
        if not isinstance(key, bytes) or len(key) != 32:
            raise ValueError("a secret key is 32 bytes")
        with _DRAW_LOCK:
            self.__dict__["_secret_key"] = key
            self.__dict__.pop("_secret_instances", None)

    def seeds_secret(self, instance_set: str) -> bool:
        """Whether ``instance_set``'s seeds come from the secret key on this object."""
        return instance_set in self.secret_sets and not self.public_seeds

    def drawn_once(self, instance_set: str, draw: Callable[[], Iterable[Any]]) -> list[Any]:
        """The instances of a secret set, made by ``draw`` once per object (drawing may be slow): every
        candidate this object scores meets the same draw."""
        with _DRAW_LOCK:  # a run may draw ahead in a thread (agents/graph.py): the end waits for that draw
            cache = self.__dict__.setdefault("_secret_instances", {})
            if instance_set not in cache:
                cache[instance_set] = tuple(draw())
            return list(cache[instance_set])

    def prepare_references(self, instance_set: str) -> None:
        """Compute ahead what scoring ``instance_set`` needs beyond loading it (default: nothing). An evaluator
        whose secret draws get their references lazily, at their first score (``milp_primal``, ``fmip_guidance``:
        HiGHS per drawn instance), does it here; a run calls it in the thread that draws its secret test set
        ahead (``agents/run_kb.py::draw_secret_test_ahead``), so the final test evaluation does not pay for it."""

    @classmethod
    def unknown_instance_set(cls, instance_set: str, known: Iterable[str] | None = None) -> KeyError:
        """The error :meth:`load_instances` raises for a set it does not have (``known``: default
        :attr:`instance_sets`): ``raise self.unknown_instance_set(name)``."""
        names = ", ".join(cls.instance_sets if known is None else known)
        return KeyError(f"unknown instance set {instance_set!r} for {cls.name}; known: {names}")

    @classmethod
    def entry_point(cls) -> str:
        """``module:Class`` path the sandbox child imports to find :meth:`solve`."""
        return f"{cls.__module__}:{cls.__qualname__}"

    def baseline_source(self) -> str:
        return self.template.baseline_source()

    def info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "direction": self.direction,
            "primary_metric": self.primary_metric,
            "instance_sets": list(self.instance_sets),
            "entry": self.template.name,
            "baselines": sorted(self.baselines),
        }


def measured_figures(ev: Evaluator, heuristic: Callable[..., Any], instance_set: str,
                     digits: int = 6) -> dict[str, float]:
    """Aggregate metrics of a *trusted* heuristic (our own baselines) on one set, measured in-process the
    way the sandbox runs it: solve, the solution round-tripped through JSON, scored by the parent.
    For writing an evaluator's stored reference figures; candidates never go through here."""
    import json

    per = [ev.score(i, json.loads(json.dumps(ev.solve(heuristic, i)))) for i in ev.load_instances(instance_set)]
    return {k: round(v, digits) for k, v in ev.aggregate(per).items()}
