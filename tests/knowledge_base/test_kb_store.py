import json
import multiprocessing
import sqlite3

import pytest

from hifo.knowledge_base import KnowledgeBase, KnowledgeBaseError, PrincipleNotFound, Provenance
from hifo.knowledge_base._schema import SCHEMA_VERSION

BEST_FIT = "Prefer bins with the smallest remaining capacity after placing the item."
BEST_FIT_REWORDED = "Prefer the bins with smallest remaining capacity after the item is placed."


def test_add_stores_every_field(kb, clock):
    T0 = clock.t
    p = kb.add(
        BEST_FIT, ["Best-Fit", "bins", "best-fit"], "bpp_online", source="model",
        provenance={"run_id": "r1", "generation": 3, "candidate_ids": [17, "c18"]},
    )
    assert p.id.startswith("p") and len(p.id) == 11
    assert p.text == BEST_FIT
    assert p.tags == ["best-fit", "bins"]
    assert (p.problem, p.source, p.status, p.merged_into) == ("bpp_online", "model", "active", None)
    assert (p.utility, p.uses, p.wins, p.support) == (0.0, 0, 0, 1)
    assert p.created_at == p.updated_at == T0 and p.last_used_at is None
    assert p.provenance == [Provenance("r1", 3, ("17", "c18"), "bpp_online", "model", T0)]
    assert kb.get(p.id) == p


def test_add_rejects_bad_input(kb):
    with pytest.raises(ValueError):
        kb.add("   ")
    with pytest.raises(ValueError):
        kb.add("x" * 5000)
    with pytest.raises(ValueError):
        kb.add("Use np.exp.", source="oracle")
    with pytest.raises(ValueError):
        kb.add("Use np.exp.", provenance={"run": "r1"})
    assert kb.list(status=None) == []


def test_near_duplicate_merges_keeping_both_provenances(kb, clock):
    T0 = clock.t
    first = kb.add(BEST_FIT, ["best-fit"], "bpp_online", provenance={"run_id": "r1", "generation": 1})
    clock.advance(60)
    second = kb.add(BEST_FIT_REWORDED, ["greedy"], "bpp_offline", source="contrast",
                    provenance={"run_id": "r2", "generation": 4, "candidate_ids": ["c9"]})
    assert second.id == first.id
    assert second.text == BEST_FIT  # the existing wording stays
    assert second.tags == ["best-fit", "greedy"]
    assert second.support == 2 and second.updated_at == T0 + 60 and second.created_at == T0
    assert [(p.run_id, p.generation, p.problem, p.source) for p in second.provenance] == [
        ("r1", 1, "bpp_online", "model"), ("r2", 4, "bpp_offline", "contrast"),
    ]
    assert second.problems == ["bpp_online", "bpp_offline"]
    assert len(kb.list(status=None)) == 1


def test_replaying_the_same_statement_changes_nothing(kb, clock):
    prov = {"run_id": "r1", "generation": 2, "candidate_ids": ["a", "b"]}
    first = kb.add(BEST_FIT, [], "bpp_online", provenance=prov)
    clock.advance(5)
    again = kb.add(BEST_FIT, [], "bpp_online", provenance=prov)
    assert again == first


def test_distinct_advice_is_not_merged(kb):
    a = kb.add("Heuristics that use np.exp scored better.")
    b = kb.add("Heuristics that use np.log scored better.")
    c = kb.add("Avoid bins with the smallest remaining capacity after placing the item.")
    d = kb.add(BEST_FIT)
    assert len({a.id, b.id, c.id, d.id}) == 4


def test_restating_a_retired_principle_does_not_revive_it(kb):
    p = kb.add(BEST_FIT, provenance={"run_id": "r1"})
    kb.retire([p.id])
    again = kb.add(BEST_FIT_REWORDED, provenance={"run_id": "r2"})
    assert again.id == p.id and again.status == "retired" and again.support == 2
    assert kb.reactivate(p.id).status == "active"


def test_list_filters_and_orders_by_utility(kb):
    a = kb.add("Use np.exp on the gap.", problem="bpp_online")
    b = kb.add("Use np.log on the gap.", problem="tsp_construct", source="user")
    c = kb.add("Use np.sqrt on the gap.", problem="bpp_online")
    kb.credit([c.id], 1.0, True)
    kb.credit([b.id], -1.0, False)
    assert [p.id for p in kb.list()] == [c.id, a.id, b.id]
    assert [p.id for p in kb.list(problem="bpp_online")] == [c.id, a.id]
    assert [p.id for p in kb.list(source="user")] == [b.id]
    assert [p.id for p in kb.list(limit=1)] == [c.id]
    kb.retire([a.id])
    assert [p.id for p in kb.list(status="retired")] == [a.id]
    assert len(kb.list(status=None)) == 3
    with pytest.raises(ValueError):
        kb.list(status="deleted")


def test_get_find_id_and_resolve(kb):
    p = kb.add("Use np.exp on the gap.")
    assert kb.get("p-missing") is None
    assert kb.find_id(p.id) == p.id
    assert kb.find_id(p.id[:8]) == p.id
    with pytest.raises(PrincipleNotFound):
        kb.find_id("zzz")
    with pytest.raises(PrincipleNotFound):
        kb.find_id("")
    with pytest.raises(PrincipleNotFound):
        kb.resolve("p-missing")
    assert kb.resolve(p.id) == p


