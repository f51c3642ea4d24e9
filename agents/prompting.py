"""Prompt rendering from the template files in ``agents/prompts/``.

Two styles: ``chat`` (instruction-tuned models: EoH/HiFo wording, one file per operator; a system
message with the constant part -- task, contract, reply format -- then the operator's request; the reply is
one ``Idea:`` line and one code block) and ``completion`` (base models such as the embedded Gemma 3 270M: a Python file of
versioned functions — FunSearch style — ending with the header and docstring of the next
version, which the model continues). Templates use ``string.Template`` ``$name``
placeholders so code braces need no escaping.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any, Sequence

PROMPT_DIR = Path(__file__).parent / "prompts"
LLM_OPERATORS = ("i1", "e1", "e2", "m1", "m2", "m3")
N_PARENTS = {"i1": 0, "e1": 2, "e2": 2, "m1": 1, "m2": 1, "m3": 1}


@lru_cache(maxsize=None)
def load_template(style: str, name: str) -> Template:
    path = PROMPT_DIR / style / f"{name}.txt"
    if not path.exists():
        raise FileNotFoundError(f"no prompt template {style}/{name}.txt in {PROMPT_DIR}")
    return Template(path.read_text())


@dataclass(frozen=True)
class ParentView:
    code: str
    thought: str
    objective: float | None
    fitness: float


@dataclass(frozen=True)
class RenderedPrompt:
    operator: str
    style: str
    messages: list[dict[str, str]]
    prefix: str  # completion style: the tail the reply continues (for code extraction)
    stop: list[str]
    versions: dict[str, str] = field(default_factory=dict)  # completion style: name -> source of v0, v1, ...


def _score_text(p: ParentView, metric: str, direction: str) -> str:
    if p.objective is None:
        return "not scored yet"
    if not math.isfinite(p.fitness):
        return "failed"
    better = "lower" if direction == "minimize" else "higher"
    return f"{metric} = {p.objective:.6g} ({better} is better)"


def _rename(code: str, entry: str, new: str) -> str:
    return code.replace(f"def {entry}(", f"def {new}(", 1)


def _strip_docstrings(code: str) -> str:
    """Completion prompts show earlier versions without their docstrings: the contract is
    stated once, on the function the model writes, and a short prompt is a fast prompt."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _strip_imports(code: str) -> str:
    return "\n".join(ln for ln in code.splitlines()
                     if not ln.startswith(("import ", "from "))).strip("\n")


# a completion ends where the model starts something other than the function body
COMPLETION_STOP = ("\ndef ", "\nclass ", "\n#", "\nif __name__", "\n@", '\n"""', "\nprint(")


# a chat reply ends with its code block: stop at the fence that closes it (the opening one is "```python")
CHAT_STOP = ("\n```\n",)


def chat_system(evaluator: Any) -> str:
    """The constant part of every chat prompt of a problem (task, contract, reply format), sent first as
    the system message: an embedded model's llama.cpp context evaluates it once and reuses it."""
    tpl = evaluator.template
    return load_template("chat", "system").substitute(
        task=evaluator.description.strip(), imports=tpl.imports.strip(), signature=tpl.signature.strip(),
        contract=textwrap.dedent(tpl.docstring).strip(), entry=tpl.name).strip() + "\n"


# completion-style operators whose new version starts from the best shown version's code (see `edit_start`)
EDIT_OPERATORS = ("i1", "m1", "m2", "m3")
EDIT_VAR = "result"


