"""Model-free hindsight: principles mined by contrasting elites with weak and failed candidates.

A small model may write poor principles, so the agent can also state plain, countable facts about the
population.  `extract_features` reads a candidate's code with `ast` (nothing is executed);
`contrast_principles` compares how often each feature appears among elites and among weak candidates and
groups failures by the kind of error.  Output is deterministic: the same input gives the same findings
in the same order.

Rules (defaults in brackets):

* **binary features** (scored candidates only: failures are left out of every feature contrast) — a
  function ``np.X`` / ``math.X`` called, division, powers, exponentials, logarithms, branching (``if``,
  conditional expressions, ``np.where``/``np.select``), loops and
  comprehensions, tiny (0 < |c| < 0.01) or large (|c| ≥ 100) numeric constants, each argument of the
  entry function being used.  "Scored better" when the share among elites exceeds the share among weak
  candidates by at least ``min_difference`` [0.5] and at least ``min_support`` [2] elites have it;
  "scored worse" symmetrically (``min_support`` weak candidates have it).  Features present in exactly
  the same candidates are reported once (the first in a fixed order: calls, named features, arguments)
  and the others listed as ``co_occurring`` in the evidence.
* **counts** — statements, comparisons, numeric constants: a finding when the probability that an elite
  has the larger count (ties count ½) is ≥ 0.8 or ≤ 0.2 and the medians differ by a factor ≥ 1.5 (after
  adding 1 to both).
* **errors** — failed candidates (an ``error`` text, or a fitness that is None, NaN or -inf) are sorted
  into categories by regular expressions over the error text; a category with at least
  ``min_error_count`` [2] members yields advice.  A NaN fitness counts as "produced NaN".

Counts appear in parentheses in the text ("(4/5 elites vs 1/6 weak candidates)"), which the knowledge
base's near-duplicate test ignores, so the same finding next generation merges into the same principle.
Findings are ordered errors first (most frequent first), then features by strength; at most
``max_principles`` [8] are returned.
"""

from __future__ import annotations

import ast
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

_MODULE_ALIASES = {"numpy": "np", "np": "np", "math": "math"}
_EXP = frozenset({"exp", "expm1", "exp2"})
_LOG = frozenset({"log", "log1p", "log2", "log10"})
_BRANCH_CALLS = frozenset({"where", "select", "piecewise"})


class ContrastFinding(NamedTuple):
    """One principle: unpacks as ``(text, tags, evidence)``."""

    text: str
    tags: list[str]
    evidence: dict[str, Any]


@dataclass(frozen=True)
class CodeFeatures:
    """What `extract_features` reads from one candidate's source."""

    parsed: bool
    calls: frozenset[str] = frozenset()
    division: bool = False
    power: bool = False
    exp: bool = False
    log: bool = False
    branches: int = 0
    loops: int = 0
    comparisons: int = 0
    constants: tuple[float, ...] = ()
    statements: int = 0
    arguments: tuple[str, ...] = ()
    arguments_used: frozenset[str] = frozenset()

    def binary(self) -> dict[str, bool]:
        """Presence features, keyed in the fixed order used for reporting."""
        out = {f"call:{name}": True for name in sorted(self.calls)}
        out.update({
            "exp": self.exp,
            "log": self.log,
            "power": self.power,
            "division": self.division,
            "branching": self.branches > 0,
            "loop": self.loops > 0,
            "tiny_constant": any(0 < abs(c) < 0.01 for c in self.constants),
            "large_constant": any(abs(c) >= 100 for c in self.constants),
        })
        out.update({f"arg:{a}": a in self.arguments_used for a in self.arguments})
        return out

    def counts(self) -> dict[str, int]:
        return {"statements": self.statements, "comparisons": self.comparisons, "constants": len(self.constants)}


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in _MODULE_ALIASES or not parts:
        return None
    return ".".join([_MODULE_ALIASES[node.id], *reversed(parts)])


