import math

from hifo.knowledge_base import contrast_principles, extract_features


def _cand(cid, code, fitness, error=None):
    return {"id": cid, "code": code, "fitness": fitness, "error": error, "metrics": {}}


EXP_BODY = "import numpy as np\n\ndef priority(item, bins):\n    gap = bins - item\n    return np.exp(-gap * {k})\n"

ELITES = [_cand(f"e{i}", EXP_BODY.format(k=0.5 + i), -1.0 - 0.1 * i) for i in range(4)] + [
    _cand("e4", "import numpy as np\n\ndef priority(item, bins):\n    gap = bins - item\n    return -gap\n", -1.5),
]
WEAK = [
    _cand("w0", "def priority(item, bins):\n    return bins / (bins - item)\n", None,
          "Traceback (most recent call last):\nZeroDivisionError: division by zero"),
    _cand("w1", "def priority(item, bins):\n    return bins / (bins - bins)\n", math.nan),
    _cand("w2", "def priority(item, bins):\n    return item / (bins - item)\n", -math.inf,
          "RuntimeWarning: invalid value encountered in divide"),
    _cand("w3", "import numpy as np\n\ndef priority(item, bins):\n    return np.exp(bins)\n", -5.0),
    _cand("w4", "def priority(item, bins):\n    return bins\n", -4.0),
    _cand("w5", "def priority(item, bins):\n    return bins * 1000.0\n", -4.0),
]


def test_extract_features_reads_code_without_running_it():
    code = (
        "import numpy as np\nimport math\n\n"
        "def priority(item, bins, unused):\n"
        '    """Docstring."""\n'
        "    s = 0\n"
        "    for b in bins:\n"
        "        if b > item and b < 2 * item:\n"
        "            s += math.log(b) / item ** 2\n"
        "    return np.where(bins > 0, np.exp(-bins), 1e-3) * 250\n"
    )
    f = extract_features(code)
    assert f.parsed
    assert f.calls == {"np.where", "np.exp", "math.log"}
    assert (f.exp, f.log, f.division, f.power) == (True, True, True, True)
    assert f.branches == 2  # the if and np.where
    assert f.loops == 1
    assert f.comparisons == 3
    assert sorted(f.constants) == [0.0, 0.0, 0.001, 2.0, 2.0, 250.0]  # s = 0, bins > 0, …
    assert f.statements == 5  # docstring excluded
    assert f.arguments == ("item", "bins", "unused") and f.arguments_used == {"item", "bins"}
    binary = f.binary()
    assert binary["tiny_constant"] and binary["large_constant"] and not binary["arg:unused"]
    assert not extract_features("def broken(:\n").parsed
    assert not extract_features("   ").parsed


def test_contrast_states_feature_and_error_principles_deterministically():
    findings = contrast_principles(ELITES, WEAK)
    texts = [f.text for f in findings]
    # the three failures (w0-w2) feed the error advice only; design features are contrasted between the
    # scored candidates (5 elites vs w3-w5), so "divide ... scored worse", learnt from crashes, is gone
    assert texts == [
        "Avoid dividing by quantities that can be zero; guard denominators with a small epsilon "
        "(3 candidates failed with ZeroDivisionError or produced NaN).",
        "Heuristics that use the argument `item` scored better (5/5 elites vs 0/3 weak candidates).",
        "Longer heuristics scored better (median 2 vs 1 statements in elites vs weak candidates).",
    ]
    error, item, length = findings
    assert error.tags == ["contrast", "errors", "zero_division"]
    assert error.evidence["candidate_ids"] == ["w0", "w1", "w2"]
    assert error.evidence["count"] == 3
    assert "ZeroDivisionError: division by zero" in error.evidence["examples"]
    assert item.evidence["elites"] == [5, 5] and item.evidence["weak"] == [0, 3]
    assert length.evidence["elite_median"] == 2.0 and length.evidence["weak_median"] == 1.0
    assert length.evidence["p_elite_larger"] == 1.0
    for f in findings[1:]:
        assert not {"w0", "w1", "w2"} & set(f.evidence["candidate_ids"])
    text, tags, evidence = item  # unpacks as a plain tuple
    assert text == texts[1] and tags[:2] == ["contrast", "code-feature"]
    assert contrast_principles(ELITES, WEAK) == findings
    assert [f.text for f in contrast_principles(list(reversed(ELITES)), list(reversed(WEAK)))] == texts


