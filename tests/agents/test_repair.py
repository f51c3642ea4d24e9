"""Deterministic repair of a small model's common faults (agents/repair.py)."""

import numpy as np

from hifo.agents.repair import repair

SIG = "def priority(item: float, bins: np.ndarray) -> np.ndarray:"
TSP_SIG = ("def select_next_node(current_node: int, destination_node: int, unvisited_nodes: np.ndarray, "
           "distance_matrix: np.ndarray) -> int:")


def _run(code, *args):
    ns = {}
    exec(compile(code, "<t>", "exec"), ns)
    return ns["priority"](*args)


def test_missing_numpy_import_is_added():
    r = repair("def priority(item, bins):\n    return -np.abs(bins - item)\n", "priority", SIG)
    assert r.code.startswith("import numpy as np") and not r.unresolved and r.fixes
    assert list(_run(r.code, 0.3, np.array([1.0, 0.5]))) == [-0.7, -0.2]


def test_scalar_return_is_broadcast_to_bins():
    code = "import math\ndef priority(item, bins):\n    if item > 0.5:\n        return 0.0\n    return -(bins - item)\n"
    r = repair(code, "priority", SIG)
    assert any("broadcast" in f for f in r.fixes)
    out = _run(r.code, 0.7, np.array([1.0, 0.9, 0.8]))
    assert out.shape == (3,) and (out == 0.0).all()
    assert list(_run(r.code, 0.2, np.array([1.0, 0.5]))) == [-0.8, -0.3]


def test_unknown_versions_and_recursion_go_to_the_newest_shown():
    versions = {"priority_v0": "def priority_v0(item, bins):\n    return -bins\n",
                "priority_v1": "def priority_v1(item, bins):\n    return bins - item\n"}
    code = "def priority(item, bins):\n    return priority_v4(item, bins) + 0.1 * priority(item, bins)\n"
    r = repair(code, "priority", SIG, versions)
    assert "priority_v4" not in r.code and "priority(item" not in r.code.replace("def priority(item", "")
    assert r.code.count("priority_v1(") == 2 and not r.unresolved


def test_unfixable_names_are_reported_and_valid_code_is_left_alone():
    r = repair("def priority(item, bins):\n    return -(bins - item) / capacity\n", "priority", SIG)
    assert r.unresolved == ["capacity"]
    good = "import numpy as np\n\n\ndef priority(item, bins):\n    gap = bins - item\n    return -gap\n"
    r = repair(good, "priority", SIG)
    assert r.code == good and not r.fixes and not r.unresolved


def test_scalar_int_returns_are_right_for_int_templates_and_bad_code_passes_through():
    code = "def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):\n" \
           "    return int(unvisited_nodes[0])\n"
    assert repair(code, "select_next_node", TSP_SIG).code == code
    assert repair("def priority(:\n", "priority", SIG).code == "def priority(:\n"
    # names bound in comprehensions, loops and helpers are not free
    code = ("import numpy as np\ndef helper(x):\n    return x * 2\ndef priority(item, bins):\n"
            "    s = [helper(b) for b in bins]\n    for k in range(2):\n        s = s\n    return np.array(s) - item\n")
    assert not repair(code, "priority", SIG).unresolved


def test_near_miss_names_are_renamed_and_recorded():
    code = ("def priority(item, bins):\n    priority = []\n    for b in bins:\n        priority.append(b - item)\n"
            "    return np.array(priorities)\n")
    r = repair(code, "priority", SIG)
    assert not r.unresolved and "renamed undefined priorities to priority (closest defined name)" in r.fixes
    assert list(_run(r.code, 0.25, np.array([1.0, 0.5]))) == [0.75, 0.25]
    r = repair("def priority(item, bins):\n    return -(bins - itm)\n", "priority", SIG)
    assert r.fixes == ["renamed undefined itm to item (closest defined name)"]
    # a name that resembles nothing defined stays an error
    r = repair("def priority(item, bins):\n    return -(bins - item) / capacity\n", "priority", SIG)
    assert r.unresolved == ["capacity"] and not r.fixes


def test_undefined_name_feedback_lists_the_arguments():
    from types import SimpleNamespace

    from hifo.agents.repair_loop import parse_reply

    tpl = SimpleNamespace(name="priority", imports="import numpy as np", signature=SIG)
    pr = SimpleNamespace(prefix="", versions={})
    got = parse_reply("```python\ndef priority(item, bins):\n    return bins / capacity\n```", SimpleNamespace(template=tpl), pr)
    assert got.code is None and got.error.startswith("undefined name(s): capacity; only the arguments item, bins")


def test_embedded_model_defaults_to_a_lower_temperature():
    from hifo.agents.config import LOCAL_TEMPERATURE, RunConfig

    assert RunConfig(problem="bpp_online", model="local").temperature == LOCAL_TEMPERATURE < 1.0
    assert RunConfig(problem="bpp_online", model="local:/m.gguf").temperature == LOCAL_TEMPERATURE
    assert RunConfig(problem="bpp_online", model="local", temperature=1.0).temperature == 1.0
    assert RunConfig(problem="bpp_online", model="openai/gpt-4o-mini").temperature == 1.0