def test_search_uses_fts_with_stemming_and_tags(kb):
    tight = kb.add("Prefer bins that the item fills tightly.", ["best-fit"])
    edges = kb.add("Penalise long edges to unvisited cities.", ["tsp"])
    kb.add("Normalise scores by the bin capacity.", ["scaling"])
    assert [p.id for p in kb.search("bin fill")] == [tight.id]  # stemmed: bins/fills
    assert [p.id for p in kb.search("best-fit")] == [tight.id]  # tags are searched
    assert [p.id for p in kb.search("edge tsp")] == [edges.id]
    assert {p.id for p in kb.search("edges bins", any_term=True)} >= {tight.id, edges.id}
    assert kb.search("edges bins") == []
    assert kb.search("") == [] and kb.search("the of") == []


@pytest.mark.parametrize("query", ['"', 'bins" OR "x', "NEAR(bins tight)", "bins*", "text:bins", "AND OR NOT", "-bins ^"])
def test_search_escapes_fts_syntax(kb, query):
    kb.add("Prefer bins that the item fills tightly.")
    kb.search(query)  # must not raise an FTS5 syntax error


def test_search_excludes_retired_unless_asked(kb):
    p = kb.add("Prefer bins that the item fills tightly.")
    kb.retire([p.id])
    assert kb.search("bins") == []
    assert [q.id for q in kb.search("bins", status=None)] == [p.id]


def test_persistence_across_reopen(kb_path, clock):
    with KnowledgeBase(kb_path, clock=clock) as first:
        p = first.add(BEST_FIT, ["best-fit"], "bpp_online", provenance={"run_id": "r1", "generation": 2})
        first.credit([p.id], 0.5, True)
        expected = first.get(p.id)
    with KnowledgeBase(kb_path, clock=clock) as second:
        assert second.get(p.id) == expected
        assert [q.id for q in second.search("capacity")] == [p.id]


def test_file_is_wal_and_versioned(kb, kb_path):
    kb.add("Use np.exp on the gap.")
    conn = sqlite3.connect(kb_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM principles").fetchone()[0] == 1
    finally:
        conn.close()


def test_newer_schema_and_foreign_files_are_refused(tmp_path):
    newer = tmp_path / "newer.sqlite"
    KnowledgeBase(newer).close()
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(KnowledgeBaseError, match="newer"):
        KnowledgeBase(newer)

    foreign = tmp_path / "other.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE something (x)")
    conn.commit()
    conn.close()
    with pytest.raises(KnowledgeBaseError, match="not a hifo knowledge base"):
        KnowledgeBase(foreign)

    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(KnowledgeBaseError):
        KnowledgeBase(garbage)


def test_create_false_does_not_create(tmp_path):
    with pytest.raises(FileNotFoundError):
        KnowledgeBase(tmp_path / "absent.sqlite", create=False)
    assert not (tmp_path / "absent.sqlite").exists()


def test_default_path_honours_environment(monkeypatch, tmp_path):
    from hifo.knowledge_base import default_kb_path

    monkeypatch.setenv("HIFO_KB", str(tmp_path / "x.sqlite"))
    assert default_kb_path() == tmp_path / "x.sqlite"
    monkeypatch.delenv("HIFO_KB")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_kb_path() == tmp_path / ".local" / "share" / "hifo" / "knowledge.sqlite"


def test_closed_store_refuses_work(kb_path):
    store = KnowledgeBase(kb_path)
    store.close()
    with pytest.raises(KnowledgeBaseError, match="closed"):
        store.list()


def test_stats(kb):
    a = kb.add("Use np.exp on the gap.", problem="bpp_online")
    kb.add("Use np.log on the gap.", problem=None, source="user")
    kb.credit([a.id], 1.0, True)
    stats = kb.stats()
    json.dumps(stats)
    assert stats["principles"] == 2 and stats["active"] == 2 and stats["retired"] == 0
    assert stats["uses"] == 1 and stats["wins"] == 1
    assert stats["by_source"] == {"model": 1, "user": 1}
    assert stats["by_problem"] == {"(general)": 1, "bpp_online": 1}
    assert stats["mean_utility_active"] == pytest.approx(0.15)


def _writer(path: str, worker: int, count: int) -> None:
    with KnowledgeBase(path) as store:
        for i in range(count):
            p = store.add(f"Scale the score by {worker}.{i} before ranking.", problem="bpp_online",
                          provenance={"run_id": f"w{worker}", "generation": i})
            store.credit([p.id], 0.1, False)


def test_several_processes_can_write_at_once(kb_path):
    KnowledgeBase(kb_path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(kb_path), w, 15)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    with KnowledgeBase(kb_path) as store:
        principles = store.list(status=None)
        assert len(principles) == 60
        assert all(p.uses == 1 for p in principles)


def test_merge_threshold_decides_what_counts_as_a_duplicate(tmp_path):
    paraphrase = "Prefer bins with smallest remaining capacity once the item is placed."  # similarity 7/9
    with KnowledgeBase(tmp_path / "default.sqlite") as loose:
        assert loose.add(BEST_FIT).id == loose.add(paraphrase).id
    with KnowledgeBase(tmp_path / "strict.sqlite", merge_threshold=0.9) as strict:
        assert strict.add(BEST_FIT).id != strict.add(paraphrase).id
    with pytest.raises(ValueError):
        KnowledgeBase(tmp_path / "bad.sqlite", merge_threshold=0.0)
