"""``hifo data routing-refs``'s sections: tiny instances against brute force, one packaged record reproduced."""

from __future__ import annotations

import json
from itertools import permutations

import numpy as np
import pytest

from hifo.evaluators import atsp_construct
from hifo.evaluators.routing_refs import REFS_PATH, tmat, tsp_uniform
from hifo.problems.routing import random_tmat_instance, random_uniform_instance, tour_length

import elkai  # noqa: F401  (in the test extra)


def _optimum(d: np.ndarray) -> float:
    return min(tour_length(np.array((0, *p)), d) for p in permutations(range(1, len(d))))


def test_two_small_uniform_instances_get_their_optimum():
    out = tsp_uniform([("u7_s1", 7, 1), ("u7_s2", 7, 2)], runs=2)
    assert sorted(out) == ["u7_s1", "u7_s2"]
    for name, seed in (("u7_s1", 1), ("u7_s2", 2)):
        d = random_uniform_instance(7, seed, name).distance_matrix
        assert out[name]["length"] == pytest.approx(_optimum(d), rel=1e-9)


def test_tmat_sections_record_a_tour_of_the_stored_length():
    out = tmat([("t7_s3", 7, 3)], runs=2)["t7_s3"]
    d = random_tmat_instance(7, 3, "t7_s3").distance_matrix
    assert sorted(out["tour"]) == list(range(7))
    assert out["length"] == pytest.approx(tour_length(np.array(out["tour"]), d))
    assert out["length"] == pytest.approx(_optimum(d), rel=1e-9)  # exact on tmat's integer scale


def test_a_packaged_tmat_record_is_reproduced():
    name, n, seed = atsp_construct.random_set_specs("train")[0]
    made = tmat([(name, n, seed)], runs=1)[name]
    stored = json.loads(REFS_PATH.read_text())["tmat"][name]
    assert made["sha256"] == stored["sha256"] and (made["n"], made["seed"]) == (stored["n"], stored["seed"])
    assert made["length"] == pytest.approx(stored["length"], rel=0.01)  # 1 LKH-3 run instead of 10
