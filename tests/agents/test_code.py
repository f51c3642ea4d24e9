import pytest

from hifo.agents.code import (CodeError, check_source, code_distance, extract_code, find_constants, normalized_hash,
                         substitute_constants)

ENTRY = "priority"


def test_fenced_block_with_prose_and_thought():
    reply = ("Sure! {The heuristic prefers bins that the item fills almost exactly.}\n"
             "```python\nimport numpy as np\n\ndef priority(item, bins):\n    return -(bins - item)\n```\nHope it helps.")
    ex = extract_code(reply, ENTRY, "import numpy as np")
    assert "def priority(item, bins):" in ex.code
    assert ex.code.count("import numpy as np") == 1
    assert "fills almost exactly" in ex.thought
    check_source(ex.code, ENTRY)


def test_an_instruction_reply_idea_line_and_the_last_complete_definition():
    reply = ("**Idea:** Prefer bins the item nearly fills, penalising leftover space.\n\n"
             "First a sketch:\n```python\ndef priority(item, bins):\n    return bins\n```\n"
             "Better:\n```python\nimport numpy as np\ndef priority(item, bins):\n    gap = bins - item\n"
             "    return -gap ** 2\n```\nThis works because tight fits leave less waste.")
    ex = extract_code(reply, ENTRY, "import numpy as np")
    assert ex.thought == "Prefer bins the item nearly fills, penalising leftover space."
    assert "gap ** 2" in ex.code and "return bins" not in ex.code  # the last block, not the sketch
    # two definitions in one block, the second cut mid-body: the complete first one is taken
    cut = "```python\ndef priority(item, bins):\n    return -(bins - item)\n\ndef priority(item, bins):\n    s = (bins"
    assert "return -(bins - item)" in extract_code(cut, ENTRY).code
    # a closing fence cut off by the stop sequence still gives the block
    assert "-(bins - item)" in extract_code("Idea: best fit.\n```python\ndef priority(item, bins):\n"
                                            "    return -(bins - item)", ENTRY).code


def test_bare_code_after_prose_keeps_imports_and_helpers():
    reply = ("Here is my idea.\nimport math\ndef _w(x):\n    return x * 2\n\n"
             "def priority(item, bins):\n    return _w(bins) - math.e\n")
    ex = extract_code(reply, ENTRY)
    assert "import math" in ex.code and "def _w(" in ex.code


def test_completion_continuation_truncated_mid_statement():
    prefix = 'def priority_v2(item, bins):\n    """Improved version."""\n'
    reply = "    score = bins - item\n    return -score\n    x = (1 +"
    ex = extract_code(reply, ENTRY, "import numpy as np", prefix=prefix)
    assert "def priority(item, bins):" in ex.code
    assert "return -score" in ex.code


def test_versioned_name_is_renamed():
    ex = extract_code("def priority_v7(item, bins):\n    return bins\n", ENTRY)
    assert "def priority(" in ex.code and "_v7" not in ex.code


@pytest.mark.parametrize("reply", ["no code at all", "```python\ndef other(a):\n    return 1\ndef b(x): return 2\n```",
                                   "def priority(item, bins):\n    '''only a docstring'''\n"])
def test_bad_replies_raise(reply):
    with pytest.raises(CodeError):
        extract_code(reply, ENTRY)


def test_compile_time_errors_are_caught_statically():
    with pytest.raises(CodeError, match="continue"):
        check_source("def priority(a, b):\n    continue\n", ENTRY)


def test_size_cap_and_arg_check():
    with pytest.raises(CodeError):
        check_source("def priority(a, b):\n    return 1\n" + "#" * 30_000, ENTRY)
    with pytest.raises(CodeError, match="takes 1 arguments"):
        check_source("def priority(a):\n    return 1\n", ENTRY, ["item", "bins"])


def test_normalized_hash_ignores_names_docstrings_comments():
    a = "def priority(item, bins):\n    '''doc'''\n    # c\n    s = bins - item\n    return -s\n"
    b = "import numpy as np\ndef priority(x, caps):\n    diff = caps - x\n    return -diff\n"
    c = "def priority(item, bins):\n    s = bins + item\n    return -s\n"
    assert normalized_hash(a) == normalized_hash(b)
    assert normalized_hash(a) != normalized_hash(c)
    assert code_distance(a, b) == 0.0
    assert 0.0 < code_distance(a, c) <= 1.0


def test_constants_round_trip():
    code = "def priority(item, bins):\n    x = bins[0] * 0.5 + 3\n    return x ** 2.0 - item / 10\n"
    consts = find_constants(code, ENTRY)
    assert [c.value for c in consts] == [0.5, 3.0, 2.0, 10.0]  # bins[0] index is structure, not a constant
    new = substitute_constants(code, [0.25, 4.4, 3.0, 7.0], ENTRY)
    assert [c.value for c in find_constants(new, ENTRY)] == [0.25, 4.0, 3.0, 7.0]  # ints stay ints
    with pytest.raises(ValueError):
        substitute_constants(code, [1.0], ENTRY)
