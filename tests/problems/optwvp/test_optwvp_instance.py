"""The DeCoST instance generator and the JSON format."""

import numpy as np
import pytest

from hifo.problems.optwvp import generate_instance, horizon_for, read_json, write_json


def test_horizon_per_size_follows_the_official_budgets():
    # OPTWVPEnv.get_random_problems: max_budget 10 (n=50), 4 + 100/400 * n/2 (n=100), 50 (n=500)
    assert horizon_for(50) == 1000.0
    assert horizon_for(100) == 1650.0
    assert horizon_for(500) == 5000.0
    assert horizon_for(20) == 650.0  # the commented formula, for a size the code leaves undefined


@pytest.mark.parametrize("n", [20, 50, 100])
def test_windows_are_laid_along_a_permutation_with_width_w_over_4(n):
    W = 100.0
    inst = generate_instance(n, seed=7, window=W)
    e, l = inst.tw_open[1:], inst.tw_close[1:]
    assert np.allclose(l - e, W / 4)  # the width the released data carry
    assert inst.tw_open[0] == 0.0 and inst.tw_close[0] == inst.horizon == horizon_for(n)
    assert inst.profit[0] == 0.0 and np.all((inst.profit[1:] >= 0) & (inst.profit[1:] < 10))
    assert np.all((inst.coords >= 0) & (inst.coords < 100))
    # e = D_k - W/2 + U * W/2 with D_k the length of the permutation's prefix to customer k
    perm = np.asarray(inst.meta["permutation"])
    assert sorted(perm.tolist()) == list(range(1, n))
    order = np.concatenate(([0], perm))
    D = np.cumsum(inst.travel[order[:-1], order[1:]])
    assert np.all(inst.tw_open[perm] >= D - W / 2 - 1e-9)
    assert np.all(inst.tw_open[perm] <= D + 1e-9)

def test_generator_is_seeded():
    a, b, c = generate_instance(50, 3), generate_instance(50, 3), generate_instance(50, 4)
    assert np.array_equal(a.coords, b.coords) and np.array_equal(a.tw_open, b.tw_open)
    assert not np.array_equal(a.coords, c.coords)


def test_json_round_trip(tmp_path):
    insts = [generate_instance(20, s) for s in range(3)]
    path = tmp_path / "set.json"
    write_json(insts, path)
    back = read_json(path)
    assert [i.name for i in back] == [i.name for i in insts]
    for x, y in zip(insts, back):
        for key in ("coords", "profit", "tw_open", "tw_close"):
            assert np.array_equal(getattr(x, key), getattr(y, key))
        assert x.horizon == y.horizon
    write_json(insts[0], path)
    assert len(read_json(path)) == 1
