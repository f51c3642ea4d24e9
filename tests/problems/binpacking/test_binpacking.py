"""hifo.problems.binpacking: FunSearch's online loop, the packing check, readers, generator."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hifo.problems.binpacking import (
    BinPackingInstance,
    InvalidPacking,
    bin_loads,
    check_priorities,
    count_bins,
    excess_percent,
    l1_bound,
    online_pack,
    read_funsearch_json,
    read_optima_csv,
    read_orlib,
    validate_assignment,
    weibull_instance,
    weibull_instances,
)

SHARED = Path(__file__).resolve().parents[4] / "shared" / "data"
PACKAGE_DATA = Path(__file__).resolve().parents[3] / "evaluators" / "data" / "binpacking"
needs_shared = pytest.mark.skipif(not (SHARED / "optima.csv").exists(), reason="shared data not present")


def best_fit(item, bins):
    return -(bins - item)


def reference_loop(priority, items, capacity):
    """FunSearch's loop written out with Python lists, to compare against."""
    remaining = [capacity] * len(items)
    chosen = []
    for item in items:
        feasible = [j for j, r in enumerate(remaining) if r - item >= 0]
        scores = priority(item, np.array([remaining[j] for j in feasible]))
        j = feasible[int(np.argmax(scores))]
        remaining[j] -= item
        chosen.append(j)
    return chosen, sum(1 for r in remaining if r != capacity)


def test_best_fit_by_hand():
    # 6 -> bin 0 (4 left); 5 does not fit bin 0 -> bin 1; 4 fills bin 0 exactly; 3 -> bin 1.
    assignment = online_pack(best_fit, [6, 5, 4, 3], 10)
    assert assignment.tolist() == [0, 1, 0, 1]
    assert validate_assignment([6, 5, 4, 3], 10, assignment) == 2


def test_heuristic_sees_feasible_bins_in_index_order():
    seen = []

    def recorder(item, bins):
        seen.append((item, bins.tolist(), bins.dtype))
        return np.zeros(len(bins))  # all tie: the first feasible bin wins

    online_pack(recorder, [7, 3, 8, 2], 10)
    # bins 0..3 start at 10; 7 -> bin 0 (3 left); 3 fits bin 0 exactly (3 >= 3) -> bin 0 (0 left);
    # 8 -> bin 1; 2 -> bin 1 (2 left after 8) since bin 0 is full.
    assert [s[:2] for s in seen] == [
        (7, [10, 10, 10, 10]),
        (3, [3, 10, 10, 10]),
        (8, [10, 10, 10]),
        (2, [2, 10, 10]),
    ]
    assert all(s[2] == np.int64 for s in seen)


def test_first_highest_score_wins():
    def prefer_last_two(item, bins):
        scores = np.zeros(len(bins))
        scores[-2:] = 5.0  # a tie between the last two feasible bins
        return scores

    assert online_pack(prefer_last_two, [1], 10).tolist() == [0]  # one feasible bin only
    assert online_pack(prefer_last_two, [1, 1, 1], 10).tolist() == [1, 1, 1]


def test_matches_reference_loop_on_weibull():
    inst = weibull_instance(300, seed=7)
    rng_scores = np.random.default_rng(0)

    def noisy(item, bins):
        return -(bins - item) + rng_scores.integers(0, 3, len(bins))

    for heuristic in (best_fit, noisy):
        rng_scores = np.random.default_rng(0)
        ours = online_pack(heuristic, inst.items, inst.capacity).tolist()
        rng_scores = np.random.default_rng(0)
        theirs, used = reference_loop(heuristic, inst.items, inst.capacity)
        assert ours == theirs
        assert validate_assignment(inst.items, inst.capacity, ours) == used


def test_heuristic_cannot_change_the_state_it_is_shown():
    def vandal(item, bins):
        scores = -(bins - item)
        bins[:] = 0  # writes to its own copy only
        return scores

    assert online_pack(vandal, [6, 5, 4, 3], 10).tolist() == [0, 1, 0, 1]


def test_decimal_items_use_float_bins():
    dtypes = []

    def spy(item, bins):
        dtypes.append(bins.dtype)
        return -(bins - item)

    assignment = online_pack(spy, [0.5, 0.25, 0.25], 1.0)
    assert set(dtypes) == {np.dtype(np.float64)}
    assert validate_assignment([0.5, 0.25, 0.25], 1.0, assignment) == 1


@pytest.mark.parametrize("bad, reason", [
    (lambda item, bins: np.full(len(bins), np.nan), "finite"),
    (lambda item, bins: np.where(bins > 5, np.inf, 0.0), "finite"),
    (lambda item, bins: np.zeros(len(bins) + 1), "shape"),
    (lambda item, bins: np.zeros((len(bins), 1)), "shape"),
    (lambda item, bins: 1.0, "shape"),
    (lambda item, bins: ["a"] * len(bins), "numbers"),
    (lambda item, bins: [[1], [1, 2]], "numpy cannot convert"),
    (lambda item, bins: None, "numbers"),
])
def test_malformed_priorities_are_rejected(bad, reason):
    with pytest.raises(ValueError, match=reason) as info:
        online_pack(bad, [6, 5, 4, 3], 10)
    assert "item 0" in str(info.value)


