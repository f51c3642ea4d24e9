"""A recorded run replays exactly: same prompts, same candidates, same scores."""

import json

from hifo.agents.config import RunConfig
from hifo.agents.graph import start_run
from hifo.agents.llm.factory import make_client
from hifo.agents.llm.replay import RecordingClient, ReplayMismatch
from hifo.agents.rundb import RunStore
from hifo.sandbox import LocalExecutor


def _table(run_dir):
    store = RunStore(run_dir / "run.sqlite")
    try:
        cands = [(c.id, c.operator, c.parents, c.code, c.status, c.fitness, c.error) for c in store.candidates(order="id")]
        prompts = sorted((p["generation"], p["operator"], "\n".join(m["content"] for m in p["messages"]), p["reply"])
                         for p in store.prompts())
        return cands, prompts, [(f["regime"], f["reason"]) for f in store.foresight()]
    finally:
        store.close()


def test_replay_reproduces_a_run_exactly(tmp_path, fake_model):
    cassette = tmp_path / "cassette.jsonl"
    common = dict(problem="bpp_online", generations=2, population=3, offspring=4, hyper_lambda=2, seed=5,
                  init_samples=8, workers=2, test_set="train")
    with LocalExecutor(max_workers=2) as ex:
        rec_dir, rec = start_run(RunConfig(model="fake", kb=str(tmp_path / "kb1.sqlite"), run_dir=str(tmp_path / "a"),
                                           **common), client=RecordingClient(fake_model, cassette), executor=ex)
        calls = fake_model.calls
        rep_client = make_client(f"replay:{cassette}")
        rep_dir, rep = start_run(RunConfig(model=f"replay:{cassette}", kb=str(tmp_path / "kb2.sqlite"),
                                           run_dir=str(tmp_path / "b"), **common), client=rep_client, executor=ex)
    assert fake_model.calls == calls  # the replay never touched the model
    a, b = _table(rec_dir), _table(rep_dir)
    assert a[0] == b[0] and len(a[0]) > 10
    assert a[1] == b[1]
    assert a[2] == b[2]
    assert rec["best"]["objective"] == rep["best"]["objective"]


def _export(kb_path):
    from hifo.agents.run_kb import export_document
    from hifo.knowledge_base import KnowledgeBase

    with KnowledgeBase(kb_path, create=False) as kb:
        return export_document(kb)["principles"]


def test_record_then_replay_on_a_shared_kb_that_already_holds_principles(tmp_path, make_fake_model, fake_backend):
    """The README's two commands, on one shared store that an earlier run filled: the replay reproduces
    the recording exactly and leaves the shared store as the recording left it."""
    from typer.testing import CliRunner

    from hifo.agents.cli import app

    kb = tmp_path / "shared.sqlite"
    common = dict(problem="bpp_online", generations=2, population=3, offspring=4, hyper_lambda=2, seed=5,
                  init_samples=6, workers=2, test_set="train")
    with LocalExecutor(max_workers=2) as ex:
        start_run(RunConfig(model="fake", kb=str(kb), run_dir=str(tmp_path / "earlier"), **common),
                  client=make_fake_model(), executor=ex)
    before = _export(kb)
    assert len(before) >= 2
    fake_backend(make_fake_model())
    cassette = tmp_path / "cassette.jsonl"
    toml = tmp_path / "run.toml"
    toml.write_text("[run]\ninit_samples = 6\nhyper_lambda = 2\nworkers = 2\n")
    args = ["run", "-p", "bpp_online", "-g", "2", "-n", "3", "--offspring", "4", "--seed", "5", "--kb", str(kb),
            "--test-set", "train", "--config", str(toml)]
    runner = CliRunner()
    rec = runner.invoke(app, [*args, "--model", "fake/chat", "--record", str(cassette), "--run-dir",
                              str(tmp_path / "rec")])
    assert rec.exit_code == 0, rec.output
    after_recording = _export(kb)
    assert after_recording != before  # the recorded run wrote principles and credit into the shared store
    rep = runner.invoke(app, [*args, "--model", f"replay:{cassette}", "--run-dir", str(tmp_path / "rep")])
    assert rep.exit_code == 0, rep.output
    a, b = _table(tmp_path / "rec"), _table(tmp_path / "rep")
    assert a == b and len(a[0]) > 10
    # the recalled principles were in the prompts from generation 0 on: the snapshot mattered
    store = RunStore(tmp_path / "rep" / "run.sqlite")
    try:
        assert any(p["principle_ids"] for p in store.prompts(0))
        assert store.get_meta("kb")["source"].startswith("snapshot in")
    finally:
        store.close()
    rec_summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    rep_summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert rec_summary["best"] == rep_summary["best"]
    assert _export(kb) == after_recording  # the replay wrote nothing into the shared store
    # the replay's private store ends where the recording's shared one did
    def strip(ps):
        return sorted((p["id"], p["uses"], p["wins"], p["utility"], p["status"]) for p in ps)
    assert strip(_export(tmp_path / "rep" / "knowledge.sqlite")) == strip(after_recording)


def test_a_diverging_replay_is_one_clear_line_and_a_nonzero_exit(tmp_path, make_fake_model, fake_backend):
    from typer.testing import CliRunner

    from hifo.agents.cli import app

    fake_backend(make_fake_model())
    cassette = tmp_path / "c.jsonl"
    args = ["run", "-p", "bpp_online", "-g", "1", "-n", "2", "--offspring", "2", "--kb", str(tmp_path / "kb.sqlite"),
            "--test-set", "train", "--workers", "2"]
    runner = CliRunner()
    assert runner.invoke(app, [*args, "--model", "fake/chat", "--seed", "1", "--record", str(cassette), "--run-dir",
                               str(tmp_path / "rec")]).exit_code == 0
    res = runner.invoke(app, [*args, "--model", f"replay:{cassette}", "--seed", "2", "--run-dir",
                              str(tmp_path / "rep")])
    assert res.exit_code == 3, res.output
    assert "Traceback" not in res.output and not isinstance(res.exception, ReplayMismatch)
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "diverged" in errors[0] and str(cassette) in errors[0]
    store = RunStore(tmp_path / "rep" / "run.sqlite")
    try:
        assert store.get_meta("status") == "diverged" and "not in the cassette" in store.get_meta("stop_reason")
    finally:
        store.close()