def test_failures_alone_teach_no_design_feature():
    crashed = [_cand(f"c{i}", "def priority(item, bins):\n    if item > 0:\n        return bins / 0\n"
                     "    return bins\n", None, "ZeroDivisionError: division by zero") for i in range(4)]
    findings = contrast_principles(ELITES, crashed)
    assert [f.evidence["kind"] for f in findings] == ["error"]


def test_thresholds_and_cap():
    assert len(contrast_principles(ELITES, WEAK, max_principles=2)) == 2
    assert [f.evidence["kind"] for f in contrast_principles(ELITES, WEAK, min_error_count=4)] == ["feature", "count"]
    strict = contrast_principles(ELITES, WEAK, min_difference=0.9)  # only `item` (5/5 vs 0/3) differs that much
    assert [f.evidence["kind"] for f in strict] == ["error", "feature", "count"]
    # min_support: 5 elites use `item`, so 6 silences that finding
    assert not any(f.evidence.get("feature") == "arg:item" for f in contrast_principles(ELITES, WEAK, min_support=6))


def test_too_few_candidates_give_no_feature_findings():
    assert contrast_principles(ELITES[:1], WEAK) == contrast_principles([], WEAK)
    assert all(f.evidence["kind"] == "error" for f in contrast_principles(ELITES[:1], WEAK))
    assert contrast_principles([], []) == []


def test_error_categories():
    def failing(error):
        return [_cand(f"f{i}", "", None, error) for i in range(2)]

    cases = {
        "SyntaxError: invalid syntax": "syntax",
        "TimeoutError: wall-clock limit": "timeout",
        "MemoryError": "memory",
        "ValueError: math domain error": "log_domain",
        "RuntimeWarning: divide by zero encountered in log": "log_domain",
        "OverflowError: math range error": "overflow",
        "ValueError: operands could not be broadcast together with shapes (3,) (4,)": "shape",
        "IndexError: index 5 is out of bounds for axis 0 with size 5": "index",
        "NameError: name 'scipy' is not defined": "names",
        "TypeError: 'float' object is not iterable": "type",
        "solution is infeasible: bin 3 over capacity": "infeasible",
    }
    for error, category in cases.items():
        (finding,) = contrast_principles([], failing(error))
        assert finding.evidence["category"] == category, error
    assert contrast_principles([], failing("something odd happened")) == []
    assert contrast_principles([], failing("MemoryError")[:1]) == []  # below min_error_count


def _finding_key(f):
    return f.evidence.get("category") or f.evidence["feature"]


def test_findings_are_stable_principles_in_the_store(kb):
    def store(findings, generation):
        return {_finding_key(f): kb.add(f.text, f.tags, "bpp_online", source="contrast",
                                        provenance={"run_id": "r1", "generation": generation,
                                                    "candidate_ids": f.evidence["candidate_ids"]})
                for f in findings}

    first = store(contrast_principles(ELITES, WEAK), 1)
    # next generation: one more division failure changes the counts, not the statements
    more_weak = WEAK + [_cand("w6", "def priority(item, bins):\n    return item / bins\n", None,
                              "ZeroDivisionError: float division by zero")]
    findings = contrast_principles(ELITES, more_weak)
    assert findings[0].text.endswith("(4 candidates failed with ZeroDivisionError or produced NaN).")
    second = store(findings, 2)
    assert set(second) == set(first)
    assert all(second[k].id == first[k].id and second[k].support == 2 for k in second)
    assert len(kb.list()) == len(first)