def edit_start(code: str, entry: str) -> str | None:
    """The body of ``entry`` in ``code`` (docstring dropped, indented 4), with its final ``return X``
    rewritten as ``result = X`` for the model to continue; None when the body does not end with a
    ``return`` of a value or already uses the name ``result``."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None)
    if fn is None:
        return None
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    last = body[-1] if body else None
    if not isinstance(last, ast.Return) or last.value is None:
        return None
    if any(isinstance(n, ast.Name) and n.id == EDIT_VAR for n in ast.walk(fn)):
        return None
    assign = ast.Assign(targets=[ast.Name(EDIT_VAR, ast.Store())], value=last.value, lineno=0)
    lines = [ast.unparse(n) for n in body[:-1]] + [ast.unparse(ast.fix_missing_locations(assign))]
    return textwrap.indent("\n".join(lines), "    ") + "\n"


def render_operator(
    style: str,
    operator: str,
    *,
    evaluator: Any,
    parents: Sequence[ParentView],
    principles: Sequence[str],
    directive: str,
    regime: str | None = None,
    edit: bool | None = None,
    grammar: bool = False,
) -> RenderedPrompt:
    """Build the prompt of one LLM operator (``i1``, ``e1``, ``e2``, ``m1``, ``m2``, ``m3``).

    ``regime`` (explore / balance / exploit) adds the regime's sentence for this operator
    (`hifo.agents.foresight.regime_instruction`) in front of the directive.

    ``edit`` (completion style; default: on for `EDIT_OPERATORS`): the new version starts with the best
    shown version's body, its final ``return X`` turned into ``result = X`` (`edit_start`), so a small
    model edits working code instead of writing from scratch; the continuation is parsed with that start.

    ``grammar`` (completion style): when the evaluator declares a ``slot_grammar``, the prompt message
    carries the GBNF grammar of the rest of the body (`hifo.agents.llm.grammar.grammar_for`) under the key
    ``"grammar"``; the embedded model's client decodes under it, other clients never get it."""
    from hifo.agents.foresight import regime_instruction

    if operator not in LLM_OPERATORS:
        raise ValueError(f"unknown operator {operator!r}; known: {', '.join(LLM_OPERATORS)}")
    directive = " ".join(t for t in (regime_instruction(regime, operator), directive) if t)
    tpl = evaluator.template
    entry = tpl.name
    metric, direction = evaluator.primary_metric, evaluator.direction
    if style == "chat":
        parents_block = ""
        for i, p in enumerate(parents, 1):
            parents_block += (f"No.{i} heuristic: {p.thought or '(no description)'}\n"
                              f"Score: {_score_text(p, metric, direction)}\n```python\n{p.code.strip()}\n```\n\n")
        principles_block = ""
        if principles:
            principles_block = "Design principles that helped on this and related tasks:\n" + \
                "".join(f"- {t}\n" for t in principles) + "\n"
        directive_block = f"Search directive: {directive}\n\n" if directive else ""
        # i1 with a parent: the embedded model's first samples see the best baseline as a working reference
        op_name = "i1_ref" if operator == "i1" and parents else operator
        op_text = load_template("chat", op_name).substitute(n_parents=len(parents)).strip()
        text = load_template("chat", "common").substitute(
            principles_block=principles_block, directive_block=directive_block, operator_text=op_text,
            parents_block=parents_block, entry=entry).strip() + "\n"
        return RenderedPrompt(operator, style, [{"role": "system", "content": chat_system(evaluator)},
                                                {"role": "user", "content": text}], "", list(CHAT_STOP))
    if style != "completion":
        raise ValueError(f"unknown prompt style {style!r}")
    # Completion style: versions v0..v{k-1} are the parents (the baseline for i1), worst
    # first so the best sits right above the function the model writes.
    shown = list(parents) or [ParentView(tpl.baseline_source(), "baseline", None, -math.inf)]
    shown = sorted(shown, key=lambda p: p.fitness)
    blocks = []
    versions: dict[str, str] = {}
    for i, p in enumerate(shown):
        body = _rename(_strip_imports(_strip_docstrings(p.code)), entry, f"{entry}_v{i}")
        versions[f"{entry}_v{i}"] = _rename(_strip_imports(p.code), entry, f"{entry}_v{i}")
        blocks.append(f"# score: {_score_text(p, metric, direction)}\n{body}\n")
    last = len(shown) - 1
    doc = load_template("completion", operator).substitute(entry=entry, last=last).strip()
    next_name = f"{entry}_v{len(shown)}"
    sig = tpl.signature.replace(f"def {entry}(", f"def {next_name}(", 1)
    next_def = f'{sig}\n    """{doc}\n\n' + textwrap.indent(tpl.docstring.strip(), "    ") + '\n    """\n'
    if edit is None:
        edit = operator in EDIT_OPERATORS
    start = edit_start(shown[-1].code, entry) if edit else None
    if start:
        next_def += start
    principles_comments = "".join(f"# - {t}\n" for t in principles).rstrip("\n") or "# (none yet)"
    text = load_template("completion", "frame").substitute(
        task_comment=evaluator.description.strip().replace('"""', "'''"),
        principles_comments=principles_comments, directive=directive or "(none)",
        imports=tpl.imports, parents_code="\n\n".join(blocks), next_def=next_def).rstrip("\n") + "\n"
    message = {"role": "prompt", "content": text}
    if grammar:
        from hifo.agents.llm.grammar import grammar_for

        gbnf = grammar_for(evaluator, next_def)
        if gbnf:
            message["grammar"] = gbnf
    return RenderedPrompt(operator, style, [message], next_def, list(COMPLETION_STOP), versions)


