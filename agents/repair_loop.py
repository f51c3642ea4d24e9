"""Error-feedback repair (issue 12, item 5): a model-written candidate that fails a static check with
a fixable error goes back to the model once, with its code and the (scrubbed, short) error, in the
same generation.  The extra call goes through the run's client like every other one, so it counts
against ``--max-calls``/``--max-cost``, is recorded in a cassette and served from the response cache
on ``hifo resume`` (a resumed generation does not call the model again).

What counts as fixable: undefined names left after the deterministic `repair`, syntax errors (code that
is not valid Python), code without the entry function, a wrong number of arguments, an empty body.
A reply without any code (a refusal, prose) is not repaired: there is nothing to feed back.  Errors
raised while the candidate *runs* in the sandbox (exceptions, a wrong return shape at run time) are fed
back after evaluation by `hifo.agents.runtime_repair`, with the sandbox's error text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hifo.agents.code import CodeError, extract_code
from hifo.agents.prompting import link_versions
from hifo.agents.repair import repair
from hifo.sandbox._scrub import scrub

ERROR_CHARS = 300  # how much of an error message goes back to the model
_FIXABLE = ("undefined name", "syntax error", "not valid python", "no function named", "arguments, expected",
            "empty body", "import", "not allowed", "forbidden")


@dataclass
class Parsed:
    """One reply, parsed: ``code`` is set when it is ready for evaluation, else ``error`` says why not
    (``code`` then holds what was extracted, if anything, for the record)."""

    code: str | None
    thought: str = ""
    error: str | None = None
    fixes: list[str] = field(default_factory=list)
    raw: str = ""  # the code to show the model in a repair prompt
    has_code: bool = True  # False: a chat reply with no code block and no def (a refusal, prose)


def parse_reply(text: str, ev: Any, pr: Any) -> Parsed:
    """Extract, statically repair and link the code of one reply (as `SearchNodes.propose` did inline)."""
    tpl = ev.template
    try:
        ex = extract_code(text, tpl.name, tpl.imports, pr.prefix)
    except CodeError as exc:
        # a completion-style reply continues the def line of the prompt: it is code by construction
        return Parsed(code=None, error=str(exc), raw=text[:4000],
                      has_code=bool(pr.prefix) or "```" in text or "def " in text)
    fixed = repair(ex.code, tpl.name, tpl.signature, pr.versions)
    if fixed.unresolved:  # it would fail at its first call: not worth a sandbox evaluation
        return Parsed(code=None, thought=ex.thought, raw=ex.code,
                      error=f"undefined name(s): {', '.join(fixed.unresolved)}; only {_known_names(tpl)}, the "
                            "imported modules and names the code itself assigns exist")
    code = link_versions(fixed.code, tpl.name, pr.versions) if pr.versions else fixed.code
    return Parsed(code=code, thought=ex.thought, fixes=fixed.fixes, raw=code)


def _known_names(tpl: Any) -> str:
    """The template's argument names, for the error fed back on an undefined name."""
    import re

    m = re.search(r"\((.*)\)", tpl.signature, re.S)
    args = [a.split(":")[0].split("=")[0].strip() for a in (m.group(1).split(",") if m else [])]
    return "the arguments " + ", ".join(a for a in args if a) if any(args) else "the arguments"


def fixable(parsed: Parsed) -> bool:
    """Worth one repair call: there is code to show and the error is one the model can fix."""
    if parsed.code is not None or not parsed.error:
        return False
    if not parsed.has_code:
        return False  # no code in the reply at all
    low = parsed.error.lower()
    return any(k in low for k in _FIXABLE)


def _follow_up(style: str, messages: list[dict[str, str]], reply: str, chat_turn: str, comment: str,
               prefix: str) -> list[dict[str, str]]:
    """The original prompt, the model's reply and what to do about it: in chat a user turn after the reply; in
    completion style the reply, a comment and the same def line again (a grammar on the prompt still applies)."""
    if style == "chat":
        return [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": chat_turn}]
    text = messages[-1]["content"] + reply.rstrip() + "\n\n\n" + comment + prefix
    return [{**messages[-1], "content": text}]


def repair_messages(style: str, messages: list[dict[str, str]], reply: str, parsed: Parsed, entry: str,
                    prefix: str) -> list[dict[str, str]]:
    """The prompt of the repair call: the original prompt, the failing code and its short error."""
    error = " ".join((scrub(parsed.error or "", limit=ERROR_CHARS) or "").split())[:ERROR_CHARS]
    return _follow_up(style, messages, reply,
                      f"That code fails: {error}\nFix it. Reply with the complete corrected function `{entry}` (and "
                      "any helpers and imports it needs) in one ```python block.",
                      f"# The function above fails: {error}\n# Fixed:\n", prefix)


def redraw_messages(style: str, messages: list[dict[str, str]], reply: str, reason: str, entry: str,
                    prefix: str) -> list[dict[str, str]]:
    """The prompt of a re-draw with feedback (``RunConfig.redraw_feedback``): the original prompt, the reply that
    repeated an earlier candidate, and why it was rejected, so the model is asked for a different rule instead
    of the same prompt again (where a small model tends to write the same program at any temperature)."""
    why = " ".join(reason.split())[:ERROR_CHARS]
    return _follow_up(style, messages, reply,
                      f"That program is not new ({why}), so it was not evaluated. Write a different rule: change "
                      "what the score depends on or how the terms combine, not names or layout. Reply with one idea "
                      f"line and the complete function `{entry}` in one ```python block.",
                      f"# The function above is not new ({why}).\n# A different rule (not a renaming):\n", prefix)
