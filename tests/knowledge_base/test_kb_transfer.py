import json

import pytest

from hifo.knowledge_base import KnowledgeBase


def _populate(store, clock):
    a = store.add("Prefer bins that the item fills tightly.", ["best-fit"], "bpp_online",
                  provenance={"run_id": "r1", "generation": 2, "candidate_ids": ["c3", "c4"]})
    clock.advance(10)
    store.add("Prefer the bins that the item fills tightly.", ["greedy"], "bpp_offline", source="contrast",
              provenance={"run_id": "r2", "generation": 5})
    b = store.add("Penalise long edges to unvisited cities.", ["tsp"], "tsp_construct", source="user")
    c = store.add("Use np.exp on the gap.", [], "bpp_online")
    store.credit([a.id, b.id], 0.5, True)
    store.credit([c.id], -1.0, False)
    store.retire([c.id])
    return a, b, c


def test_export_import_round_trip_reproduces_everything(tmp_path, clock):
    with KnowledgeBase(tmp_path / "a.sqlite", clock=clock) as src:
        _populate(src, clock)
        assert src.export_json(tmp_path / "out" / "export.json") == 3
        original = [p.to_dict() for p in src.list(status=None)]
    document = json.loads((tmp_path / "out" / "export.json").read_text())
    assert document["format"] == "hifo-principles" and document["version"] == 2
    assert len(document["principles"]) == 3
    with KnowledgeBase(tmp_path / "b.sqlite", clock=clock) as dst:
        report = dst.import_json(tmp_path / "out" / "export.json")
        assert report == {"inserted": 3, "merged": 0, "updated": 0, "unchanged": 0}
        assert [p.to_dict() for p in dst.list(status=None)] == original
        merged = next(p for p in dst.list(status=None) if p.support == 2)
        assert [(v.run_id, v.generation, v.candidate_ids) for v in merged.provenance] == [
            ("r1", 2, ("c3", "c4")), ("r2", 5, ()),
        ]
        # importing the same file again changes nothing
        assert dst.import_json(tmp_path / "out" / "export.json") == {
            "inserted": 0, "merged": 0, "updated": 0, "unchanged": 3,
        }
        assert [p.to_dict() for p in dst.list(status=None)] == original
        assert dst.stats()["provenance_records"] == 4


def test_import_merges_near_duplicates_into_an_alias(tmp_path, clock):
    with KnowledgeBase(tmp_path / "a.sqlite", clock=clock) as src:
        theirs = src.add("Prefer the bins that the item fills tightly.", ["greedy"], "bpp_offline",
                         provenance={"run_id": "theirs", "generation": 1})
        src.credit([theirs.id], 1.0, True)
        src.export_json(tmp_path / "theirs.json")
    with KnowledgeBase(tmp_path / "b.sqlite", clock=clock) as dst:
        ours = dst.add("Prefer bins that the item fills tightly.", ["best-fit"], "bpp_online",
                       provenance={"run_id": "ours", "generation": 1})
        assert dst.import_json(tmp_path / "theirs.json") == {
            "inserted": 0, "merged": 1, "updated": 0, "unchanged": 0,
        }
        alias = dst.get(theirs.id)
        assert alias.status == "retired" and alias.merged_into == ours.id
        survivor = dst.get(ours.id)
        assert survivor.support == 2 and survivor.tags == ["best-fit", "greedy"]
        assert [v.run_id for v in survivor.provenance] == ["ours", "theirs"]
        assert (survivor.uses, survivor.utility) == (0, 0.0)  # statistics are not folded in
        assert [p.id for p in dst.list()] == [ours.id]
        # credit given to the alias id reaches the survivor; importing again is a no-op
        assert dst.credit([theirs.id], 1.0, True)[0].id == ours.id
        assert dst.resolve(theirs.id).id == ours.id
        assert dst.import_json(tmp_path / "theirs.json")["unchanged"] == 1
        assert dst.get(ours.id).support == 2


def test_newer_record_updates_an_existing_one(tmp_path, clock):
    with KnowledgeBase(tmp_path / "a.sqlite", clock=clock) as src:
        p = src.add("Use np.exp on the gap.", provenance={"run_id": "r1"})
        src.export_json(tmp_path / "v1.json")
        clock.advance(100)
        src.credit([p.id], 1.0, True)
        src.export_json(tmp_path / "v2.json")
        latest = src.get(p.id)
    with KnowledgeBase(tmp_path / "b.sqlite", clock=clock) as dst:
        dst.import_json(tmp_path / "v1.json")
        assert dst.import_json(tmp_path / "v2.json")["updated"] == 1
        assert dst.get(p.id) == latest
        assert dst.import_json(tmp_path / "v1.json")["unchanged"] == 1  # older: ignored
        assert dst.get(p.id) == latest


def test_import_plain_list(tmp_path, kb):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps([
        "Keep numbers finite.",
        {"text": "Use np.exp on the gap.", "tags": ["exp"], "problem": "bpp_online"},
        {"text": "Use np.exp on the gap!", "provenance": {"run_id": "manual"}},
    ]))
    assert kb.import_json(path) == {"inserted": 2, "merged": 1, "updated": 0, "unchanged": 0}
    sources = {p.text: p.source for p in kb.list()}
    assert sources == {"Keep numbers finite.": "import", "Use np.exp on the gap.": "import"}


@pytest.mark.parametrize("content, message", [
    ("not json", "not valid JSON"),
    ('{"format": "something-else"}', "neither"),
    ('{"format": "hifo-principles", "version": 99, "principles": []}', "version"),
    ('[{"id": "p1", "text": "Use np.exp.", "uses": 1, "wins": 2}]', "wins"),
    ('[{"id": "p1", "text": "Use np.exp.", "source": "oracle"}]', "source"),
    ('[{"id": "p1", "text": "Use np.exp.", "colour": "red"}]', "unknown"),
    ('[{"id": "p1", "text": "Use np.exp."}, {"id": "p1", "text": "Use np.log."}]', "twice"),
    ('[{"id": "p1", "text": "Use np.exp.", "merged_into": "p9"}]', "neither file nor store"),
    ('[{"text": ""}]', "non-empty"),
])
def test_malformed_imports_change_nothing(tmp_path, kb, content, message):
    kb.add("Keep numbers finite.")
    path = tmp_path / "bad.json"
    path.write_text('[{"text": "Use np.log on the gap."}, ' + content[1:] if content.startswith("[") else content)
    with pytest.raises(ValueError, match=message):
        kb.import_json(path)
    assert [p.text for p in kb.list(status=None)] == ["Keep numbers finite."]
