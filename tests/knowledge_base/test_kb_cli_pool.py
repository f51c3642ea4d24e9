"""``hifo principles list/show`` show each principle's pool state and where it helped."""

import json

import pytest
from typer.testing import CliRunner

from hifo.knowledge_base import KnowledgeBase
from hifo.knowledge_base.cli import principles_app
from hifo.knowledge_base.pool import PROBATION_USES


def invoke(*args, columns="220"):
    return CliRunner().invoke(principles_app, [str(a) for a in args], env={"COLUMNS": columns})


@pytest.fixture
def pooled(kb_path, clock):
    with KnowledgeBase(kb_path, clock=clock) as store:
        good = store.add("Prefer bins that the item fills tightly.", [], "bpp_online",
                         provenance={"run_id": "r1", "generation": 2})
        weak = store.add("Penalise long edges to unvisited cities.", [], "tsp_construct")
        fresh = store.add("Keep numbers finite with np.clip.", [], "bpp_online")
        bad = store.add("Use np.exp on the gap.", [], "bpp_online")
        for i in range(PROBATION_USES + 1):
            clock.advance(1)
            # good: helps on tsp_construct (3 uses), hurts on bpp_online (2 uses)
            store.credit([good.id], 0.5 if i % 2 == 0 else -0.1, i % 2 == 0,
                         problem="tsp_construct" if i % 2 == 0 else "bpp_online")
            store.credit([weak.id], -0.2, False, problem="tsp_construct")
            store.credit([bad.id], -0.8, False, problem="bpp_online")
        store.credit([fresh.id], 0.3, True, problem="bpp_online")
        store.retire([bad.id])
        store.enforce_pool(cap=1)
    return kb_path, good, weak, fresh, bad


def _row(output, pid):
    (line,) = [line for line in output.splitlines() if pid in line]
    return line


def _cells(output, first):
    """The cells of the table row whose first cell is ``first``."""
    rows = [[c.strip() for c in line.strip().strip("│").split("│")] for line in output.splitlines() if "│" in line]
    (row,) = [r for r in rows if r[0] == first]
    return row


def test_list_shows_state_and_where_each_principle_helped(pooled):
    path, good, weak, fresh, bad = pooled
    result = invoke("list", "--kb", path, "--status", "all")
    assert result.exit_code == 0, result.output
    assert "State" in result.output and "Helped on" in result.output
    assert "active" in _row(result.output, good.id) and "tsp_construct (3 uses)" in _row(result.output, good.id)
    assert "bpp_online" not in _row(result.output, good.id).split("tsp_construct (3 uses)")[1]
    assert "inactive" in _row(result.output, weak.id)
    assert "probation" in _row(result.output, fresh.id) and "bpp_online (1 use)" in _row(result.output, fresh.id)
    assert "retired" in _row(result.output, bad.id)
    # a narrow terminal keeps state and where it helped (one stanza per principle below 110 columns)
    narrow = invoke("list", "--kb", path, "--status", "all", columns="100")
    assert narrow.exit_code == 0 and "inactive" in narrow.output
    flat = " ".join(narrow.output.split())  # a header line may wrap
    assert "helped on tsp_construct (3 uses)" in flat and "helped on bpp_online (1 use)" in flat, narrow.output
    records = {r["id"]: r for r in json.loads(invoke("list", "--kb", path, "--status", "all", "--json").stdout)}
    assert {pid: r["pool_state"] for pid, r in records.items()} == {
        good.id: "active", weak.id: "inactive", fresh.id: "probation", bad.id: "retired"}
    assert records[good.id]["helped_on"] == ["tsp_construct"]
    assert records[good.id]["used_on"]["bpp_online"] == {"uses": 2, "wins": 0, "credit_sum": pytest.approx(-0.2)}
    assert records[weak.id]["helped_on"] == [] and records[weak.id]["used_on"]["tsp_construct"]["uses"] == 5
    found = json.loads(invoke("search", "bins", "--kb", path, "--json").stdout)
    assert [(r["id"], r["helped_on"]) for r in found] == [(good.id, ["tsp_construct"])]


def test_show_has_a_row_per_problem(pooled):
    path, good, weak, fresh, _ = pooled
    result = invoke("show", good.id, "--kb", path)
    assert result.exit_code == 0, result.output
    assert "Where it was used" in result.output and "Learnt on" in result.output
    assert "active (judged and in recall)" in result.output
    assert _cells(result.output, "tsp_construct") == ["tsp_construct", "3", "3", "+1.500", "+0.500", "yes"]
    assert _cells(result.output, "bpp_online") == ["bpp_online", "2", "0", "-0.200", "-0.100", "no"]
    data = json.loads(invoke("show", weak.id, "--kb", path, "--json").stdout)
    assert data["pool_state"] == "inactive" and data["learnt_on"] == ["tsp_construct"]
    assert data["used_on"] == {"tsp_construct": {"uses": 5, "wins": 0, "credit_sum": pytest.approx(-1.0)}}
    assert "moved out of recall" in invoke("show", weak.id, "--kb", path).output
    assert "probation" in invoke("show", fresh.id, "--kb", path).output


def test_show_of_an_unused_principle_says_so(kb_path, clock):
    with KnowledgeBase(kb_path, clock=clock) as store:
        p = store.add("Keep numbers finite.")
    result = invoke("show", p.id, "--kb", kb_path)
    assert result.exit_code == 0 and "Not used on any problem yet." in result.output
    assert "probation" in result.output


def test_stats_count_probation_and_inactive(pooled):
    path, *_ = pooled
    stats = json.loads(invoke("stats", "--kb", path, "--json").stdout)
    assert (stats["active"], stats["probation"], stats["inactive"], stats["retired"]) == (3, 1, 1, 1)
