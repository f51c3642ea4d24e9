from types import SimpleNamespace

import pytest

from hifo.agents.code import extract_code
from hifo.agents.prompting import ParentView, parse_principles, render_distill, render_operator
from hifo.evaluators.base import FunctionTemplate

TPL = FunctionTemplate(name="priority", signature="def priority(item: float, bins: np.ndarray) -> np.ndarray:",
                       docstring="Score each feasible bin.\n\nReturns: one score per bin.",
                       baseline_body="    return -(bins - item)\n")
EV = SimpleNamespace(template=TPL, primary_metric="excess_percent", direction="minimize",
                     description="Online bin packing: choose the bin for each item.")
P1 = ParentView("import numpy as np\n\ndef priority(item, bins):\n    return -(bins - item)\n", "best fit", 4.0, -4.0)
P2 = ParentView("def priority(item, bins):\n    return bins * 0.0\n", "first fit", 5.0, -5.0)


def test_chat_e1_has_parents_principles_directive_and_header():
    pr = render_operator("chat", "e1", evaluator=EV, parents=[P1, P2], principles=["Prefer tight fits."],
                         directive="Try something new.")
    system, user = pr.messages
    assert (system["role"], user["role"]) == ("system", "user")
    text = user["content"]
    assert "totally different" in text and "No.2 heuristic: first fit" in text
    assert "- Prefer tight fits." in text and "Search directive: Try something new." in text
    assert "excess_percent = 4 (lower is better)" in text
    # the constant part (task, header, contract, reply format) is the system message: the same for every
    # operator, parent and principle, so llama.cpp reuses its evaluation from one call to the next
    assert "def priority(item: float, bins: np.ndarray) -> np.ndarray:" in system["content"]
    assert "Score each feasible bin." in system["content"] and "Idea:" in system["content"]
    other = render_operator("chat", "m1", evaluator=EV, parents=[P2], principles=[], directive="")
    assert other.messages[0] == system
    assert pr.stop == ["\n```\n"]  # the reply ends with its code block
    assert "$" not in text + system["content"]  # every placeholder substituted


@pytest.mark.parametrize("op", ["i1", "e1", "e2", "m1", "m2", "m3"])
def test_every_operator_renders_in_both_styles(op):
    parents = {"i1": [], "e1": [P1, P2], "e2": [P1, P2]}.get(op, [P1])
    for style in ("chat", "completion"):
        pr = render_operator(style, op, evaluator=EV, parents=parents, principles=[], directive="")
        assert pr.messages and "$" not in pr.messages[0]["content"]


def test_completion_prompt_orders_versions_and_extracts_continuation():
    pr = render_operator("completion", "m1", evaluator=EV, parents=[P2, P1], principles=["Prefer tight fits."],
                         directive="Refine.")
    text = pr.messages[0]["content"]
    assert pr.messages[0]["role"] == "prompt"
    # worst first, best last, then the header of the next version
    assert text.index("def priority_v0(") < text.index("def priority_v1(") < text.index("def priority_v2(")
    # m1 is an edit operator: the new version starts from the best version's body, return -> result
    assert "# - Prefer tight fits." in text and text.endswith('"""\n    result = -(bins - item)\n')
    assert "Improved version of `priority_v1`" in text
    ex = extract_code("    return -(bins - item) ** 2\n", "priority", TPL.imports, pr.prefix)
    assert "def priority(" in ex.code and "** 2" in ex.code


def test_completion_i1_uses_baseline_when_no_parent():
    pr = render_operator("completion", "i1", evaluator=EV, parents=[], principles=[], directive="")
    assert "def priority_v0(" in pr.messages[0]["content"] and "def priority_v1(" in pr.messages[0]["content"]


def test_unknown_operator_and_style():
    with pytest.raises(ValueError):
        render_operator("chat", "x9", evaluator=EV, parents=[], principles=[], directive="")
    with pytest.raises(ValueError):
        render_operator("telepathy", "i1", evaluator=EV, parents=[], principles=[], directive="")


