from hifo.agents.foresight import behaviour_diversity, code_diversity, decide, stagnation

A = "def f(a, b):\n    return a - b\n"
B = "def f(a, b):\n    import math\n    return math.exp(a) * b / (a + 1)\n"


def test_stagnation_counts_generations_without_improvement():
    assert stagnation([]) == 0
    assert stagnation([1.0]) == 0
    assert stagnation([1.0, 2.0, 2.0, 2.0]) == 2
    assert stagnation([1.0, 1.0, 3.0]) == 0


def test_behaviour_diversity_is_scale_free_and_zero_for_clones():
    assert behaviour_diversity([[1, 2], [1, 2]]) == 0.0
    d1 = behaviour_diversity([[1, 2], [2, 3]])
    d2 = behaviour_diversity([[10, 20], [20, 30]])
    assert abs(d1 - d2) < 1e-12 and d1 > 0


def test_first_generation_balances():
    d = decide(0, [], [], [], None)
    assert d.regime == "balance" and d.numbers["stagnation"] == 0


def test_stagnation_triggers_explore_with_numbers():
    d = decide(4, [-5.0, -4.0, -4.0, -4.0], [A, B], [[1, 2], [3, 1]], 0.2)
    assert d.regime == "explore"
    assert "unchanged for 2" in d.reason and d.numbers["stagnation"] == 2
    assert d.weights["e1"] > d.weights["m2"]


def test_improvement_with_diversity_exploits():
    d = decide(2, [-5.0, -4.0], [A, B], [[1, 2], [3, 1]], 0.1)
    assert d.regime == "exploit" and d.weights["hyper"] > 0


def test_code_collapse_explores():
    d = decide(2, [-5.0, -4.0], [A, A, A], [[1, 2], [3, 1], [2, 2]], 0.0)
    assert d.regime == "explore" and "code diversity" in d.reason


def test_behaviour_collapse_explores():
    d = decide(2, [-5.0, -4.0], [A, B], [[1, 2], [1, 2]], 0.0)
    assert d.regime == "explore" and "behaviour diversity" in d.reason


def test_failures_change_directive_not_regime():
    d = decide(2, [-5.0, -4.0], [A, B], [[1, 2], [3, 1]], 0.9)
    assert d.regime == "exploit" and "failed" in d.reason and "division by zero" in d.directive


def test_code_diversity_range():
    assert code_diversity([A]) == 0.0
    assert 0 < code_diversity([A, B]) <= 1
