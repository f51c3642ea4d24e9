"""Run-time error feedback (issue 12, item 5): a model-written candidate that the sandbox ran and that
failed there (an exception, a wrong return shape or type, an infeasible solution) goes back to the model
once, with its code and the sandbox's own (scrubbed, short) error text, and the model's fix is evaluated
in the same generation.

Like the static error feedback of `hifo.agents.repair_loop`, the extra call goes through the run's client
(it counts against ``--max-calls``/``--max-cost``, is recorded in a cassette and served from the response
cache on resume), its prompt is stored with operator ``repair``, and the fix is its own candidate: id
``<failing id>x``, operator ``repair``, parent the failing candidate.  Not fed back: timeouts, memory
kills and candidates that were already a repair (one repair per reply).  A resumed run skips candidates
whose ``x`` child exists, so resume asks the model nothing twice.

The repair prompt is rebuilt from the stored prompt of the failing candidate: for completion style the
def line it continued (the text after the last ``def <entry>_v``) and the versions it showed (for linking).
"""

from __future__ import annotations

import ast
import re
from types import SimpleNamespace
from typing import Any

from hifo.agents.call_seeds import runtime_repair_seed
from hifo.agents.llm.base import BudgetExceeded, LLMError
from hifo.agents.prompting import CHAT_STOP, COMPLETION_STOP
from hifo.agents.repair_loop import Parsed, parse_reply, repair_messages
from hifo.agents.runtime import RunState, _stop_reason

_SKIP = ("timeout", "timed out", "overtime", "time limit", "memory", "not evaluated", "killed")


def runtime_fixable(c: Any) -> bool:
    """An evaluated model-written candidate that failed for a reason its code can fix."""
    if c.status != "evaluated" or c.ok or c.operator in ("baseline", "hyper", "repair") or not c.prompt_id:
        return False
    low = (c.error or "").lower()
    return bool(low) and not any(k in low for k in _SKIP)


def rendered_from_prompt(messages: list[dict[str, str]], style: str, entry: str) -> SimpleNamespace:
    """What `parse_reply` and the repair prompt need of the original prompt: ``prefix`` (the def line a
    completion continued), ``versions`` (the sources of ``entry_vN`` it showed), ``stop`` and ``messages``."""
    if style != "completion":
        return SimpleNamespace(messages=messages, prefix="", versions={}, stop=list(CHAT_STOP))
    text = messages[-1]["content"]
    cut = text.rfind(f"\ndef {entry}_v")
    prefix = text[cut + 1:] if cut >= 0 else ""
    versions: dict[str, str] = {}
    try:
        tree = ast.parse(text[:cut] if cut >= 0 else text)
    except SyntaxError:
        tree = None
    if tree is not None:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and re.fullmatch(rf"{re.escape(entry)}_v\d+", node.name):
                versions[node.name] = ast.unparse(node)
    return SimpleNamespace(messages=messages, prefix=prefix, versions=versions, stop=list(COMPLETION_STOP))


def feed_back_runtime_errors(nodes: Any, state: RunState) -> tuple[int, str | None]:
    """One repair call per failing candidate of this generation; returns (fixes sent to evaluation,
    stop reason when a budget stopped the calls)."""
    gen, store, ev = state["generation"], nodes.rt.store, nodes.ev
    entry = ev.template.name
    for attr in ("_n_fixed", "_n_repaired", "_n_repair_new"):  # a resumed run may not have run propose
        if not hasattr(nodes, attr):
            setattr(nodes, attr, 0)
    cands = store.candidates(generation=gen)
    have = {c.id for c in cands}
    prompts = {p["id"]: p for p in store.prompts(generation=gen)}
    seen: set[str] = set()
    n_new = 0
    for c in cands:
        p = prompts.get(c.prompt_id or "")
        if not runtime_fixable(c) or c.id + "x" in have or p is None or not p.get("reply"):
            continue
        pr = rendered_from_prompt(p["messages"], nodes.style, entry)
        failing = Parsed(code=None, error=f"it runs but fails: {c.error}", raw=c.code)
        messages = repair_messages(nodes.style, pr.messages, p["reply"], failing, entry, pr.prefix)
        seed = runtime_repair_seed(nodes.cfg.seed, c.id)
        try:
            rep = nodes._call(messages, seed, pr.stop)
        except BudgetExceeded as exc:
            return n_new, _stop_reason(exc)
        except LLMError as exc:
            nodes.rt.emit("model_errors", generation=gen, errors=1, calls=1, error=" ".join(str(exc).split())[:300])
            continue
        usage = rep.to_dict()
        usage.pop("text", None)
        pid = store.add_prompt(generation=gen, operator="repair", messages=messages,
                               principle_ids=c.principle_ids, reply=rep.text, usage=usage)
        fixed = parse_reply(rep.text, ev, pr)
        nodes.rt.emit("runtime_repair", generation=gen, id=c.id, error=c.error, ok=fixed.code is not None)
        child = dict(generation=gen, operator="repair", parents=[c.id], cid=c.id + "x", regime=c.regime,
                     principle_ids=c.principle_ids, prompt_id=pid, usage=usage)
        n_new += nodes._add_parsed(fixed, child, seen)
    return n_new, None
