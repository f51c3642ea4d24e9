"""Deterministic repair of the faults a small model's code most often has, before evaluation.

Measured on the embedded Gemma 3 270M (issue 12): about 1 in 8 bin-packing samples scored at all; the
rest failed on undefined names (``np`` used without its import, a helper that was never written),
scalar returns where an array per bin is required, and calls to earlier versions (``priority_v3``)
that the prompt never defined, or to the function itself (endless recursion).  `repair` fixes what can
be fixed without guessing the model's intent and reports the rest, so a candidate that cannot run is
rejected without spending a sandbox evaluation:

* **missing imports** — a free name that is a well-known module alias (``np``, ``math``, ``random``,
  ``heapq``, ...) gets its import line;
* **versions** — a call to ``entry_vN`` the prompt did not show, or a call of ``entry`` inside itself,
  is redirected to the newest version the prompt showed (``link_versions`` then appends its source);
* **scalar returns** — when the template returns ``np.ndarray`` and some ``return`` yields an obvious
  scalar (a number, ``float(...)``, ``max(...)``, ``math.*(...)``, ...), the function is renamed
  ``_entry_raw`` and a wrapper broadcasts its result to the shape of the template's first array
  argument (for ``priority(item, bins)``: one score per bin, the same for every bin);
* **missing return** — a function that returns nothing while the template returns a value, and whose
  last statement assigns one name (as an edit prompt's ``result = ...`` left unfinished), returns it;
* **near-miss names** — an undefined name close to an argument or an assigned name (``priorities`` for
  ``priority``, ``bin`` plurals, difflib ratio >= 0.8) is renamed to it;
* **other free names** are reported in ``Repair.unresolved``; the caller rejects the candidate.

Everything works on the AST (``symtable`` for free names); code that does not parse is returned as is.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import re
import symtable
from dataclasses import dataclass, field

KNOWN_MODULES = {
    "np": "import numpy as np", "numpy": "import numpy", "math": "import math", "random": "import random",
    "heapq": "import heapq", "itertools": "import itertools", "collections": "import collections",
    "functools": "import functools", "statistics": "import statistics",
}
_SCALAR_CALLS = {"float", "int", "max", "min", "sum", "len", "round", "abs", "bool"}


@dataclass
class Repair:
    code: str
    fixes: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)


def _free_names(code: str) -> set[str]:
    """Names read somewhere in the module that no scope binds and that are not builtins."""
    table = symtable.symtable(code, "<candidate>", "exec")
    module_bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    free: set[str] = set()

    def walk(t: symtable.SymbolTable) -> None:
        for s in t.get_symbols():
            name = s.get_name()
            if s.is_referenced() and not (s.is_assigned() or s.is_imported() or s.is_parameter()):
                if (s.is_global() or t.get_type() == "module") and name not in module_bound:
                    free.add(name)
        for child in t.get_children():
            walk(child)

    walk(table)
    return {n for n in free if not hasattr(builtins, n)}


def _is_scalar(expr: ast.expr | None) -> bool:
    if expr is None:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.UnaryOp):
        return _is_scalar(expr.operand)
    if isinstance(expr, ast.Call):
        f = expr.func
        if isinstance(f, ast.Name) and f.id in _SCALAR_CALLS:
            return True
        return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "math"
    return False


def _array_param(signature: str) -> str | None:
    """The first ``np.ndarray`` parameter of a template whose function returns ``np.ndarray``."""
    try:
        fn = ast.parse(signature.rstrip() + "\n    pass\n").body[0]
    except SyntaxError:
        return None
    if not isinstance(fn, ast.FunctionDef) or fn.returns is None or "ndarray" not in ast.unparse(fn.returns):
        return None
    for a in fn.args.args:
        if a.annotation is not None and "ndarray" in ast.unparse(a.annotation):
            return a.arg
    return None


class _Redirect(ast.NodeTransformer):
    def __init__(self, entry: str, known: set[str], target: str | None):
        self.entry, self.known, self.target = entry, known, target
        self.changed: list[str] = []
        self.depth = 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        inside = node.name == self.entry
        self.depth += inside
        self.generic_visit(node)
        self.depth -= inside
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        name = node.id
        unknown_version = re.fullmatch(rf"{re.escape(self.entry)}_v\d+", name) and name not in self.known
        recursion = name == self.entry and self.depth > 0 and isinstance(node.ctx, ast.Load)
        if self.target and (unknown_version or recursion):
            self.changed.append(name)
            return ast.copy_location(ast.Name(self.target, node.ctx), node)
        return node


def _rename_near_misses(code: str, names: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """Rename an undefined name to a defined one it is a near-miss of (``bin_sizes`` -> ``bins``,
    ``priorities`` -> ``priority``): argument names and names assigned anywhere in the module, with a
    similarity of at least 0.8 (difflib) or a plural/singular pair.  Returns the code and the renames."""
    tree = ast.parse(code)
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef):
            bound.add(node.name)
    renames: dict[str, str] = {}
    for n in names:
        plural = [b for b in bound if b in (n + "s", n + "es", n[:-1], n[:-2], n[:-3] + "y") and len(b) > 2]
        close = plural or difflib.get_close_matches(n, sorted(bound), n=1, cutoff=0.8)
        if close:
            renames[n] = sorted(close)[0]
    if not renames:
        return code, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in renames:
            node.id = renames[node.id]
    return ast.unparse(tree) + "\n", sorted(renames.items())


def repair(code: str, entry: str, signature: str, versions: dict[str, str] | None = None) -> Repair:
    """Fix what can be fixed in ``code`` (see the module docstring); never raises on bad input."""
    versions = versions or {}
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return Repair(code)
    fixes: list[str] = []
    newest = max(versions, key=lambda v: int(v.rsplit("_v", 1)[1]), default=None)
    red = _Redirect(entry, set(versions), newest)
    tree = red.visit(tree)
    if red.changed:
        fixes.append(f"redirected {', '.join(sorted(set(red.changed)))} to {newest}")
    fn0 = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None)
    if fn0 is not None and "->" in signature and not signature.rstrip().endswith("-> None:") \
            and not any(isinstance(r, ast.Return) for r in ast.walk(fn0)):
        last = fn0.body[-1]
        if isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.targets[0], ast.Name):
            name = last.targets[0].id
            fn0.body.append(ast.Return(ast.Name(name, ast.Load())))
            ast.fix_missing_locations(tree)
            fixes.append(f"added the missing final return {name}")
    arr = _array_param(signature)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None)
    if arr and fn is not None and any(_is_scalar(r.value) for r in ast.walk(fn) if isinstance(r, ast.Return)):
        fn.name = f"_{entry}_raw"
        args = ", ".join(a.arg for a in fn.args.args)
        wrapper = ast.parse(
            f"def {entry}({args}):\n"
            f"    return np.broadcast_to(np.asarray(_{entry}_raw({args}), dtype=float), np.shape({arr})).copy()\n"
        ).body[0]
        tree.body.insert(tree.body.index(fn) + 1, wrapper)
        fixes.append(f"broadcast scalar return to the shape of {arr}")
    out = ast.unparse(tree) + "\n"
    try:
        free = _free_names(out)
    except SyntaxError:
        return Repair(code)
    free -= set(versions)  # link_versions appends the sources of the versions it calls
    imports = [KNOWN_MODULES[n] for n in sorted(free) if n in KNOWN_MODULES]
    if imports:
        out = "\n".join(imports) + "\n" + out
        fixes.append("added " + "; ".join(imports))
    unresolved = sorted(n for n in free if n not in KNOWN_MODULES)
    if unresolved:
        out, renamed = _rename_near_misses(out, unresolved)
        if renamed:
            fixes.append("renamed undefined " + ", ".join(f"{a} to {b}" for a, b in renamed) + " (closest defined name)")
            unresolved = [n for n in unresolved if n not in dict(renamed)]
    if not fixes:
        out = code
    return Repair(out, fixes, unresolved)
