"""The ``tsp_construct`` reference maker on a 2-instance temporary set."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.evaluators.tsp_refs import make_tsp_refs
from hifo.problems.routing import array_digest, random_uniform_instance, tour_length

import elkai  # noqa: F401  (in the test extra)


def _brute_force(d: np.ndarray) -> float:
    from itertools import permutations

    n = len(d)
    return min(tour_length(np.array((0, *p)), d) for p in permutations(range(1, n)))


def test_two_small_instances_get_their_optimal_length():
    specs = [("tiny", "u7_s1", 7, 1), ("tiny", "u7_s2", 7, 2)]
    lines: list[str] = []
    refs, summary = make_tsp_refs(specs, runs=2, log=lines.append)
    assert sorted(refs["random"]) == ["u7_s1", "u7_s2"] and refs["tsplib"] == {}
    for _, name, n, seed in specs:
        inst = random_uniform_instance(n, seed, name)
        rec = refs["random"][name]
        assert (rec["set"], rec["n"], rec["seed"]) == ("tiny", n, seed)
        assert rec["coords_sha256"] == array_digest(inst.coords)
        assert rec["length"] == pytest.approx(_brute_force(inst.distance_matrix), rel=1e-9)
    assert len(summary["rows"]) == 2 and summary["tsplib_lkh_mean_gap_percent"] is None
    assert any("u7_s1" in line for line in lines)


def test_tsplib_without_optima_is_refused():
    with pytest.raises(ValueError, match="optima"):
        make_tsp_refs([], tsplib_names=("eil51",), optima=None)
