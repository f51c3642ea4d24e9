"""``hifo data …``: the data-generation tools the evaluators' messages point to, run from the installed CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hifo.agents.cli import app
from hifo.evaluators.tsp_construct import REFS_PATH, random_set_specs

runner = CliRunner()


def test_data_help_lists_the_tools():
    res = runner.invoke(app, ["data", "--help"])
    assert res.exit_code == 0, res.output
    tools = ("tsp-refs", "train-radar", "train-fmip", "routing-refs", "optwvp-refs")
    for name in tools:
        assert name in res.output
    top = runner.invoke(app, ["--help"])
    assert "data" in top.output
    for name in tools:
        sub = runner.invoke(app, ["data", name, "--help"])
        assert sub.exit_code == 0, sub.output
        assert "--out" in sub.output or "--weights" in sub.output


def test_tsp_refs_on_the_train_set_reproduces_the_packaged_references(tmp_path):
    pytest.importorskip("elkai")
    out = tmp_path / "refs.json"
    res = runner.invoke(app, ["data", "tsp-refs", "--set", "train", "--no-tsplib", "--runs", "1",
                              "--out", str(out), "--results", str(tmp_path / "summary.json")])
    assert res.exit_code == 0, res.output
    made = json.loads(out.read_text())
    packaged = json.loads(REFS_PATH.read_text())
    names = [name for name, _, _ in random_set_specs("train")]
    assert sorted(made["random"]) == sorted(names) and made["tsplib"] == {}
    for name in names:
        new, old = made["random"][name], packaged["random"][name]
        assert new["coords_sha256"] == old["coords_sha256"] and (new["n"], new["seed"]) == (old["n"], old["seed"])
        # one LKH-3 run instead of ten: at n = 50 it finds the same tour, or one within 1 %
        assert new["length"] == pytest.approx(old["length"], rel=0.01)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [r["instance"] for r in summary["rows"]] == names


def test_tsp_refs_refuses_a_partial_run_over_the_packaged_file():
    pytest.importorskip("elkai")
    before = REFS_PATH.read_bytes()
    res = runner.invoke(app, ["data", "tsp-refs", "--set", "train", "--no-tsplib"])
    assert res.exit_code == 2
    assert "pass --out" in res.output
    assert REFS_PATH.read_bytes() == before


def test_tsp_refs_needs_the_optima_for_tsplib(tmp_path):
    pytest.importorskip("elkai")
    res = runner.invoke(app, ["data", "tsp-refs", "--set", "train", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 2 and "--optima" in res.output
    assert not (tmp_path / "r.json").exists()


def test_unknown_radar_variant_is_an_error():
    pytest.importorskip("torch")
    pytest.importorskip("elkai")
    res = runner.invoke(app, ["data", "train-radar", "--variant", "nope", "--no-save"])
    assert res.exit_code == 2 and "unknown variant" in res.output
