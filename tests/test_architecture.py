"""The intended dependency direction of the whole tree, under test.

    agents ─► knowledge_base, sandbox, evaluators ─► problems
    problems import nothing of ours; the sandbox imports nothing of ours outside itself (its child
    loads it under another name); knowledge_base imports nothing but itself; evaluators never reach the
    agent; and no two modules import each other, directly or around a loop (``TYPE_CHECKING`` imports
    included: a cycle there is still a cycle for a reader and for a type checker).

The checker reads the source (``ast``), so it needs nothing installed; ``test_the_checker_catches_*``
shows that it fails when a forbidden import or a cycle is added.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agents", "evaluators", "knowledge_base", "problems", "sandbox")
# which of our packages each package may import (itself always allowed)
ALLOWED: dict[str, set[str]] = {
    "hifo": set(PACKAGES),
    "agents": {"knowledge_base", "sandbox", "evaluators", "problems"},
    "evaluators": {"problems", "sandbox"},
    "knowledge_base": set(),
    "problems": set(),
    "sandbox": set(),
}


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, module: str) -> list[list[str]]:
    """Per import statement, the names of ours (``pkg.sub``, without the ``hifo.`` prefix) it may bind:
    the module itself first, then ``module.name`` for each imported name (a submodule or not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                prefix = ".".join(base + ([node.module] if node.module else []))
                names = [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]
            else:
                names = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        ours = [n[len("hifo."):] if n.startswith("hifo.") else n for n in names]
        ours = [n for n in ours if n.split(".")[0] in PACKAGES]
        if ours:
            out.append(ours)
    return out


def scan(root: Path) -> tuple[list[str], dict[str, set[str]]]:
    """(violations of ALLOWED, module import graph) for the packages under ``root``."""
    modules: dict[str, Path] = {}
    for package in (*PACKAGES, "hifo"):
        for path in sorted((root / package).rglob("*.py")) if (root / package).is_dir() else []:
            modules[_module_name(path, root)] = path
    violations, graph = [], {}
    for module, path in modules.items():
        package = module.split(".")[0]
        targets = set()
        for statement in _imports(path, module):
            top = statement[0].split(".")[0]
            if top != package and top not in ALLOWED.get(package, set()):
                violations.append(f"{path.relative_to(root)}: {package} must not import {statement[0]}")
            for name in statement:
                # the module itself if it is one, else the package that holds the name
                target = name if name in modules else name.rsplit(".", 1)[0]
                if target in modules and target != module:
                    targets.add(target)
        graph[module] = targets
    return violations, graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), ignoring ``pkg/__init__``
    re-export edges into a package's own submodules."""
    def real(src: str, dst: str) -> bool:  # a package's __init__ importing its own parts is not a cycle
        return not dst.startswith(src + ".") and not src.startswith(dst + ".")

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if not real(v, w):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_dependency_direction_holds_for_the_whole_tree():
    violations, _ = scan(ROOT)
    assert not violations, "\n".join(violations)


def test_no_import_cycles():
    _, graph = scan(ROOT)
    assert len(graph) > 100  # the scan saw the tree
    assert not cycles(graph)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_checker_catches_a_forbidden_import(tmp_path):
    root = _tree(tmp_path, {"problems/__init__.py": "", "problems/x.py": "from hifo.agents.search import f\n",
                            "sandbox/__init__.py": "", "sandbox/y.py": "import hifo.evaluators.base\n",
                            "agents/__init__.py": "", "agents/search.py": "from hifo.sandbox import y\n"})
    violations, _ = scan(root)
    assert len(violations) == 2
    assert any("problems must not import agents.search" in v for v in violations)
    assert any("sandbox must not import evaluators.base" in v for v in violations)


def test_the_checker_catches_a_cycle_even_under_type_checking(tmp_path):
    root = _tree(tmp_path, {
        "sandbox/__init__.py": "from . import a\n",
        "sandbox/a.py": "from .b import thing\n",
        "sandbox/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import other\n"})
    _, graph = scan(root)
    assert cycles(graph) == [["sandbox.a", "sandbox.b"]]
