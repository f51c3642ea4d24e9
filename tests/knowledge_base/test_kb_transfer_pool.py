"""Export/import keeps the bounded pool: inactive marks, probation, per-problem use, problems learnt on."""

import json

import pytest

from hifo.knowledge_base import KnowledgeBase
from hifo.knowledge_base.pool import PROBATION_USES


def _pooled(store, clock):
    """Five principles: two graduated (one demoted by a cap of 1), one on probation, one retired, one merged."""
    good = store.add("Prefer bins that the item fills tightly.", ["best-fit"], "bpp_online",
                     provenance={"run_id": "r1", "generation": 2, "candidate_ids": ["c3"]})
    weak = store.add("Penalise long edges to unvisited cities.", ["tsp"], "tsp_construct",
                     provenance={"run_id": "r2", "generation": 1})
    fresh = store.add("Keep numbers finite with np.clip.", [], "bpp_online")
    bad = store.add("Use np.exp on the gap.", [], "bpp_online")
    clock.advance(5)
    store.add("Prefer the bins that the item fills tightly.", [], "tsp_construct",
              provenance={"run_id": "r3", "generation": 4})  # merges into `good`: learnt on two problems
    for i in range(PROBATION_USES + 1):
        clock.advance(1)
        store.credit([good.id], 0.6, True, problem="tsp_construct" if i % 2 else "bpp_online")
        store.credit([weak.id], -0.2 + 0.05 * i, False, problem="tsp_construct")
        store.credit([bad.id], -0.8, False, problem="bpp_online")
    store.credit([fresh.id], 0.3, True, problem="bpp_online")
    store.retire([bad.id])
    assert store.enforce_pool(cap=1)["demoted"] == [weak.id]
    return good, weak, fresh, bad


def _everything(store):
    principles = store.list(status=None)
    return {
        "principles": [p.to_dict() for p in principles],
        "inactive": store.inactive(),
        "states": store.pool_states(),
        "helped": {p.id: store.helped_on(p.id) for p in principles},
    }


def test_export_import_keeps_pool_state_and_per_problem_use(tmp_path, clock):
    with KnowledgeBase(tmp_path / "a.sqlite", clock=clock) as src:
        good, weak, fresh, bad = _pooled(src, clock)
        before = _everything(src)
        src.export_json(tmp_path / "kb.json")
    assert before["states"] == {good.id: "active", weak.id: "inactive", fresh.id: "probation", bad.id: "retired"}
    assert before["helped"][good.id]["learnt_on"] == ["bpp_online", "tsp_construct"]
    assert before["helped"][good.id]["helped_on"] == ["bpp_online", "tsp_construct"]
    assert before["helped"][weak.id]["used_on"]["tsp_construct"]["uses"] == PROBATION_USES + 1
    document = json.loads((tmp_path / "kb.json").read_text())
    assert document["version"] == 2
    by_id = {item["id"]: item for item in document["principles"]}
    assert by_id[weak.id]["inactive"]["since"] > 0 and by_id[good.id]["inactive"] is None
    assert by_id[fresh.id]["pool_state"] == "probation"
    assert by_id[bad.id]["used_on"]["bpp_online"] == {"uses": PROBATION_USES + 1, "wins": 0,
                                                       "credit_sum": pytest.approx(-0.8 * (PROBATION_USES + 1))}
    with KnowledgeBase(tmp_path / "b.sqlite", clock=clock) as dst:
        assert dst.import_json(tmp_path / "kb.json") == {"inserted": 4, "merged": 0, "updated": 0, "unchanged": 0}
        assert _everything(dst) == before
        # the pool behaves the same afterwards: the demoted principle comes back when there is room
        assert dst.enforce_pool(cap=2)["promoted"] == [weak.id]
        # a second import of the same file changes nothing (the local promotion stays)
        assert dst.import_json(tmp_path / "kb.json")["unchanged"] == 4
        assert dst.inactive() == []


def test_a_newer_record_replaces_pool_rows_and_an_older_one_does_not(tmp_path, clock):
    with KnowledgeBase(tmp_path / "a.sqlite", clock=clock) as src:
        good, weak, *_ = _pooled(src, clock)
        src.export_json(tmp_path / "old.json")
        clock.advance(100)
        src.credit([weak.id], 0.9, True, problem="bpp_online")
        src.export_json(tmp_path / "new.json")
        newer = src.helped_on(weak.id)
    with KnowledgeBase(tmp_path / "b.sqlite", clock=clock) as dst:
        dst.import_json(tmp_path / "old.json")
        assert dst.import_json(tmp_path / "new.json")["updated"] == 1
        assert dst.helped_on(weak.id) == newer and "bpp_online" in newer["helped_on"]
        assert dst.import_json(tmp_path / "old.json")["updated"] == 0
        assert dst.helped_on(weak.id) == newer


