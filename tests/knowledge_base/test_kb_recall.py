import pytest

from hifo.knowledge_base import KnowledgeBase, RecallWeights
from hifo.knowledge_base.ranking import quality, recency

BPP = "Online bin packing: each arriving item is placed into one of the bins with enough remaining capacity."


def _credit(kb, pid, gain, won, times):
    for _ in range(times):
        kb.credit([pid], gain, won)


def test_high_utility_same_problem_outranks_low_utility_and_cross_problem_is_allowed(kb):
    good = kb.add("Prefer bins that the item fills tightly.", problem="bpp_online")
    bad = kb.add("Score bins by their remaining capacity ratio.", problem="bpp_online")
    other = kb.add("Penalise long edges to unvisited cities.", problem="tsp_construct")
    _credit(kb, good.id, 1.0, True, 3)
    _credit(kb, bad.id, -1.0, False, 3)
    _credit(kb, other.id, 1.0, True, 3)
    ranked = kb.recall("bpp_online", BPP, k=3)
    assert ranked[0].id == good.id
    assert {p.id for p in ranked} == {good.id, bad.id, other.id}  # the TSP principle may cross over
    only_here = kb.recall("bpp_online", BPP, k=3, cross_problem=False)
    assert [p.id for p in only_here] == [good.id, bad.id]
    assert [p.id for p in kb.recall("bpp_online", BPP, k=1)] == [good.id]
    assert kb.recall("bpp_online", BPP, k=0) == []


def test_scores_follow_the_documented_formula(kb, clock):
    other = kb.add("Penalise long edges to unvisited cities.", problem="tsp_construct")
    _credit(kb, other.id, 1.0, True, 3)  # utility 1 - 0.7**3, wins 3 of 3
    clock.advance(30 * 86_400)  # one half-life
    (score, p), = kb.recall_scored("bpp_online", BPP, k=1)
    q = 0.5 * (3 + 1) / (3 + 2) + 0.5 * ((1 - 0.7**3) + 1) / 2
    assert quality(p) == pytest.approx(q)
    assert recency(p, clock.t, 30.0) == pytest.approx(0.5)
    # no word of the description matches and it is another problem: quality, recency and what is left
    # of the probation bonus after 3 of its 4 uses
    assert score == pytest.approx(0.45 * q + 0.10 * 0.5 + 0.30 * (1 - 3 / 4))


def test_relevance_breaks_ties_between_equal_principles(kb):
    unrelated = kb.add("Penalise long edges to unvisited cities.", problem="bpp_online")
    related = kb.add("Prefer bins whose remaining capacity the item fills tightly.", problem="bpp_online")
    (s1, first), (s2, second) = kb.recall_scored("bpp_online", BPP, k=2)
    assert (first.id, second.id) == (related.id, unrelated.id)
    assert s1 - s2 == pytest.approx(0.25)  # the best match has relevance 1, the other 0


def test_same_problem_bonus_and_recency(kb, clock):
    old = kb.add("Use np.exp on the gap.", problem="bpp_online")
    clock.advance(90 * 86_400)
    new = kb.add("Use np.log on the gap.", problem="tsp_construct")
    scored = dict((p.id, s) for s, p in kb.recall_scored("bpp_online", "", k=2))
    # old: same problem (+0.20), recency 0.5**3; new: other problem, recency 1
    assert scored[old.id] - scored[new.id] == pytest.approx(0.20 + 0.10 * (0.125 - 1.0))


def test_general_principles_count_for_every_problem(kb):
    general = kb.add("Keep numbers finite.", problem=None, source="user")
    kb.add("Penalise long edges to unvisited cities.", problem="tsp_construct")
    assert [p.id for p in kb.recall("bpp_online", BPP, k=5, cross_problem=False)] == [general.id]


def test_merged_statement_from_another_problem_gets_the_bonus(kb):
    p = kb.add("Prefer bins that the item fills tightly.", problem="bpp_offline")
    kb.add("Prefer the bins that the item fills tightly.", problem="bpp_online")
    assert [q.id for q in kb.recall("bpp_online", "", k=5, cross_problem=False)] == [p.id]


def test_retired_principles_are_not_recalled(kb):
    p = kb.add("Prefer bins that the item fills tightly.", problem="bpp_online")
    kb.retire([p.id])
    assert kb.recall("bpp_online", BPP) == []


def test_custom_weights(kb_path, clock):
    weights = RecallWeights(quality=1.0, relevance=0.0, recency=0.0, same_problem=0.0)
    with KnowledgeBase(kb_path, clock=clock, weights=weights) as store:
        a = store.add("Use np.exp on the gap.", problem="bpp_online")
        b = store.add("Use np.log on the gap.", problem="tsp_construct")
        store.credit([b.id], 1.0, True)
        assert [p.id for p in store.recall("bpp_online", "gap", k=2)] == [b.id, a.id]
    with pytest.raises(ValueError):
        RecallWeights(quality=-1.0)
