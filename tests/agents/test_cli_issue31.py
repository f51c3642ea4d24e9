"""Issue 31 (CLI items): verbatim help defaults, replay temperature, damaged / copied / read-only runs."""

from __future__ import annotations

import json
import sqlite3

from typer.testing import CliRunner

from hifo.agents.cli import app
from hifo.agents.config import RunConfig
from hifo.agents.graph import _thread_id
from hifo.agents.llm.replay import recorded_temperature
from hifo.agents.report import list_runs
from hifo.agents.rundb import RunStore

runner = CliRunner()


def test_help_shows_every_default_verbatim():
    out = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    for text in ("[default: 4]", "[default: 6]", "[default: 0]", "$HIFO_RUNS", "$HIFO_KB", "[run] table"):
        assert text in out, text


def test_replay_uses_the_recorded_temperature(tmp_path):
    cassette = tmp_path / "c.jsonl"
    lines = [{"type": "header", "model": "local"},
             {"type": "call", "request": {"temperature": 0.0}},  # the pre-flight check
             {"type": "call", "request": {"temperature": 0.7}},
             {"type": "call", "request": {"temperature": 0.7}}]
    cassette.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert recorded_temperature(cassette) == 0.7
    assert RunConfig(problem="bpp_online", model=f"replay:{cassette}").temperature == 0.7
    assert RunConfig(problem="bpp_online", model=f"replay:{cassette}", temperature=0.3).temperature == 0.3
    assert recorded_temperature(tmp_path / "missing.jsonl") is None
    # the run writes its own temperature with the knowledge-base snapshot: re-draws at 1.2 may outnumber the
    # first calls (a model that repeats itself), and the most common temperature then is not the run's
    redraws = [{"type": "call", "request": {"temperature": 1.2}}] * 5
    cassette.write_text("\n".join(json.dumps(x) for x in [lines[0], {"type": "kb_snapshot", "temperature": 0.7},
                                                          *lines[1:], *redraws]) + "\n")
    assert recorded_temperature(cassette) == 0.7


def test_a_damaged_run_is_listed_with_its_path(tmp_path):
    good = tmp_path / "good"
    store = RunStore(good / "run.sqlite")
    store.set_meta("config", {"problem": "bpp_online", "model": "fake"})
    store.set_meta("status", "finished")
    store.close()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.sqlite").write_bytes(b"not a database" * 100)
    rows = {r["run"]: r for r in list_runs(tmp_path)}
    assert rows[str(good)]["status"] == "finished"
    assert rows[str(bad)]["status"].startswith("damaged") and str(bad / "run.sqlite") in rows[str(bad)]["status"]


def test_read_only_open_writes_nothing(tmp_path):
    store = RunStore(tmp_path / "run.sqlite")
    store.set_meta("status", "finished")
    store.close()
    before = (tmp_path / "run.sqlite").read_bytes()
    ro = RunStore(tmp_path / "run.sqlite", readonly=True)
    assert ro.get_meta("status") == "finished"
    try:
        ro.set_meta("status", "x")
        raise AssertionError("a read-only store accepted a write")
    except sqlite3.OperationalError:
        pass
    ro.close()
    assert (tmp_path / "run.sqlite").read_bytes() == before


def test_a_copied_run_keeps_its_checkpoint_thread(tmp_path):
    conn = sqlite3.connect(tmp_path / "checkpoints.sqlite")
    assert _thread_id(conn, "new-name") == "new-name"  # a new run
    conn.execute("CREATE TABLE checkpoints (thread_id TEXT)")
    conn.execute("INSERT INTO checkpoints VALUES ('old-name')")
    assert _thread_id(conn, "new-name") == "old-name"  # copied/renamed: resumes the recorded thread
    conn.close()


def test_text_a_user_or_model_wrote_is_shown_verbatim(tmp_path):
    """Issue 31, item 1: brackets and emoji codes in principles and in a candidate's error were eaten by markup."""
    from hifo.knowledge_base.store import KnowledgeBase

    kb = tmp_path / "kb.sqlite"
    text = "Score bins[mask] first :fire: then [bold]x[/bold] gaps"
    pid = KnowledgeBase(kb).add(text, problem="bpp_online", source="user").id
    for args in (["principles", "list", "--kb", str(kb)], ["principles", "show", pid, "--kb", str(kb)],
                 ["principles", "search", "bins", "--kb", str(kb)]):
        out = " ".join(runner.invoke(app, args, env={"COLUMNS": "300"}).output.split())
        assert "bins[mask]" in out and ":fire:" in out and "[bold]x[/bold]" in out, (args, out)
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\ndef priority(item, bins):\n"
                   "    raise TypeError('expected list[float], got dict[str, int] :fire:')\n")
    res = runner.invoke(app, ["evaluate", "-p", "bpp_online", "--heuristic", str(bad), "--isolation", "minimal"])
    assert res.exit_code == 5 and "expected list[float], got dict[str, int] :fire:" in res.output, res.output
    res = runner.invoke(app, ["evaluate", "-p", str(tmp_path / "np[x]" / "broken.py") + ":X", "--heuristic", str(bad)])
    assert res.exit_code == 2 and "np[x]" in res.output, res.output


def test_runs_made_elsewhere_are_listed(tmp_path, monkeypatch, make_fake_model):
    """Issue 31: a run made with --run-dir outside the runs directory was missing from `hifo runs`."""
    from hifo.agents.graph import start_run
    from hifo.sandbox import LocalExecutor

    monkeypatch.setenv("HIFO_RUNS", str(tmp_path / "runs"))
    elsewhere = tmp_path / "else where" / "my run"
    with LocalExecutor(max_workers=1) as ex:
        start_run(RunConfig(problem="bpp_online", model="fake", generations=0, population=2, offspring=2,
                            init_samples=2, hyper_lambda=0, seed=1, test_set="train", kb=str(tmp_path / "kb"),
                            run_dir=str(elsewhere)), client=make_fake_model(), executor=ex)
    rows = json.loads(runner.invoke(app, ["runs", "--json"]).output)
    assert [r["run"] for r in rows] == [str(elsewhere)] and rows[0]["status"] == "finished"
    (tmp_path / "runs").mkdir()
    assert json.loads(runner.invoke(app, ["runs", "--json", "--root", str(tmp_path / "runs")]).output) == []
    import shutil

    shutil.rmtree(elsewhere)  # a deleted run drops out of the list
    assert json.loads(runner.invoke(app, ["runs", "--json"]).output) == []


def test_runs_list_shows_paths_verbatim_at_any_width(tmp_path):
    # a "[" in a folder name is not markup, and a narrow terminal wraps the text columns without losing them
    import os
    import subprocess
    import sys

    run = tmp_path / "exp [bold]x :fire:"
    store = RunStore(run / "run.sqlite")
    store.set_meta("config", {"problem": "bpp_online", "model": "openai/m[1]"})
    store.set_meta("status", "finished")
    store.close()
    code = "import sys; from hifo.agents.cli import main; sys.argv = ['hifo'] + sys.argv[1:]; main()"
    done = subprocess.run([sys.executable, "-c", code, "runs", "--root", str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # below 100 columns: one stanza per run, its path alone on the first line, exactly as on disk
    assert lines[0] == str(run), done.stdout
    assert "bpp_online · openai/m[1] · finished · 0 evaluations" in lines[1], done.stdout
    wide = subprocess.run([sys.executable, "-c", code, "runs", "--root", str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert str(run) in wide.stdout and "openai/m[1]" in wide.stdout and "┃ run" in wide.stdout, wide.stdout