def _as_version_1(path, out):
    document = json.loads(path.read_text())
    document["version"] = 1
    for item in document["principles"]:
        for key in ("inactive", "used_on", "pool_state"):
            del item[key]
    out.write_text(json.dumps(document))


def test_a_version_1_export_still_imports(tmp_path, clock):
    with KnowledgeBase(tmp_path / "a.sqlite", clock=clock) as src:
        good, weak, fresh, bad = _pooled(src, clock)
        principles = [p.to_dict() for p in src.list(status=None)]
        src.export_json(tmp_path / "v2.json")
    _as_version_1(tmp_path / "v2.json", tmp_path / "v1.json")
    with KnowledgeBase(tmp_path / "b.sqlite", clock=clock) as dst:
        assert dst.import_json(tmp_path / "v1.json")["inserted"] == 4
        assert [p.to_dict() for p in dst.list(status=None)] == principles
        # version 1 knew no pool: everything is in it, probation follows from the credit count
        assert dst.inactive() == []
        assert dst.pool_states() == {good.id: "active", weak.id: "active", fresh.id: "probation", bad.id: "retired"}
        assert dst.helped_on(good.id)["used_on"] == {}
        assert dst.helped_on(good.id)["learnt_on"] == ["bpp_online", "tsp_construct"]
    # into a store that has the pool rows already: a version-1 record leaves them alone
    with KnowledgeBase(tmp_path / "a.sqlite", clock=clock) as src:
        kept = _everything(src)
        clock.advance(50)
        assert src.import_json(tmp_path / "v1.json")["updated"] == 0
        assert _everything(src) == kept


def test_pool_fields_in_a_version_1_file_are_refused(tmp_path, kb):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "hifo-principles", "version": 1, "principles": [
        {"id": "p1", "text": "Use np.exp.", "inactive": None}]}))
    with pytest.raises(ValueError, match="unknown principle field"):
        kb.import_json(path)


@pytest.mark.parametrize("version, message", [
    (3, "export version 3, written by a newer hifo; this hifo reads versions 1 to 2: upgrade hifo"),
    ("2", "positive integer"),
    (0, "positive integer"),
])
def test_unknown_versions_are_refused_clearly(tmp_path, kb, version, message):
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"format": "hifo-principles", "version": version,
                                "principles": [{"id": "p1", "text": "Use np.exp."}]}))
    with pytest.raises(ValueError, match=message):
        kb.import_json(path)
    assert kb.list(status=None) == []


@pytest.mark.parametrize("extra, message", [
    ({"inactive": {"since": 1.0}}, "'inactive' must be null"),
    ({"inactive": {"since": "yesterday", "lower_bound": None}}, "inactive.since must be a number"),
    ({"used_on": ["bpp_online"]}, "keyed by problem"),
    ({"used_on": {"bpp": {"uses": 1, "wins": 2, "credit_sum": 0.0}}}, "0 <= wins <= uses"),
    ({"used_on": {"bpp": {"uses": 1, "wins": 0}}}, "exactly uses, wins, credit_sum"),
])
def test_malformed_pool_fields_change_nothing(tmp_path, kb, extra, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "hifo-principles", "version": 2, "principles": [
        {"id": "p0", "text": "Keep numbers finite."}, {"id": "p1", "text": "Use np.exp.", **extra}]}))
    with pytest.raises(ValueError, match=message):
        kb.import_json(path)
    assert kb.list(status=None) == []


def test_a_near_duplicate_alias_keeps_its_use_but_no_inactive_mark(tmp_path, clock):
    with KnowledgeBase(tmp_path / "a.sqlite", clock=clock) as src:
        good, weak, *_ = _pooled(src, clock)
        src.export_json(tmp_path / "kb.json")
    with KnowledgeBase(tmp_path / "b.sqlite", clock=clock) as dst:
        ours = dst.add("Penalise the long edges to unvisited cities.", [], "tsp_construct")
        report = dst.import_json(tmp_path / "kb.json")
        assert report["merged"] == 1 and dst.get(weak.id).merged_into == ours.id
        assert dst.inactive() == []  # the alias is retired; our survivor stays in the pool
        assert dst.pool_states()[weak.id] == "retired"
        assert dst.used_on_all()[weak.id]["tsp_construct"]["uses"] == PROBATION_USES + 1
        assert dst.helped_on(weak.id)["used_on"] == {}  # the survivor's own record: not used yet
