"""``hifo data …``: the data-generation tools the evaluators' messages point to, run from the installed CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hifo.agents.cli import app
from hifo.agents.cli_data import data_app
from hifo.evaluators.tsp_construct import REFS_PATH, random_set_specs

runner = CliRunner()


def test_data_help_lists_the_tools():
    res = runner.invoke(app, ["data", "--help"])
    assert res.exit_code == 0, res.output
    tools = ("tsp-refs", "train-radar", "train-fmip", "routing-refs", "optwvp-refs", "toptwvp-refs")
    for name in tools:
        assert name in res.output
    top = runner.invoke(app, ["--help"])
    assert "data" in top.output
    for name in tools:
        sub = runner.invoke(app, ["data", name, "--help"])
        assert sub.exit_code == 0, sub.output
        assert "--out" in sub.output or "--weights" in sub.output


def test_tsp_refs_on_the_train_set_reproduces_the_packaged_references(tmp_path):
    import elkai  # noqa: F401  (in the test extra)
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
    import elkai  # noqa: F401  (in the test extra)
    before = REFS_PATH.read_bytes()
    res = runner.invoke(app, ["data", "tsp-refs", "--set", "train", "--no-tsplib"])
    assert res.exit_code == 2
    assert "pass --out" in res.output
    assert REFS_PATH.read_bytes() == before


def test_tsp_refs_needs_the_optima_for_tsplib(tmp_path):
    import elkai  # noqa: F401  (in the test extra)
    res = runner.invoke(app, ["data", "tsp-refs", "--set", "train", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 2 and "--optima" in res.output
    assert not (tmp_path / "r.json").exists()


def test_unknown_radar_variant_is_an_error():
    import torch  # noqa: F401  (a hard dependency)
    import elkai  # noqa: F401  (in the test extra)
    res = runner.invoke(app, ["data", "train-radar", "--variant", "nope", "--no-save"])
    assert res.exit_code == 2 and "unknown variant" in res.output


def test_evaluators_point_to_existing_data_commands():
    """Every ``hifo data NAME`` an evaluator mentions exists; none sends a user to the uninstalled benchmarks/."""
    import hifo.evaluators as pkg

    commands = {c.name for c in data_app.registered_commands}
    named, stale = set(), []
    for path in sorted(Path(pkg.__file__).parent.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        named |= set(re.findall(r"hifo data ([a-z][a-z-]*)", text))
        stale += [f"{path.name}: {line.strip()}" for line in text.splitlines()
                  if re.search(r"(load_refs\(|remake=|Error\(|run `).*benchmarks", line)]
    assert named and named <= commands, named - commands
    assert stale == []


def test_missing_radar_weights_name_the_command(tmp_path, monkeypatch):
    import torch  # noqa: F401  (a hard dependency)
    import hifo.problems.routing as routing
    from hifo.evaluators import radar_tune

    monkeypatch.setattr(routing, "WEIGHTS_DIR", tmp_path)
    radar_tune._model.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="hifo data train-radar"):
            radar_tune._model("radar_atsp20_radar")
    finally:
        radar_tune._model.cache_clear()


def test_missing_fmip_weights_name_the_command(tmp_path, monkeypatch):
    import torch  # noqa: F401  (a hard dependency)
    from hifo.evaluators import fmip_guidance
    from hifo.problems.milp import fmip

    monkeypatch.setattr(fmip, "WEIGHTS", tmp_path / "fmip.pt")
    fmip_guidance._model.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="hifo data train-fmip"):
            fmip_guidance._model()
    finally:
        fmip_guidance._model.cache_clear()


def test_train_radar_acvrp_steps_trains_the_acvrp_model(tmp_path):
    import torch  # a hard dependency
    torch.set_num_threads(1)
    res = runner.invoke(app, ["data", "train-radar", "--acvrp-steps", "1", "--weights-dir", str(tmp_path),
                              "--results", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "radar_acvrp20.pt").is_file() and not list(tmp_path.glob("radar_atsp*"))
    assert json.loads((tmp_path / "r.json").read_text())["rows"][0]["steps"] == 1
