"""Each candidate's record says where it ran (node) and under which sandbox layers."""

from __future__ import annotations

import json
import sqlite3

from hifo.agents.evaluation import score_result
from hifo.agents.report import show_run
from hifo.agents.rundb import RunStore
from hifo.evaluators.registry import get_evaluator
from hifo.sandbox.job import SandboxResult

ISO = {"sandbox": "v2", "level": "standard", "warm_worker": True, "worker_pid": 123,
       "layers": {"pid_namespace": True, "seccomp": True, "read_only_fs": False}}


def test_a_store_made_before_the_columns_existed_is_migrated(tmp_path):
    path = tmp_path / "run.sqlite"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE candidates (id TEXT PRIMARY KEY, generation INTEGER NOT NULL, operator TEXT NOT NULL,"
                " regime TEXT, parents TEXT NOT NULL DEFAULT '[]', code TEXT NOT NULL, code_hash TEXT, thought TEXT,"
                " principle_ids TEXT NOT NULL DEFAULT '[]', prompt_id TEXT, usage TEXT, status TEXT NOT NULL,"
                " feasible INTEGER, fitness REAL, objective REAL, metrics TEXT, per_instance TEXT, error TEXT,"
                " wall_s REAL, created_at REAL NOT NULL, evaluated_at REAL)")
    old.commit()
    old.close()
    store = RunStore(path)
    try:
        cid = store.add_candidate(generation=0, operator="i1", code="x", code_hash="h")
        store.record_score(cid, {"feasible": True, "fitness": 1.0, "node": "host/abc", "isolation": ISO})
        row = store.candidate(cid)
        assert row.node == "host/abc" and row.isolation["level"] == "standard"
    finally:
        store.close()


def test_scores_carry_the_node_and_placements_group_them(tmp_path):
    ev = get_evaluator("bpp_online")
    instances = ev.load_instances("train")[:1]
    failed = score_result(ev, instances, SandboxResult(status="timeout", error="slow", isolation=dict(ISO, node="n1/aa")))
    assert failed.node == "n1/aa" and "worker_pid" not in failed.isolation and not failed.feasible
    local = score_result(ev, instances, SandboxResult(status="error", error="x", isolation={"level": "minimal"}))
    assert local.node  # the local executor ran it on this machine: its host name
    run = tmp_path / "run"
    store = RunStore(run / "run.sqlite")
    try:
        for score in (failed, failed, local):
            store.record_score(store.add_candidate(generation=0, operator="i1", code="x", code_hash=None),
                               score.to_dict())
        rows = {r["node"]: r for r in store.placements()}
        assert rows["n1/aa"]["candidates"] == 2 and rows["n1/aa"]["layers"] == ["pid_namespace", "seccomp"]
        assert rows[local.node]["level"] == "minimal"
    finally:
        store.close()


def test_show_lists_where_candidates_ran(tmp_path, capsys):
    run = tmp_path / "run"
    store = RunStore(run / "run.sqlite")
    store.record_score(store.add_candidate(generation=0, operator="i1", code="x", code_hash=None),
                       {"feasible": False, "node": "n2/bb", "isolation": ISO})
    store.close()
    show_run(run, as_json=True)
    data = json.loads(capsys.readouterr().out)
    assert data["where_ran"] == [{"node": "n2/bb", "level": "standard", "layers": ["pid_namespace", "seccomp"],
                                  "warm_worker": True, "candidates": 1}]
