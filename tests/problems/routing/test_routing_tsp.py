"""hifo.problems.routing: instances, TSPLIB reader, tour checks and EoH's construction loop."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from hifo.problems.routing import (
    InvalidChoice,
    InvalidTour,
    construct_tour,
    euc2d_matrix,
    euclidean_matrix,
    gap_percent,
    nearest_neighbour,
    nearest_neighbour_tour,
    random_uniform_instance,
    read_tsplib,
    tour_length,
    validate_tour,
)

TSP_DATA = Path(__file__).resolve().parents[3] / "evaluators" / "data" / "tsp"


def test_random_instance():
    a, b = random_uniform_instance(30, seed=5), random_uniform_instance(30, seed=5)
    assert np.array_equal(a.coords, b.coords)
    assert not np.array_equal(a.coords, random_uniform_instance(30, seed=6).coords)
    assert a.coords.shape == (30, 2) and (a.coords >= 0).all() and (a.coords < 1).all()
    d = a.distance_matrix
    assert np.allclose(d, d.T) and np.all(np.diag(d) == 0)
    assert d[3, 7] == pytest.approx(math.dist(a.coords[3], a.coords[7]))


def test_euc2d_rounding():
    d = euc2d_matrix(np.array([[0, 0], [3, 4], [1, 1], [1, 2], [0.5, 0]]))
    assert d[0, 1] == 5 and d[0, 2] == 1 and d[0, 3] == 2 and d[0, 4] == 1  # nint(0.5) = 1
    assert euclidean_matrix(np.array([[0, 0], [1, 1]]))[0, 1] == pytest.approx(math.sqrt(2))


def test_read_tsplib_eil51():
    inst = read_tsplib(TSP_DATA / "eil51.tsp", optimum=426)
    assert inst.name == "eil51" and inst.n == 51 and inst.best_known == 426
    assert inst.coords[0].tolist() == [37, 52] and inst.coords[50].tolist() == [30, 40]
    assert inst.distance_matrix[0, 1] == 12  # nint(sqrt(12^2 + 3^2)) = nint(12.37)


def test_read_tsplib_rejects_other_formats(tmp_path):
    f = tmp_path / "x.tsp"
    f.write_text("NAME : x\nTYPE : TSP\nDIMENSION : 2\nEDGE_WEIGHT_TYPE : GEO\nNODE_COORD_SECTION\n1 0 0\n2 1 1\nEOF\n")
    with pytest.raises(ValueError, match="GEO"):
        read_tsplib(f)
    f.write_text("NAME : x\nTYPE : TSP\nDIMENSION : 3\nEDGE_WEIGHT_TYPE : EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 1 1\nEOF\n")
    with pytest.raises(ValueError, match="DIMENSION 3"):
        read_tsplib(f)


@pytest.mark.parametrize("tour, reason", [
    ([0, 1, 2], "all 4 nodes"),
    ([0, 1, 2, 3, 0], "all 4 nodes"),
    ([0, 1, 1, 3], "node 1 appears 2 times"),
    ([0, 1, 2, 4], "outside 0..3"),
    ([0, 1, 2, -1], "outside 0..3"),
    ([0.0, 1.0, 2.0, 3.0], "integers"),
    ([[0, 1], [2, 3]], "all 4 nodes"),
    ("0123", "sequence"),
    (None, "sequence"),
])
def test_validate_tour_rejects(tour, reason):
    with pytest.raises(InvalidTour, match=reason):
        validate_tour(tour, 4)


def test_tour_length_on_unit_square():
    d = euclidean_matrix(np.array([[0, 0], [1, 0], [1, 1], [0, 1]]))
    assert tour_length([0, 1, 2, 3], d) == pytest.approx(4.0)
    assert tour_length([0, 2, 1, 3], d) == pytest.approx(2 + 2 * math.sqrt(2))
    assert tour_length(np.array([2, 3, 0, 1]), d) == pytest.approx(4.0)
    assert gap_percent(4.4, 4.0) == pytest.approx(10.0)


def test_construct_tour_calls_like_eoh():
    inst = random_uniform_instance(12, seed=1)
    calls = []

    def spy(current_node, destination_node, unvisited_nodes, distance_matrix):
        calls.append((current_node, destination_node, unvisited_nodes.copy(), distance_matrix))
        return unvisited_nodes[-1]  # the farthest node, as a numpy integer

    tour = construct_tour(spy, inst.distance_matrix, start=3)
    assert tour[0] == 3 and sorted(tour.tolist()) == list(range(12))
    assert len(calls) == 12 - 2  # the last node is added without a call
    visited = {3}
    for step, (current, dest, unvisited, matrix) in enumerate(calls, start=1):
        assert type(current) is int and current == tour[step - 1] and dest == 3
        assert unvisited.dtype == np.int64 and set(unvisited.tolist()) == set(range(12)) - visited
        dist = inst.distance_matrix[current, unvisited]
        assert np.all(np.diff(dist) >= 0)  # ordered by distance from the current node
        assert isinstance(matrix, np.ndarray) and matrix.dtype == np.float64
        assert np.array_equal(matrix, inst.distance_matrix)
        visited.add(int(tour[step]))


def test_unvisited_ties_are_ordered_by_index():
    d = np.ones((5, 5)) - np.eye(5)
    seen = []
    construct_tour(lambda c, t, u, m: seen.append(u.tolist()) or u[0], d)
    assert seen == [[1, 2, 3, 4], [2, 3, 4], [3, 4]]


def test_heuristic_writes_stay_private():
    inst = random_uniform_instance(8, seed=2)
    original = inst.distance_matrix.copy()
    seen = []

    def scribbler(current_node, destination_node, unvisited_nodes, distance_matrix):
        seen.append(distance_matrix[0, 0])
        distance_matrix[0, 0] = 42.0
        return unvisited_nodes[0]

    construct_tour(scribbler, inst.distance_matrix)
    assert np.array_equal(inst.distance_matrix, original)
    assert seen[0] == 0 and seen[1:] == [42.0] * (len(seen) - 1)  # persists between calls, as in EoH


@pytest.mark.parametrize("choice, reason", [
    (lambda c, t, u, m: c, "already visited"),
    (lambda c, t, u, m: t, "already visited"),
    (lambda c, t, u, m: 99, "outside 0..9"),
    (lambda c, t, u, m: -1, "outside 0..9"),
    (lambda c, t, u, m: float(u[0]), "integer node index"),
    (lambda c, t, u, m: None, "integer node index"),
    (lambda c, t, u, m: u, "integer node index"),
    (lambda c, t, u, m: True, "bool"),
])
def test_invalid_choices_are_rejected(choice, reason):
    d = random_uniform_instance(10, seed=0).distance_matrix
    with pytest.raises(InvalidChoice, match=reason) as info:
        construct_tour(choice, d)
    assert "step 1" in str(info.value)


def test_tiny_instances_need_no_calls():
    def never(*args):
        raise AssertionError("must not be called")

    assert construct_tour(never, np.zeros((1, 1))).tolist() == [0]
    assert construct_tour(never, np.ones((2, 2))).tolist() == [0, 1]


def _nn_length_from_text(path: Path) -> int:
    """Nearest neighbour from node 1 of a TSPLIB EUC_2D file, in plain Python."""
    lines = path.read_text().split("NODE_COORD_SECTION")[1].split("EOF")[0].split("\n")
    pts = [tuple(float(v) for v in line.split()[1:]) for line in lines if line.strip()]

    def dist(a, b):
        return int(math.hypot(a[0] - b[0], a[1] - b[1]) + 0.5)

    left, here, total = set(range(1, len(pts))), 0, 0
    while left:
        nxt = min(left, key=lambda j: (dist(pts[here], pts[j]), j))
        total += dist(pts[here], pts[nxt])
        left.remove(nxt)
        here = nxt
    return total + dist(pts[here], pts[0])


def test_nearest_neighbour_on_eil51():
    inst = read_tsplib(TSP_DATA / "eil51.tsp", optimum=426)
    tour = construct_tour(nearest_neighbour, inst.distance_matrix)
    assert np.array_equal(tour, nearest_neighbour_tour(inst.distance_matrix))
    length = tour_length(tour, inst.distance_matrix)
    assert length == _nn_length_from_text(TSP_DATA / "eil51.tsp") == 511
    assert gap_percent(length, 426) == pytest.approx(19.953, abs=1e-3)


@pytest.mark.parametrize("name", ["berlin52", "kroA100", "ch150"])
def test_nearest_neighbour_implementations_agree(name):
    d = read_tsplib(TSP_DATA / f"{name}.tsp").distance_matrix
    assert np.array_equal(construct_tour(nearest_neighbour, d), nearest_neighbour_tour(d))
    assert tour_length(nearest_neighbour_tour(d), d) == _nn_length_from_text(TSP_DATA / f"{name}.tsp")


def _brute_force(d: np.ndarray) -> float:
    n = d.shape[0]
    return min(tour_length((0, *p), d) for p in itertools.permutations(range(1, n)) if p[0] < p[-1])


def test_optimum_of_a_tiny_tsplib_instance(tmp_path):
    # the first 8 cities of eil51 as their own TSPLIB file
    lines = (TSP_DATA / "eil51.tsp").read_text().split("NODE_COORD_SECTION\n")[1].splitlines()[:8]
    f = tmp_path / "eil8.tsp"
    f.write_text("NAME : eil8\nTYPE : TSP\nDIMENSION : 8\nEDGE_WEIGHT_TYPE : EUC_2D\n"
                 "NODE_COORD_SECTION\n" + "\n".join(lines) + "\nEOF\n")
    inst = read_tsplib(f)
    best = _brute_force(inst.distance_matrix)
    nn = tour_length(nearest_neighbour_tour(inst.distance_matrix), inst.distance_matrix)
    assert best == int(best) and best <= nn
    import elkai  # in the test extra
    from hifo.problems.routing import lkh_tour
    assert elkai and tour_length(lkh_tour(inst.distance_matrix, scale=1), inst.distance_matrix) == best


def test_lkh_reaches_the_eil51_optimum():
    import elkai  # noqa: F401  (in the test extra)
    from hifo.problems.routing import lkh_tour
    inst = read_tsplib(TSP_DATA / "eil51.tsp")
    tour = lkh_tour(inst.distance_matrix, runs=3, scale=1)
    assert tour[0] == 0 and tour_length(tour, inst.distance_matrix) == 426
