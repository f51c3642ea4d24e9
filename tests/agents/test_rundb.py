"""RunStore owns its SQL: the named queries the agent and the readers use."""

import pytest

from hifo.agents.rundb import RunStore


def _store(tmp_path):
    s = RunStore(tmp_path / "run.sqlite")
    s.add_candidate(generation=0, operator="baseline", code="b", code_hash="hb", cid="b0")
    for i, (op, fit) in enumerate([("e1", 1.0), ("m1", 3.0), ("hyper", 2.0), ("e1", None)]):
        cid = f"g1-{i}"
        s.add_candidate(generation=1, operator=op, code=f"c{i}", code_hash=f"h{i}", cid=cid)
        if fit is not None:
            s.record_score(cid, {"feasible": True, "fitness": fit, "objective": -fit})
    s.add_candidate(generation=2, operator="e2", code="x", code_hash="hx", cid="g2-0")
    return s


def test_keyword_filters(tmp_path):
    s = _store(tmp_path)
    assert [c.id for c in s.candidates(generation=1, operator="hyper", status="evaluated")] == ["g1-2"]
    assert {c.id for c in s.candidates(generation=1, not_operator="baseline")} == {"g1-0", "g1-1", "g1-2", "g1-3"}
    assert {c.id for c in s.candidates(not_operator=("baseline", "hyper"), status=("pending",))} == {"g1-3", "g2-0"}
    assert {c.id for c in s.candidates(up_to_generation=1, status="pending")} == {"b0", "g1-3"}
    assert [c.id for c in s.candidates(status="evaluated", order="fitness")] == ["g1-1", "g1-2", "g1-0"]
    assert [c.id for c in s.pending()] == ["b0", "g1-3", "g2-0"]
    assert s.candidate("g1-1").evaluated_at is not None


def test_named_queries(tmp_path):
    s = _store(tmp_path)
    assert [c.id for c in s.best_feasible(2)] == ["g1-1", "g1-2"]
    assert s.status_counts() == {"evaluated": 3, "pending": 3}
    assert s.expire(["g1-3", "g2-0"], "not evaluated: evaluation budget spent") == 2
    assert s.candidate("g2-0").status == "invalid" and "budget" in s.candidate("g2-0").error
    assert s.discard_proposals(1) == 4  # the batch goes whole; the baseline stays
    assert [c.id for c in s.candidates(up_to_generation=1)] == ["b0"]
    s.mark("tested")
    s.unmark("tested")
    assert s.marker("tested") is None


def test_no_sql_from_callers(tmp_path):
    s = _store(tmp_path)
    with pytest.raises(ValueError, match="unknown order"):
        s.candidates(order="fitness; DROP TABLE candidates")
    # a name filter is a bound value, never pasted
    assert s.candidates(operator="x' OR '1'='1") == []
    with pytest.raises(TypeError):  # no positional SQL fragment any more
        s.candidates("operator='m1'")  # type: ignore[misc]


def test_prompt_usage_tolerates_damage(tmp_path):
    s = _store(tmp_path)
    s.add_prompt(generation=1, operator="e1", messages=[], principle_ids=["p"], reply="r", usage={"cost_usd": 0.1})
    s.db.execute("UPDATE prompts SET usage='{broken'")
    (row,) = s.prompt_usage()
    assert isinstance(row.pop("created_at"), float)  # when the call was made (the report's calls axis)
    assert row == {"generation": 1, "operator": "e1", "principle_ids": ["p"], "usage": {}}
