from hifo.agents.foresight import (DIRECTIVE_POOL, ForesightConfig, REGIME_INSTRUCTIONS, behaviour_diversity,
                                   code_diversity, decide, improvement_streak, regime_instruction, stagnation)

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
    assert decide(4, [-5.0, -4.0, -4.0, -4.0], [A, B], [[1, 2], [3, 1]], 0.2).regime == "balance"  # 2 < 3
    d = decide(5, [-5.0, -4.0, -4.0, -4.0, -4.00001], [A, B], [[1, 2], [3, 1]], 0.2)
    assert d.regime == "explore"
    assert "unchanged for 3" in d.reason and d.numbers["stagnation"] == 3
    assert d.weights["e1"] > d.weights["m2"]


def test_two_improvements_in_a_row_exploit():
    assert decide(2, [-5.0, -4.0], [A, B], [[1, 2], [3, 1]], 0.1).regime == "balance"  # one improvement
    d = decide(3, [-6.0, -5.0, -4.0], [A, B], [[1, 2], [3, 1]], 0.1)
    assert d.regime == "exploit" and d.weights["hyper"] > 0 and d.numbers["improvement_streak"] == 2


def test_reference_thresholds_and_tolerance():
    cfg = ForesightConfig()
    assert (cfg.stagnation_explore, cfg.improve_tol, cfg.exploit_streak) == (3, 1e-4, 2)
    assert improvement_streak([1.0, 1.00001, 2.0, 3.0]) == 2      # a 1e-5 rise is not an improvement
    assert stagnation([1.0, 1.00001, 1.00002]) == 2


def test_directives_from_pool_and_regime_instruction_per_operator():
    seen = {decide(g, [-5.0, -4.0, -4.0, -4.0, -4.0], [A, B], [[1, 2], [3, 1]], 0.0).directive for g in range(6)}
    assert seen == set(DIRECTIVE_POOL["stagnation"])
    for regime, table in REGIME_INSTRUCTIONS.items():
        assert set(table) == {"i1", "e1", "e2", "m1", "m2", "m3"}
        assert len(set(table.values())) == 6 and regime_instruction(regime, "m1") == table["m1"]
    assert regime_instruction(None, "m1") == "" and regime_instruction("explore", "hyper") == ""


def test_code_collapse_explores():
    d = decide(2, [-5.0, -4.0], [A, A, A], [[1, 2], [3, 1], [2, 2]], 0.0)
    assert d.regime == "explore" and "code diversity" in d.reason


def test_behaviour_collapse_explores():
    d = decide(2, [-5.0, -4.0], [A, B], [[1, 2], [1, 2]], 0.0)
    assert d.regime == "explore" and "behaviour diversity" in d.reason


def test_failures_change_directive_not_regime():
    d = decide(3, [-6.0, -5.0, -4.0], [A, B], [[1, 2], [3, 1]], 0.9)
    assert d.regime == "exploit" and "failed" in d.reason and d.directive in DIRECTIVE_POOL["failures"]


def test_code_diversity_range():
    assert code_diversity([A]) == 0.0
    assert 0 < code_diversity([A, B]) <= 1
