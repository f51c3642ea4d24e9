import numpy as np

from hifo.agents import hyper
from hifo.agents.code import find_constants


def test_ask_perturbs_constants_only_and_is_seeded():
    code = "def priority(item, bins):\n    return -(bins - item) ** 2.0 * 0.5\n"
    a = hyper.ask(code, "priority", 3, 0.3, np.random.default_rng(1))
    b = hyper.ask(code, "priority", 3, 0.3, np.random.default_rng(1))
    assert a == b and len(a) == 3
    for v in a:
        vals = [c.value for c in find_constants(v, "priority")]
        assert len(vals) == 2 and all(x > 0 for x in vals)  # log-normal keeps the sign
    assert hyper.ask("def priority(item, bins):\n    return bins\n", "priority", 3, 0.3, np.random.default_rng(0)) == []


def test_one_fifth_rule():
    s = hyper.HyperState(sigma=0.3)
    assert hyper.tell(s, 5, 1).sigma == 0.3  # exactly 1/5 keeps the step size
    up, down = hyper.tell(s, 4, 4), hyper.tell(s, 4, 0)
    assert up.sigma > 0.3 > down.sigma
    assert abs(down.sigma - 0.3 * np.exp(-0.25)) < 1e-12
    assert up.trials == 4 and up.successes == 4
