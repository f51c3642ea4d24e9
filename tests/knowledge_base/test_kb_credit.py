import math

import pytest

from hifo.knowledge_base import (
    FAILURE_GAIN,
    PrincipleNotFound,
    gain_scale,
    offspring_gain,
    offspring_won,
    update_utility,
    win_rate,
)

INF = math.inf


def test_offspring_gain_is_improvement_over_best_parent_divided_by_scale():
    assert offspring_gain(12.0, [10.0, 8.0], 4.0) == 0.5
    assert offspring_gain(9.0, [10.0, 8.0], 4.0) == -0.25
    assert offspring_gain(11.0, [10.0, -INF], 4.0) == 0.25  # failed parents are ignored
    assert offspring_gain(10.0, [10.0], 1.0) == 0.0


def test_offspring_gain_is_clipped():
    assert offspring_gain(30.0, [10.0], 4.0) == 1.0
    assert offspring_gain(-30.0, [10.0], 4.0) == -1.0


def test_failed_child_gets_the_fixed_penalty():
    assert FAILURE_GAIN == -0.5
    for child in (-INF, None, math.nan):
        assert offspring_gain(child, [10.0], 4.0) == FAILURE_GAIN
    assert offspring_gain(None, [10.0], 4.0, failure_gain=-1.0) == -1.0


def test_working_child_of_failed_parents_gains_fully():
    assert offspring_gain(-3.0, [-INF, None], 1.0) == 1.0


@pytest.mark.parametrize("scale", [0.0, -1.0, math.nan, INF])
def test_offspring_gain_rejects_bad_scale(scale):
    with pytest.raises(ValueError):
        offspring_gain(1.0, [0.0], scale)


def test_offspring_gain_needs_a_parent():
    with pytest.raises(ValueError):
        offspring_gain(1.0, [], 1.0)


def test_gain_scale():
    assert gain_scale([1.0, 5.0, 3.0, -INF, None]) == 4.0  # spread of the finite fitnesses
    assert gain_scale([-3.0, -3.0]) == 3.0  # no spread: |best|
    assert gain_scale([0.0, 0.0]) == 1.0
    assert gain_scale([]) == 1.0
    assert gain_scale([-INF]) == 1.0


def test_offspring_won():
    assert offspring_won(11.0, [10.0, 8.0])
    assert not offspring_won(10.0, [10.0, 8.0])  # a tie is not a win
    assert not offspring_won(-INF, [10.0])
    assert offspring_won(-5.0, [-INF])


def test_update_utility_is_an_exponential_moving_average():
    assert update_utility(0.0, 0.5, 0.3) == pytest.approx(0.15)
    assert update_utility(0.15, -1.0, 0.3) == pytest.approx(-0.195)
    assert update_utility(0.0, 5.0, 0.5) == 0.5  # gain clipped to 1
    with pytest.raises(ValueError):
        update_utility(0.0, 0.5, 0.0)
    with pytest.raises(ValueError):
        update_utility(0.0, math.nan, 0.3)


def test_win_rate_is_laplace_smoothed():
    assert win_rate(0, 0) == 0.5
    assert win_rate(3, 3) == 0.8
    with pytest.raises(ValueError):
        win_rate(2, 1)


def test_credit_updates_uses_wins_and_utility_exactly(kb, clock):
    a = kb.add("Use np.exp on the gap.")
    b = kb.add("Use np.log on the gap.")
    clock.advance(100)
    updated = kb.credit([a.id, b.id, a.id], 0.5, True)  # a repeated id counts once
    assert [p.id for p in updated] == [a.id, b.id]
    assert [(p.uses, p.wins) for p in updated] == [(1, 1), (1, 1)]
    assert updated[0].utility == pytest.approx(0.15)
    assert updated[0].last_used_at == clock.t and updated[0].updated_at == clock.t
    (a2,) = kb.credit([a.id], -1.0, False)
    assert (a2.uses, a2.wins) == (2, 1)
    assert a2.utility == pytest.approx(-0.195)
    (a3,) = kb.credit(a.id, 3.0, True)  # a single id is accepted; gain clipped to 1
    assert a3.utility == pytest.approx(-0.195 + 0.3 * (1 + 0.195))
    assert kb.get(b.id).utility == pytest.approx(0.15)


def test_credit_with_a_key_is_applied_once(kb):
    a = kb.add("Use np.exp on the gap.")
    kb.credit([a.id], 1.0, True, key="run1/gen2/cand7")
    again = kb.credit([a.id], 1.0, True, key="run1/gen2/cand7")
    assert again[0].uses == 1 and again[0].utility == pytest.approx(0.3)
    kb.credit([a.id], 1.0, True, key="run1/gen2/cand8")
    assert kb.get(a.id).uses == 2


def test_credit_with_an_unknown_id_changes_nothing(kb):
    a = kb.add("Use np.exp on the gap.")
    with pytest.raises(PrincipleNotFound):
        kb.credit([a.id, "p-nope"], 1.0, True)
    assert kb.get(a.id).uses == 0
    with pytest.raises(ValueError):
        kb.credit([a.id], math.nan, True)
    assert kb.credit([], 1.0, True) == []


def test_custom_alpha(kb_path, clock):
    from hifo.knowledge_base import KnowledgeBase

    with KnowledgeBase(kb_path, alpha=0.5, clock=clock) as store:
        a = store.add("Use np.exp on the gap.")
        assert store.credit([a.id], 0.8, True)[0].utility == pytest.approx(0.4)
    with pytest.raises(ValueError):
        KnowledgeBase(kb_path, alpha=1.5)


def test_decay_shrinks_active_utilities_toward_zero(kb):
    a = kb.add("Use np.exp on the gap.")
    b = kb.add("Use np.log on the gap.")
    kb.credit([a.id], 1.0, True)  # 0.3
    kb.credit([b.id], -1.0, False)  # -0.3
    kb.retire([b.id])
    assert kb.decay(0.5) == 1  # only the active one
    assert kb.get(a.id).utility == pytest.approx(0.15)
    assert kb.get(b.id).utility == pytest.approx(-0.3)
    assert kb.get(a.id).uses == 1
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError):
            kb.decay(bad)


def test_prune_retires_but_never_deletes(kb):
    harmful = kb.add("Use np.exp on the gap.")
    helpful = kb.add("Use np.log on the gap.")
    untried = kb.add("Use np.sqrt on the gap.")
    barely = kb.add("Use np.tanh on the gap.")
    for _ in range(5):
        kb.credit([harmful.id], -0.4, False)
        kb.credit([helpful.id], 0.4, True)
    for _ in range(4):
        kb.credit([barely.id], -0.4, False)
    assert kb.prune(min_uses=5, max_utility=0.0, dry_run=True) == [harmful.id]
    assert kb.get(harmful.id).status == "active"
    assert kb.prune(min_uses=5, max_utility=0.0) == [harmful.id]
    retired = kb.get(harmful.id)
    assert retired.status == "retired" and retired.uses == 5
    assert {p.id for p in kb.list()} == {helpful.id, untried.id, barely.id}
    assert len(kb.list(status=None)) == 4
    assert kb.prune(min_uses=5, max_utility=0.0) == []  # already retired
    assert kb.prune(min_uses=4, max_utility=0.0) == [barely.id]
    with pytest.raises(ValueError):
        kb.prune(min_uses=0)