def link_versions(code: str, entry: str, versions: dict[str, str]) -> str:
    """FunSearch-style prompts show earlier versions ``entry_v0``, ``entry_v1`` ... in one file,
    so a base model's new version often calls one of them. Append the sources of the versions
    the code refers to (transitively), so the candidate is self-contained."""
    import re

    added: list[str] = []
    pending = set(re.findall(rf"\b{re.escape(entry)}_v\d+\b", code))
    done: set[str] = set()
    while pending:
        name = pending.pop()
        done.add(name)
        src = versions.get(name)
        if src is None or re.search(rf"^def {re.escape(name)}\(", code, re.M):
            continue
        added.append(src.strip())
        pending |= set(re.findall(rf"\b{re.escape(entry)}_v\d+\b", src)) - done
    return code if not added else code.rstrip("\n") + "\n\n\n" + "\n\n\n".join(added) + "\n"


def render_distill(
    style: str, *, evaluator: Any, elites: Sequence[ParentView], weak: Sequence[tuple[str, str]],
    n_principles: int = 3,
) -> RenderedPrompt:
    """Prompt asking the model for design principles. ``weak`` is (code, reason) pairs."""
    metric, direction = evaluator.primary_metric, evaluator.direction
    if style == "chat":
        elites_block = "".join(f"Score: {_score_text(p, metric, direction)}\n"
                               + (f"Idea: {' '.join(p.thought.split())[:300]}\n" if p.thought.strip() else "")
                               + f"```python\n{p.code.strip()}\n```\n\n" for p in elites)
        weak_block = "".join(f"Outcome: {why}\n```python\n{code.strip()}\n```\n\n" for code, why in weak)
        text = load_template("chat", "distill").substitute(
            task=evaluator.description.strip(), elites_block=elites_block,
            weak_block=weak_block, n_principles=n_principles)
        return RenderedPrompt("distill", style, [{"role": "user", "content": text}], "", [])
    entry = evaluator.template.name
    elites_code = "".join(f"# good, {_score_text(p, metric, direction)}\n"
                          + (f"# idea: {' '.join(p.thought.split())[:200]}\n" if p.thought.strip() else "")
                          + f"{_rename(_strip_imports(p.code), entry, f'{entry}_good{i}')}\n\n"
                          for i, p in enumerate(elites))
    weak_code = "".join(f"# bad: {why[:120]}\n{_rename(_strip_imports(code), entry, f'{entry}_bad{i}')}\n\n"
                        for i, (code, why) in enumerate(weak))
    text = load_template("completion", "distill").substitute(
        task_comment=evaluator.description.strip().replace('"""', "'''"),
        elites_code=elites_code, weak_code=weak_code).rstrip("\n") + "\n"
    return RenderedPrompt("distill", style, [{"role": "prompt", "content": text}], "# 1.",
                          ["\ndef ", "\n\n\n", "\nimport "])


def parse_principles(reply: str, prefix: str = "", limit: int = 5) -> list[str]:
    """Pull principle sentences out of a reply ("- ..." / "1. ..." / "# 2. ..." lines).

    Lines that look like code, are too short or too long, or have few letters are dropped:
    a small model's noise must not pollute the knowledge base.
    """
    import re

    text = (prefix + reply) if prefix else reply
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip().lstrip("#").strip()
        m = re.match(r"^(?:[-*•]|\d+[.)])\s+(.*)$", line)
        if not m:
            continue
        s = " ".join(m.group(1).split()).strip()
        letters = sum(c.isalpha() for c in s)
        if not (25 <= len(s) <= 300) or letters < 0.6 * len(s):
            continue
        if re.search(r"(\bdef |\breturn\b|==|\bnp\.\w+\(|\)\s*:$|;\s*$)", s):
            continue
        if len(set(s.lower().split())) < 5:
            continue
        if s not in out:
            out.append(s)
        if len(out) >= limit:
            break
    return out