def test_check_priorities_accepts_lists_and_ints():
    assert check_priorities([3, 1, 2], 3).tolist() == [3, 1, 2]
    assert check_priorities(np.array([True, False]), 2).dtype == bool


def test_heuristic_exceptions_propagate():
    def broken(item, bins):
        raise ZeroDivisionError("boom")

    with pytest.raises(ZeroDivisionError):
        online_pack(broken, [1, 2], 10)


@pytest.mark.parametrize("assignment, reason", [
    ([0, 0, 0, 1], "over capacity"),            # 6 + 5 + 4 > 10
    ([0, 1, 0], "expected 4"),
    ([0, 1, 0, 4], "outside 0..3"),
    ([0, 1, 0, -1], "outside 0..3"),
    ([0.0, 1.0, 0.0, 1.0], "integers"),
    ([True, False, True, False], "integers"),
    ("0101", "list of bin indices"),
    (None, "list of bin indices"),
    ([[0, 1], [0, 1]], "expected 4"),
])
def test_invalid_assignments_are_rejected(assignment, reason):
    with pytest.raises(InvalidPacking, match=reason):
        validate_assignment([6, 5, 4, 3], 10, assignment)


def test_loads_and_counts():
    loads = bin_loads([6, 5, 4, 3], 10, [0, 1, 0, 3])
    assert loads.tolist() == [10, 5, 0, 3]
    assert validate_assignment([6, 5, 4, 3], 10, [0, 1, 0, 3]) == 3
    assert count_bins(best_fit, [6, 5, 4, 3], 10) == 2


def test_l1_bound_and_excess():
    assert l1_bound([50, 50, 1], 100) == 2
    assert l1_bound([50, 50], 100) == 1
    assert l1_bound([33.3, 33.3, 33.4], 100.0) == 1  # float noise must not add a bin
    assert l1_bound([33.3, 33.3, 33.5], 100.0) == 2
    assert excess_percent(105, 100) == pytest.approx(5.0)
    with pytest.raises(ValueError):
        excess_percent(1, 0)


def test_instance_validation():
    with pytest.raises(ValueError, match="outside"):
        BinPackingInstance("x", 10, (11,))
    with pytest.raises(ValueError, match="outside"):
        BinPackingInstance("x", 10, (0,))
    with pytest.raises(ValueError, match="at least one"):
        BinPackingInstance("x", 10, ())


def test_weibull_generator():
    a, b = weibull_instance(20000, seed=3), weibull_instance(20000, seed=3)
    assert a.items == b.items and a.capacity == 100
    assert weibull_instance(50, seed=4).items != weibull_instance(50, seed=3).items[:50]
    sizes = np.array(a.items)
    assert all(type(x) is int for x in a.items[:10])
    assert sizes.min() >= 1 and sizes.max() <= 100
    assert abs(sizes.mean() - 45 * math.gamma(1 + 1 / 3)) < 0.5  # Weibull(3, 45) mean, 40.18
    assert set(weibull_instance(200, 0, scale=0.01).items) == {1}      # clipped below at 1
    assert max(weibull_instance(200, 0, scale=500).items) == 100       # clipped at capacity
    names = [i.name for i in weibull_instances(3, 10, seed=5)]
    assert names == ["weibull_10_0", "weibull_10_1", "weibull_10_2"]
    assert weibull_instances(2, 10, seed=5)[1].items == weibull_instance(10, 6).items


def test_read_funsearch_json():
    weibull = read_funsearch_json(PACKAGE_DATA / "weibull_5k_funsearch.json")
    or3 = read_funsearch_json(PACKAGE_DATA / "or3_funsearch.json")
    assert [i.name for i in weibull] == [f"test_{k}" for k in range(5)]
    assert {i.num_items for i in weibull} == {5000} and {i.capacity for i in weibull} == {100}
    assert len(or3) == 20 and or3[0].name == "u500_00" and or3[0].capacity == 150
    assert sum(i.l1_bound for i in or3) / 20 == pytest.approx(201.2)


@needs_shared
def test_read_orlib_and_optima():
    optima = read_optima_csv(SHARED / "optima.csv")
    assert len(optima) == 160 and optima["u500_00"] == 198 and optima["u120_08"] == 50
    binpack3 = read_orlib(SHARED / "binpacking" / "binpack3.txt", optima)
    or3 = read_funsearch_json(PACKAGE_DATA / "or3_funsearch.json")
    assert [(i.name, i.capacity, i.items) for i in binpack3] == [(i.name, i.capacity, i.items) for i in or3]
    assert binpack3[0].known_optimum == 198
    assert all(i.l1_bound <= i.known_optimum for i in binpack3)
    triplets = read_orlib(SHARED / "binpacking" / "binpack5.txt", optima)
    assert len(triplets) == 20 and triplets[0].capacity == 100.0
    assert isinstance(triplets[0].items[0], float)
    # sizes of the triplet instances sum to exactly n/3 full bins, so L1 is the optimum
    assert all(i.l1_bound == i.known_optimum == i.num_items // 3 for i in triplets)


def test_read_orlib_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n u3_00\n 10 3 1\n4\n5\n")
    with pytest.raises(ValueError, match="declares 3 items"):
        read_orlib(bad)
    bad.write_text("1\n u2_00\n 10 2 1\n4\n5\n6\n")
    with pytest.raises(ValueError, match="trailing"):
        read_orlib(bad)
