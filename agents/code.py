"""Candidate source handling: extraction from model replies, static checks, normalised
AST hashing for de-duplication, a cheap code distance, and numeric-constant editing for the
hyperparameter operator.

Everything here is pure and runs in the trusted parent; nothing executes candidate code.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass

MAX_SOURCE_CHARS = 20_000

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.S)


class CodeError(ValueError):
    """A reply could not be turned into a valid candidate."""


@dataclass(frozen=True)
class Extracted:
    code: str  # imports + the entry function, ready for the sandbox
    thought: str  # the natural-language idea that came with it, if any


def _imports_of(tree: ast.Module) -> list[str]:
    out = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(ast.unparse(node))
    return out


def _longest_parsable_prefix(text: str) -> tuple[ast.Module | None, bool]:
    """Models (especially small base models) often trail off mid-statement: keep the
    longest prefix of whole lines that parses; the flag says whether that cut a body short
    (the first dropped line is indented: the last definition may have lost lines)."""
    lines = text.splitlines()
    for end in range(len(lines), 0, -1):
        chunk = "\n".join(lines[:end])
        try:
            return ast.parse(chunk), end < len(lines) and lines[end][:1] in (" ", "\t")
        except SyntaxError:
            continue
    return None, True


def _find_function(tree: ast.Module, entry: str, fallback_any: bool, truncated: bool = False) -> ast.FunctionDef | None:
    """The last complete definition of ``entry``: an instruction model often shows a first attempt, then a
    corrected one. When the text was cut (``truncated``) the last definition may have lost lines, so the one
    before it is taken when there is one."""
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    named = [f for f in funcs if f.name == entry]
    if named:
        return named[-2] if truncated and len(named) > 1 and named[-1] is funcs[-1] else named[-1]
    # FunSearch-style prompts ask for `priority_v2`; accept versioned names too.
    versioned = [f for f in funcs if re.fullmatch(rf"{re.escape(entry)}_v\d+", f.name)]
    if versioned:
        return versioned[-1]
    if fallback_any and len(funcs) == 1:
        return funcs[0]
    return None


_IDEA = re.compile(r"^[ \t>*_#-]*idea[*_]*[ \t]*[:：][*_ \t]*\n?[ \t]*(\S.{2,600}?)[ \t*_]*$", re.I | re.M)


def reply_thought(reply: str) -> str:
    """The idea a reply states: an ``Idea: ...`` line (the text may start on the next line), else a
    ``{...}`` sentence (EoH's convention), else the first line of prose before the first code block."""
    m = _IDEA.search(reply)
    if m:
        return " ".join(m.group(1).split())
    m = re.search(r"\{(.{10,600}?)\}", reply, re.S)
    if m and "def " not in m.group(1):
        return " ".join(m.group(1).split())
    head = reply.split("```", 1)[0] if "```" in reply else ""
    for line in head.splitlines():
        text = line.strip(" \t*_#>-")
        if len(text) >= 10 and not text.startswith(("def ", "import ", "from ")):
            return " ".join(text.split())[:600]
    return ""


def extract_code(reply: str, entry: str, default_imports: str = "", prefix: str = "") -> Extracted:
    """Turn a model reply into candidate source defining ``entry``.

    Handles fenced blocks (```python ... ```), bare code after prose, completion-style
    continuations (``prefix`` is the prompt tail the reply continues, e.g. ``def f(...):``
    plus docstring), truncated trailing lines, versioned names (``priority_v3``) and helper
    functions defined next to the entry (kept). Raises :class:`CodeError` with a reason.
    """
    if len(reply) > MAX_SOURCE_CHARS * 4:
        reply = reply[: MAX_SOURCE_CHARS * 4]
    thought = reply_thought(reply)
    candidates: list[str] = []
    if prefix:
        candidates.append(prefix + reply)
    fences = [body for lang, body in _FENCE.findall(reply) if lang.lower() in ("", "python", "py", "python3")]
    # the last block that defines the entry first, then the other blocks that do, then the rest
    with_entry = [b for b in fences if re.search(rf"^\s*def {re.escape(entry)}\b", b, re.M)]
    candidates.extend(with_entry[::-1] + [b for b in fences if b not in with_entry])
    idx = reply.find("def ")
    if idx >= 0:
        start = reply.rfind("\n", 0, idx) + 1
        # include import lines written just before the def
        head = reply[:start]
        imports = [ln for ln in head.splitlines() if re.match(r"\s*(import|from)\s+\w", ln)]
        candidates.append("\n".join(ln.strip() for ln in imports) + "\n" + reply[start:])
    candidates.append(reply)
    last_reason = "no function definition found in the reply"
    for text in candidates:
        tree, truncated = _longest_parsable_prefix(text.replace("\t", "    "))
        if tree is None:
            last_reason = "reply is not valid Python"
            continue
        func = _find_function(tree, entry, fallback_any=True, truncated=truncated)
        if func is None:
            last_reason = f"no function named {entry!r} in the reply"
            continue
        func.name = entry
        helpers = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n is not func
                   and not re.fullmatch(rf"{re.escape(entry)}(_v\d+)?", n.name)]
        body_src = "\n\n\n".join(ast.unparse(n) for n in helpers + [func])
        imports = list(dict.fromkeys([*default_imports.splitlines(), *_imports_of(tree)]))
        imports = [i for i in imports if i.strip()]
        code = ("\n".join(imports) + "\n\n\n" if imports else "") + body_src + "\n"
        check_source(code, entry)
        if not thought:
            doc = ast.get_docstring(func) or ""
            thought = " ".join(doc.split())[:300]
        return Extracted(code=code, thought=thought)
    raise CodeError(last_reason)