def extract_features(code: str) -> CodeFeatures:
    """Static features of ``code`` (see the module docstring); ``parsed=False`` when it does not parse
    (or is empty)."""
    if not code.strip():
        return CodeFeatures(parsed=False)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return CodeFeatures(parsed=False)
    func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    arguments: tuple[str, ...] = ()
    used: set[str] = set()
    if func is not None:
        a = func.args
        arguments = tuple(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs])
        used = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and n.id in arguments}
    calls: set[str] = set()
    division = power = False
    branches = loops = comparisons = 0
    constants: list[float] = []
    statements: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name:
                calls.add(name)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            division |= isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod))
            power |= isinstance(node.op, ast.Pow)
        elif isinstance(node, (ast.If, ast.IfExp)):
            branches += 1
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.comprehension)):
            loops += 1
        elif isinstance(node, ast.Compare):
            comparisons += len(node.ops)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
            node.value, bool
        ):
            constants.append(float(node.value))
    # size = statements of the entry function's body (the whole module when there is none), docstrings excluded
    for node in ast.walk(func if func is not None else tree):
        if isinstance(node, ast.stmt) and node is not func and not (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        ):
            statements.add(node.lineno)
    leaves = {c.rsplit(".", 1)[-1] for c in calls}
    branches += sum(1 for c in calls if c.startswith("np.") and c.rsplit(".", 1)[-1] in _BRANCH_CALLS)
    return CodeFeatures(
        parsed=True,
        calls=frozenset(calls),
        division=division or "divide" in leaves or "true_divide" in leaves,
        power=power or bool(leaves & {"power", "float_power", "pow"}),
        exp=bool(leaves & _EXP),
        log=bool(leaves & _LOG),
        branches=branches,
        loops=loops,
        comparisons=comparisons,
        constants=tuple(constants),
        statements=len(statements),
        arguments=arguments,
        arguments_used=frozenset(used),
    )


def _phrase(feature: str) -> str:
    if feature.startswith("call:"):
        return f"use {feature[5:]}"
    if feature.startswith("arg:"):
        return f"use the argument `{feature[4:]}`"
    return {
        "exp": "use exponentials (exp)",
        "log": "use logarithms (log)",
        "power": "raise values to a power",
        "division": "divide one quantity by another",
        "branching": "branch on conditions (if / np.where)",
        "loop": "use explicit loops or comprehensions",
        "tiny_constant": "use numeric constants below 0.01",
        "large_constant": "use numeric constants of 100 or more",
    }[feature]


_COUNT_WORDS = {  # feature: (more, fewer, unit)
    "statements": ("Longer heuristics", "Shorter heuristics", "statements"),
    "comparisons": ("Heuristics with more comparisons", "Heuristics with fewer comparisons", "comparisons"),
    "constants": ("Heuristics with more numeric constants", "Heuristics with fewer numeric constants", "constants"),
}

# category, pattern over the error text, advice, what happened (for the parenthesis)
_ERRORS: list[tuple[str, str, str, str]] = [
    ("syntax", r"SyntaxError|IndentationError|(could|did) not parse",
     "Write a complete, syntactically valid function that follows the template", "did not parse"),
    ("timeout", r"Timeout|timed out|time limit|TimeLimit|CPU time",
     "Keep the heuristic cheap; avoid Python loops over every item on each call", "exceeded the time limit"),
    ("memory", r"MemoryError|out of memory|Cannot allocate|address space",
     "Avoid building large intermediate arrays", "ran out of memory"),
    ("log_domain", r"math domain error|(divide by zero|invalid value) encountered in (log|sqrt|power)",
     "Only take logarithms, square roots or fractional powers of positive quantities; clip the argument "
     "away from zero", "hit a math domain error"),
    ("overflow", r"OverflowError|overflow encountered|too large",
     "Keep exponentials and powers bounded; clip their arguments", "overflowed"),
    ("zero_division", r"ZeroDivisionError|division by zero|divide by zero|invalid value encountered|\bnan\b",
     "Avoid dividing by quantities that can be zero; guard denominators with a small epsilon",
     "failed with ZeroDivisionError or produced NaN"),
    ("shape", r"could not be broadcast|shape|dimension mismatch",
     "Keep array shapes consistent and return one value per option, as the template requires",
     "failed with shape errors"),
    ("index", r"IndexError|out of bounds|out of range",
     "Check indices against array lengths before indexing", "failed with IndexError"),
    ("names", r"NameError|ImportError|ModuleNotFoundError|is not defined|No module named",
     "Use only numpy and the function's own arguments; do not import other modules or use undefined names",
     "used an unavailable name or module"),
    ("type", r"TypeError|AttributeError",
     "Return the type the template declares and call functions with valid arguments",
     "failed with TypeError or AttributeError"),
    ("infeasible", r"infeasib|constraint|invalid (solution|tour|assignment)",
     "Respect the problem's constraints so that every solution stays feasible", "produced infeasible solutions"),
]


