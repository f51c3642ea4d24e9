"""hifo.evaluators.fdiv_pessimism: baselines reach their figures; the parent rebuilds the policy itself; on the
starved instances pessimism is what the scored quantile rewards (the paper's regime)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from hifo.evaluators.base import InfeasibleSolution
from hifo.evaluators.fdiv_pessimism import FdivPessimism
from evalkit import assert_reference_figures, compile_entry, run_instance, run_set


@pytest.fixture(scope="module")
def ev():
    ev = FdivPessimism()
    ev.public_seeds = True  # the published seeds the reference figures were measured on
    return ev


compiled = partial(compile_entry, entry="bonus")


def test_declaration(ev):
    assert ev.name == "fdiv_pessimism" and ev.direction == "minimize" and ev.primary_metric == "n_subopt_q90"
    # every baseline has stored figures on both sets (an empty table would make the figure test vacuous)
    assert set(ev.reference_figures) == set(ev.baselines) and ev.reference_figures["hoeffding"]["test"]
    from hifo.evaluators.registry import get_evaluator
    assert isinstance(get_evaluator("fdiv_pessimism"), FdivPessimism)


@pytest.mark.parametrize("instance_set", ["train", "test"])
def test_reference_figures(ev, instance_set):
    assert_reference_figures(ev, instance_set, "bonus")


def test_score_depends_only_on_the_returned_bonus(ev):
    inst = ev.load_instances("train")[0]
    sol = ev.solve(compiled(ev.baselines["hoeffding"]), inst)
    # the same tables score the same whoever computed them; a huge bonus falls back to pi_ref (worse)
    assert ev.score(inst, {"bonus": sol["bonus"]}) == run_instance(ev, compiled(ev.baselines["hoeffding"]), inst)
    huge = ev.score(inst, {"bonus": np.full((10, 4, 5), 10.0).tolist()})
    zero = ev.score(inst, {"bonus": np.zeros((10, 4, 5)).tolist()})
    assert huge["subopt"] > zero["subopt"] > 0
    assert zero["n_subopt_max"] >= zero["n_subopt_q90"] > 0


def test_bad_bonus_is_infeasible(ev):
    inst = ev.load_instances("train")[0]
    for bad in ([[[0.1] * 5] * 3] * 10, [[[-0.1] * 5] * 4] * 10, [[[float("nan")] * 5] * 4] * 10,
                [[[0.1] * 5] * 4] * 9, "x", None):
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
    assert seen == [((4, 5), float(inst.n), inst.n, 10.0)] * 10  # one call per logged dataset


def _per_instance(ev, baseline: str, instance_set: str = "train") -> list[tuple[str, dict[str, float]]]:
    per, _ = run_set(ev, compiled(ev.baselines[baseline]), instance_set)
    return [(inst.coverage, m) for inst, m in zip(ev.load_instances(instance_set), per)]


def test_on_starved_data_pessimism_beats_plug_in_in_the_scored_quantile(ev):
    """Zhao et al.: for reverse KL under single-policy concentrability alone, pessimism is needed. On the starved
    instances (same C* as the covered ones) the paper-style Hoeffding bonus has a far smaller 90th percentile of
    n * subopt than the plug-in learner (bonus 0), cell by cell on average; on the covered ones it does not."""
    def q90(baseline, coverage):
        return np.mean([m["n_subopt_q90"] for c, m in _per_instance(ev, baseline) if c == coverage])

    assert q90("hoeffding", "starved") < 0.5 * q90("plugin", "starved")
    assert q90("plugin", "covered") < q90("hoeffding", "covered")  # where every action is seen, it only costs
    starved = [(h["n_subopt_q90"], p["n_subopt_q90"]) for (c, h), (_, p) in
               zip(_per_instance(ev, "hoeffding"), _per_instance(ev, "plugin")) if c == "starved"]
    assert sum(h < p for h, p in starved) >= 0.75 * len(starved)