def check_source(code: str, entry: str, arg_names: list[str] | None = None) -> ast.FunctionDef:
    """Static layer of the sandbox, run in the parent before anything is executed."""
    if len(code) > MAX_SOURCE_CHARS:
        raise CodeError(f"source is {len(code)} characters, over the {MAX_SOURCE_CHARS} cap")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise CodeError(f"syntax error: {exc.msg} (line {exc.lineno})") from None
    try:  # the compiler catches what the parser lets through ('continue' outside a loop, ...)
        compile(tree, "<candidate>", "exec")
    except SyntaxError as exc:
        raise CodeError(f"syntax error: {exc.msg} (line {exc.lineno})") from None
    func = _find_function(tree, entry, fallback_any=False)
    if func is None or func.name != entry:
        raise CodeError(f"no top-level function named {entry!r}")
    if arg_names is not None:
        got = [a.arg for a in func.args.args]
        if len(got) != len(arg_names):
            raise CodeError(f"{entry} takes {len(got)} arguments, expected {len(arg_names)} ({', '.join(arg_names)})")
    body = [n for n in func.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if not body:
        raise CodeError(f"{entry} has an empty body")
    return func


class _Normaliser(ast.NodeTransformer):
    """Renames locals and drops docstrings so cosmetic variants hash equal."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _rename(self, name: str) -> str:
        if name not in self.names:
            self.names[name] = f"v{len(self.names)}"
        return self.names[name]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = "f"
        if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            node.body = node.body[1:] or [ast.Pass()]
        node.returns = None
        for a in node.args.args:
            a.arg = self._rename(a.arg)
            a.annotation = None
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Store) or node.id in self.names:
            node.id = self._rename(node.id)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, float) and node.value.is_integer():
            node.value = int(node.value)  # 1.0 and 1 behave alike here
        return node


def normalized_hash(code: str) -> str:
    """Hash of the code with docstrings, comments, annotations and local names removed."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return hashlib.sha256(code.encode()).hexdigest()[:16]
    tree.body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    tree = _Normaliser().visit(tree)
    return hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest()[:16]


def code_tokens(code: str) -> set[str]:
    """Bag of normalised AST node/operator tokens (3-grams over a pre-order walk)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set(code.split())
    tree.body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    tree = _Normaliser().visit(tree)
    seq = []
    for node in ast.walk(tree):
        label = type(node).__name__
        if isinstance(node, ast.Attribute):
            label += "." + node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            label += ":" + node.func.id
        seq.append(label)
    return {"|".join(seq[i:i + 3]) for i in range(max(1, len(seq) - 2))}


def code_distance(a: str, b: str) -> float:
    """Jaccard distance between :func:`code_tokens` sets, in [0, 1]."""
    ta, tb = code_tokens(a), code_tokens(b)
    if not ta and not tb:
        return 0.0
    return 1.0 - len(ta & tb) / len(ta | tb)


# ---- numeric constants (hyperparameter operator) -------------------------------------

@dataclass(frozen=True)
class Constant:
    index: int
    value: float
    is_int: bool
    lineno: int


def _tunable(node: ast.Constant, parent: ast.AST | None) -> bool:
    if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
        return False
    if isinstance(parent, (ast.Subscript, ast.Slice)):
        return False  # indices and slice bounds are structure, not hyperparameters
    if isinstance(node.value, int) and node.value in (0, 1, -1) and not isinstance(parent, ast.BinOp):
        return False
    return True


def _constant_nodes(tree: ast.AST) -> list[ast.Constant]:
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and _tunable(node, parents.get(id(node))):
            found.append(node)
    found.sort(key=lambda n: (n.lineno, n.col_offset))
    return found


def find_constants(code: str, entry: str | None = None) -> list[Constant]:
    """Numeric literals that look like tunable hyperparameters, in source order."""
    tree = ast.parse(code)
    root: ast.AST = tree
    if entry:
        for n in tree.body:
            if isinstance(n, ast.FunctionDef) and n.name == entry:
                root = n
    # _constant_nodes keeps numeric constants only
    return [Constant(i, float(n.value), isinstance(n.value, int), n.lineno)  # type: ignore[arg-type]
            for i, n in enumerate(_constant_nodes(root))]


def substitute_constants(code: str, values: list[float], entry: str | None = None) -> str:
    """Return ``code`` with its tunable constants replaced by ``values`` (same order as
    :func:`find_constants`). Integers stay integers (rounded)."""
    tree = ast.parse(code)
    root: ast.AST = tree
    if entry:
        for n in tree.body:
            if isinstance(n, ast.FunctionDef) and n.name == entry:
                root = n
    nodes = _constant_nodes(root)
    if len(nodes) != len(values):
        raise ValueError(f"expected {len(nodes)} values, got {len(values)}")
    for node, v in zip(nodes, values):
        if isinstance(node.value, int):
            node.value = int(round(v))
        else:
            node.value = float(f"{v:.6g}")
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