def _failed(c: Mapping[str, Any]) -> bool:
    fitness = c.get("fitness")
    return bool(c.get("error")) or fitness is None or math.isnan(fitness) or fitness == -math.inf


def _error_category(c: Mapping[str, Any]) -> str | None:
    text = str(c.get("error") or "")
    metrics = c.get("metrics") or {}
    if isinstance(metrics, Mapping) and isinstance(metrics.get("error"), str):
        text += "\n" + metrics["error"]
    fitness = c.get("fitness")
    if fitness is not None and isinstance(fitness, float) and math.isnan(fitness):
        text += "\nfitness is nan"
    for category, pattern, _, _ in _ERRORS:
        if re.search(pattern, text, flags=re.IGNORECASE):
            return category
    return None


def _ids(candidates: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted(str(c["id"]) for c in candidates if c.get("id") is not None)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _error_findings(candidates: Sequence[Mapping[str, Any]], min_count: int) -> list[tuple[tuple, ContrastFinding]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for c in candidates:
        if _failed(c):
            category = _error_category(c)
            if category is not None:
                groups.setdefault(category, []).append(c)
    out = []
    for order, (category, _, advice, happened) in enumerate(_ERRORS):
        members = groups.get(category, [])
        if len(members) < min_count:
            continue
        text = f"{advice} ({_plural(len(members), 'candidate')} {happened})."
        examples = sorted({str(c.get("error") or "fitness NaN").strip().splitlines()[-1][:200] for c in members})
        evidence = {"kind": "error", "category": category, "count": len(members),
                    "examples": examples[:3], "candidate_ids": _ids(members)}
        out.append(((0, -len(members), order), ContrastFinding(text, ["contrast", "errors", category], evidence)))
    return out


def _feature_findings(elites, weak, min_support, min_difference) -> list[tuple[tuple, ContrastFinding]]:
    e_feats = [extract_features(str(c.get("code") or "")) for c in elites]
    w_feats = [extract_features(str(c.get("code") or "")) for c in weak]
    e_pairs = [(c, f) for c, f in zip(elites, e_feats) if f.parsed]
    w_pairs = [(c, f) for c, f in zip(weak, w_feats) if f.parsed]
    ne, nw = len(e_pairs), len(w_pairs)
    if ne < 2 or nw < 2:
        return []
    e_bin = [f.binary() for _, f in e_pairs]
    w_bin = [f.binary() for _, f in w_pairs]
    keys = list(dict.fromkeys(k for b in e_bin + w_bin for k in b))
    # fixed order: calls alphabetically, then the named features, then arguments
    named_order = ["exp", "log", "power", "division", "branching", "loop", "tiny_constant", "large_constant"]
    keys.sort(key=lambda k: (0, k) if k.startswith("call:") else (2, k) if k.startswith("arg:")
              else (1, f"{named_order.index(k):02d}"))
    seen_patterns: dict[tuple, dict[str, Any]] = {}
    out = []
    for key in keys:
        e_has = tuple(b.get(key, False) for b in e_bin)
        w_has = tuple(b.get(key, False) for b in w_bin)
        if (e_has, w_has) in seen_patterns:
            seen_patterns[(e_has, w_has)]["co_occurring"].append(key)
            continue
        ce, cw = sum(e_has), sum(w_has)
        diff = ce / ne - cw / nw
        if diff >= min_difference and ce >= min_support:
            direction = "better"
        elif -diff >= min_difference and cw >= min_support:
            direction = "worse"
        else:
            continue
        text = (f"Heuristics that {_phrase(key)} scored {direction} "
                f"({ce}/{ne} elites vs {cw}/{nw} weak candidates).")
        having = [c for (c, _), h in zip(e_pairs, e_has) if h] + [c for (c, _), h in zip(w_pairs, w_has) if h]
        evidence = {"kind": "feature", "feature": key, "direction": direction, "elites": [ce, ne],
                    "weak": [cw, nw], "difference": round(diff, 6), "co_occurring": [],
                    "candidate_ids": _ids(having)}
        seen_patterns[(e_has, w_has)] = evidence
        tag = key.split(":", 1)[-1]
        strength = round(abs(diff), 9)  # rounded so that float noise cannot reorder equal strengths
        out.append(((1, -strength, key), ContrastFinding(text, ["contrast", "code-feature", tag], evidence)))

    for key, (more, fewer, unit) in _COUNT_WORDS.items():
        e_vals = [f.counts()[key] for _, f in e_pairs]
        w_vals = [f.counts()[key] for _, f in w_pairs]
        auc = sum((x > y) + 0.5 * (x == y) for x in e_vals for y in w_vals) / (ne * nw)
        me, mw = float(statistics.median(e_vals)), float(statistics.median(w_vals))
        ratio = (max(me, mw) + 1) / (min(me, mw) + 1)
        if ratio < 1.5 or 0.2 < auc < 0.8:
            continue
        subject = more if auc >= 0.8 else fewer
        text = f"{subject} scored better (median {me:g} vs {mw:g} {unit} in elites vs weak candidates)."
        evidence = {"kind": "count", "feature": key, "direction": "more" if auc >= 0.8 else "fewer",
                    "elite_median": me, "weak_median": mw, "p_elite_larger": round(auc, 6),
                    "candidate_ids": _ids([c for c, _ in e_pairs])}
        strength = round(abs(2 * auc - 1), 9)
        out.append(((1, -strength, key), ContrastFinding(text, ["contrast", "code-size", key], evidence)))
    return out


def contrast_principles(
    elites: Sequence[Mapping[str, Any]],
    weak: Sequence[Mapping[str, Any]],
    *,
    min_support: int = 2,
    min_difference: float = 0.5,
    min_error_count: int = 2,
    max_principles: int = 8,
) -> list[ContrastFinding]:
    """Principles from contrasting ``elites`` with ``weak`` candidates (failures included).

    Each candidate is a mapping with ``code`` (str), ``fitness`` (float or None; higher is better, -inf
    or None for a failure), ``error`` (str or None), ``metrics`` (dict) and optionally ``id``, whose values
    are collected into each finding's ``evidence["candidate_ids"]``.  Returns `ContrastFinding` tuples
    ``(text, tags, evidence)``.
    """
    if not 0 < min_difference <= 1:
        raise ValueError("min_difference must lie in (0, 1]")
    findings = _error_findings(list(elites) + list(weak), min_error_count)
    # design features are contrasted between *scored* candidates only: a crash says nothing about a design
    # feature (issue 12: crashed offspring taught "shorter heuristics scored better"); failures feed the
    # error advice above instead
    def scored(cs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return [c for c in cs if not _failed(c)]

    findings += _feature_findings(scored(elites), scored(weak), min_support, min_difference)
    findings.sort(key=lambda item: item[0])
    return [finding for _, finding in findings[: max(0, max_principles)]]
