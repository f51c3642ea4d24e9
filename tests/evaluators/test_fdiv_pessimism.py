"""hifo.evaluators.fdiv_pessimism: baselines reach their figures; the parent rebuilds the policy itself."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.fdiv_pessimism import FdivPessimism
from evalkit import assert_reference_figures, compile_entry, run_instance


@pytest.fixture(scope="module")
def ev():
    ev = FdivPessimism()
    ev.public_seeds = True  # the published seeds the reference figures were measured on
    return ev


compiled = partial(compile_entry, entry="bonus")


def test_declaration(ev):
    assert ev.name == "fdiv_pessimism" and ev.direction == "minimize" and ev.primary_metric == "n_subopt"
    from hifo.evaluators.registry import get_evaluator
    assert isinstance(get_evaluator("fdiv_pessimism"), FdivPessimism)


@pytest.mark.parametrize("instance_set", ["train", "test"])
def test_reference_figures(ev, instance_set):
    assert_reference_figures(ev, instance_set, "bonus")


def test_score_depends_only_on_the_returned_bonus(ev):
    inst = ev.load_instances("train")[0]
    sol = ev.solve(compiled(ev.baselines["hoeffding"]), inst)
    # the same table scores the same whoever computed it; a huge bonus falls back to pi_ref (worse)
    assert ev.score(inst, {"bonus": sol["bonus"]}) == run_instance(ev, compiled(ev.baselines["hoeffding"]), inst)
    huge = ev.score(inst, {"bonus": np.full((4, 5), 10.0).tolist()})
    zero = ev.score(inst, {"bonus": np.zeros((4, 5)).tolist()})
    assert huge["subopt"] > zero["subopt"] > 0


def test_bad_bonus_is_infeasible(ev):
    inst = ev.load_instances("train")[0]
    for bad in ([[0.1] * 5] * 3, [[-0.1] * 5] * 4, [[float("nan")] * 5] * 4, "x", None):
        with pytest.raises(InfeasibleSolution):
            ev.score(inst, {"bonus": bad})
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, [1, 2])
    with pytest.raises(ValueError):
        ev.solve(lambda counts, n, eta: np.ones(3), inst)


def test_slot_gets_only_counts(ev):
    inst = ev.load_instances("train")[0]
    seen = []

    def spy(counts, n, eta):
        seen.append((counts.shape, float(counts.sum()), n, eta))
        return np.zeros_like(counts)

    ev.solve(spy, inst)
    assert seen == [((4, 5), float(inst.n), inst.n, 4.0)]