def test_distill_prompts_and_parsing():
    pr = render_distill("chat", evaluator=EV, elites=[P1], weak=[(P2.code, "ZeroDivisionError")])
    assert "ZeroDivisionError" in pr.messages[0]["content"]
    reply = ("- Prefer bins that the item fills almost completely, leaving little waste.\n"
             "- x = np.maximum(bins, 0)\n"
             "- ok\n"
             "2. Penalise bins that would be left with a gap too small for typical items.\n"
             "- Prefer bins that the item fills almost completely, leaving little waste.\n")
    got = parse_principles(reply)
    assert got == ["Prefer bins that the item fills almost completely, leaving little waste.",
                   "Penalise bins that would be left with a gap too small for typical items."]
    cp = render_distill("completion", evaluator=EV, elites=[P1], weak=[])
    assert cp.messages[0]["content"].endswith("# 1.\n")
    # the candidates' own descriptions are shown, and principles that transfer are asked for
    assert f"Idea: {P1.thought}" in pr.messages[0]["content"] and "different combinatorial problem" in \
        pr.messages[0]["content"]
    assert f"# idea: {P1.thought}" in cp.messages[0]["content"] and "other problems" in cp.messages[0]["content"]
    assert parse_principles(" Tight fits reduce the number of bins opened later on.\n# 2. x", cp.prefix) == \
        ["Tight fits reduce the number of bins opened later on."]


def test_completion_reply_calling_an_earlier_version_is_linked():
    from hifo.agents.prompting import link_versions

    pr = render_operator("completion", "e1", evaluator=EV, parents=[P1, P2], principles=[], directive="")
    ex = extract_code("    return priority_v1(item, bins) * 2 + 0.1\n", "priority", TPL.imports, pr.prefix)
    code = link_versions(ex.code, "priority", pr.versions)
    assert "def priority_v1(" in code and "def priority_v0(" not in code
    ns: dict = {}
    exec(compile(code, "<cand>", "exec"), ns)
    import numpy as np

    assert ns["priority"](3.0, np.array([5.0, 4.0])).tolist() == [-3.9, -1.9]


def test_edit_start_and_its_continuation():
    from hifo.agents.prompting import edit_start
    from hifo.agents.repair import repair

    code = ('def priority(item, bins):\n    """Doc."""\n    gap = bins - item\n    if item > 50:\n'
            '        return -gap\n    return -gap ** 2\n')
    assert edit_start(code, "priority") == ("    gap = bins - item\n    if item > 50:\n        return -gap\n"
                                            "    result = -gap ** 2\n")
    # nothing to start from: no final return of a value, or the name is taken
    assert edit_start("def priority(item, bins):\n    if item:\n        return bins\n    else:\n"
                      "        return -bins\n", "priority") is None
    assert edit_start("def priority(item, bins):\n    result = bins\n    return result\n", "priority") is None
    pr = render_operator("completion", "m1", evaluator=EV, parents=[P1], principles=[], directive="")
    off = render_operator("completion", "m1", evaluator=EV, parents=[P1], principles=[], directive="", edit=False)
    assert off.messages[0]["content"].endswith('"""\n') and off.prefix.endswith('"""\n')
    assert pr.prefix.endswith("    result = -(bins - item)\n") and pr.prefix.startswith(off.prefix)
    e1 = render_operator("completion", "e1", evaluator=EV, parents=[P1, P2], principles=[], directive="")
    assert e1.prefix.endswith('"""\n')  # crossover operators write from scratch
    # the model adds a term and returns; or stops at once, and the missing return is added and recorded
    ex = extract_code("    result = result + 0.1 * bins\n    return result\n", "priority", TPL.imports, pr.prefix)
    assert "result = -(bins - item)" in ex.code and "0.1 * bins" in ex.code
    ex = extract_code("\n", "priority", TPL.imports, pr.prefix)
    fixed = repair(ex.code, "priority", TPL.signature)
    assert fixed.fixes == ["added the missing final return result"] and fixed.code.rstrip().endswith("return result")


def test_chat_i1_with_a_reference_baseline():
    pr = render_operator("chat", "i1", evaluator=EV, parents=[P1], principles=[], directive="")
    user = pr.messages[-1]["content"]
    assert "baseline that works" in user and "No.1 heuristic: best fit" in user and "-(bins - item)" in user
    plain = render_operator("chat", "i1", evaluator=EV, parents=[], principles=[], directive="")
    assert "Please design a new heuristic for this task." in plain.messages[-1]["content"]
    assert "baseline" not in plain.messages[-1]["content"]
