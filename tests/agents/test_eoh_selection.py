"""EoH's survivor and parent selection (``selection = "eoh"``) on hand-made populations."""

from dataclasses import dataclass

import numpy as np
import pytest

from hifo.agents.config import RunConfig
from hifo.agents.eoh_selection import choose_parents, pop_greedy, rank_weights


@dataclass
class Ind:
    name: str
    fitness: float | None  # higher is better (hifo's fitness: minus the objective for a minimised metric)


def fit(x):
    return x.fitness


def test_pop_greedy_keeps_the_best_distinct_objectives_first_come_first_kept():
    population = [Ind("A", -5.0), Ind("B", -7.0)]
    offspring = [Ind("C", -5.0), Ind("D", -3.0), Ind("E", None), Ind("F", -7.0), Ind("G", -6.0),
                 Ind("H", float("nan"))]
    survivors = pop_greedy(population + offspring, 4, fit)
    # C (equal to A) and F (equal to B) are dropped although they tie; the population member came first
    assert [x.name for x in survivors] == ["D", "A", "G", "B"]
    assert [x.name for x in pop_greedy(population + offspring, 2, fit)] == ["D", "A"]
    # of equal objectives the one listed first stays (select lists the population before the offspring)
    assert [x.name for x in pop_greedy(offspring[:1] + population, 1, fit)] == ["C"]


def test_pop_greedy_returns_fewer_than_size_when_objectives_repeat():
    clones = [Ind(f"c{i}", -4.0) for i in range(5)] + [Ind("x", -9.0), Ind("dead", None)]
    assert [x.name for x in pop_greedy(clones, 6, fit)] == ["c0", "x"]  # EoH drops clones; it does not refill
    assert pop_greedy(clones, 0, fit) == [] and pop_greedy([], 3, fit) == []
    assert pop_greedy([Ind("dead", None)], 3, fit) == []


def test_rank_weights_are_eoh_prob_rank():
    w = rank_weights(4)  # EoH: 1 / (rank + 1 + n) for ranks 0..3, n = 4
    raw = [1 / 5, 1 / 6, 1 / 7, 1 / 8]
    assert w == pytest.approx([r / sum(raw) for r in raw])
    assert rank_weights(1) == [1.0] and rank_weights(0) == []


def test_choose_parents_draws_ranks_with_replacement_at_those_weights():
    rng = np.random.default_rng(0)
    draws = [choose_parents(3, 2, rng) for _ in range(20000)]
    assert all(len(d) == 2 and all(0 <= j < 3 for j in d) for d in draws)
    assert sum(d[0] == d[1] for d in draws) > 5000  # the same parent twice happens (about 35 %)
    freq = np.bincount([j for d in draws for j in d], minlength=3) / (2 * len(draws))
    assert freq == pytest.approx(rank_weights(3), abs=0.01)
    assert choose_parents(1, 2, rng) == [0, 0] and choose_parents(0, 2, rng) == []
    assert choose_parents(3, 0, rng) == []


def test_the_setting_defaults_to_hifo_and_accepts_only_known_rules():
    assert RunConfig(problem="bpp_online").selection == "hifo"
    assert RunConfig(problem="bpp_online", selection="eoh").selection == "eoh"
    with pytest.raises(ValueError):
        RunConfig(problem="bpp_online", selection="tournament")
