"""Issue 15: bad inputs are one-line errors that leave no run directory; model failures stop a run
loudly; Ctrl-C and crashes are recorded and resumable; the run directory and spend are shown."""

import json
import subprocess
import sys

import pytest
from agentkit import hifo_cli_interruptible
from typer.testing import CliRunner

from hifo.agents.cli import app
from hifo.agents.config import RunConfig
from hifo.agents.graph import start_run
from hifo.agents.llm.base import LLMError

runner = CliRunner()
SMALL = ["-p", "bpp_online", "-g", "1", "-n", "2", "--offspring", "2", "--seed", "3", "--test-set", "train",
         "--workers", "2"]


def _no_traceback(res):
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)


@pytest.fixture
def runs_root(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    monkeypatch.setenv("HIFO_RUNS", str(root))
    return root


def test_bad_inputs_are_one_line_errors_and_leave_no_run_dir(tmp_path, runs_root):
    cases = [
        (["--model", f"replay:{tmp_path / 'none.jsonl'}"], "replay cassette"),
        (["--model", f"local:{tmp_path / 'none.gguf'}"], "GGUF model file"),
        (["--train-set", "nope"], "--train-set: unknown instance set 'nope'"),
        (["--model", "bogus:thing"], "--model: unknown model spec scheme"),
        (["-g", "-3"], "--generations"),
        (["--isolation", "paranoid"], "--isolation"),
    ]
    for extra, expected in cases:
        res = runner.invoke(app, ["run", *SMALL, *extra])
        assert res.exit_code == 2, (extra, res.output)
        assert expected in res.output, (extra, res.output)
        _no_traceback(res)
    toml = tmp_path / "typo.toml"
    toml.write_text("[run]\nproblem = 'bpp_online'\ngeneratons = 2\n")
    res = runner.invoke(app, ["run", "--config", str(toml)])
    assert res.exit_code == 2 and "did you mean 'generations'" in res.output, res.output
    res = runner.invoke(app, ["run"])
    assert res.exit_code == 2 and "--problem is required" in res.output
    assert not runs_root.exists() or not any(runs_root.iterdir())


def test_heuristic_file_errors(tmp_path):
    bad = tmp_path / "latin1.py"
    bad.write_bytes(b"# caf\xe9\ndef priority(item, bins):\n    return bins\n")
    for path, expected in ((tmp_path, "is a directory"), (bad, "is not UTF-8"), (tmp_path / "no.py", "does not exist")):
        res = runner.invoke(app, ["evaluate", "-p", "bpp_online", "--heuristic", str(path)])
        assert res.exit_code == 2 and expected in res.output, res.output
        _no_traceback(res)


def test_unreachable_model_fails_the_preflight_before_any_run_dir(runs_root):
    # port 9 (discard) refuses connections: the openai SDK's APIConnectionError, at once
    res = runner.invoke(app, ["run", *SMALL, "--model", "openai/x@http://127.0.0.1:9/v1"])
    assert res.exit_code == 2, res.output
    assert "is not usable" in res.output and "Connection" in res.output and "--no-check" in res.output
    assert not runs_root.exists() or not any(runs_root.iterdir())


class FailingModel:
    style, model = "chat", "failing"

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        raise LLMError("failing: AuthenticationError: Incorrect API key provided (not retried)")


def test_all_model_calls_failing_stops_the_run_loudly(runs_root, fake_backend):
    fake_backend(FailingModel())
    res = runner.invoke(app, ["run", *SMALL, "--model", "openai/gpt-4o-mini", "--no-check"])
    assert res.exit_code == 4, res.output
    assert "AuthenticationError: Incorrect API key provided" in res.output
    assert "100 %" not in res.output and "hifo resume" in res.output
    rows = json.loads(runner.invoke(app, ["runs", "--json"]).output)
    assert [r["status"] for r in rows] == ["failed"]


class InterruptingModel:
    """Replies like the fake model, then the user presses Ctrl-C at the ``at``-th call."""

    style, model = "chat", "fake-chat"

    def __init__(self, inner, at):
        self.inner, self.at, self.calls = inner, at, 0

    def complete(self, messages, **kw):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.inner.complete(messages, **kw)


def test_ctrl_c_marks_interrupted_and_resume_finishes(runs_root, fake_backend, make_fake_model, tmp_path):
    fake_backend(InterruptingModel(make_fake_model(), at=4))
    args = ["run", *SMALL, "--model", "openai/fake", "--kb", str(tmp_path / "kb.sqlite")]
    res = runner.invoke(app, args)
    assert res.exit_code == 130, res.output
    run_dir = next(runs_root.iterdir())
    assert f"hifo resume {run_dir}" in res.output
    assert res.output.index("run directory:") < res.output.index("foresight")  # printed at the start
    rows = json.loads(runner.invoke(app, ["runs", "--json"]).output)
    assert rows[0]["status"] == "interrupted"
    fake_backend(make_fake_model())
    res = runner.invoke(app, ["resume", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert "spend:" in res.output and (run_dir / "report.html").is_file()
    rows = json.loads(runner.invoke(app, ["runs", "--json"]).output)
    assert rows[0]["status"] == "finished" and rows[0]["tokens"] > 0


class CrashingModel(InterruptingModel):
    def complete(self, messages, **kw):
        self.calls += 1
        if self.calls == self.at:
            raise RuntimeError("disk on fire")
        return self.inner.complete(messages, **kw)


def test_crash_is_recorded_as_failed_with_a_one_line_message(runs_root, fake_backend, make_fake_model, tmp_path):
    fake_backend(CrashingModel(make_fake_model(), at=2))
    res = runner.invoke(app, ["run", *SMALL, "--model", "openai/fake", "--kb", str(tmp_path / "kb.sqlite")])
    assert res.exit_code == 1, res.output
    assert "the run crashed: RuntimeError: disk on fire" in res.output and "hifo resume" in res.output
    _no_traceback(res)
    rows = json.loads(runner.invoke(app, ["runs", "--json"]).output)
    assert rows[0]["status"] == "failed"


def test_failed_start_leaves_no_half_made_run_dir(tmp_path, monkeypatch):
    from hifo.agents.llm import factory

    def broken(*a, **k):
        raise ValueError("no such model")

    monkeypatch.setattr(factory, "make_client", broken)
    cfg = RunConfig(problem="bpp_online", model="openai/x", run_dir=str(tmp_path / "new"), kb=str(tmp_path / "kb"))
    with pytest.raises(ValueError):
        start_run(cfg)
    assert not (tmp_path / "new").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError):
        start_run(cfg.model_copy(update={"run_dir": str(mine)}))
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_version_and_unexpected_errors_are_one_line(tmp_path):
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.startswith("hifo")
    # a corrupt run store is bad input, not a crash: exit 2, the path named, no --debug advice (issue 31)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "run.sqlite").write_text("not a database")
    code = "import sys; from hifo.agents.cli import main; sys.argv = ['hifo'] + sys.argv[1:]; main()"
    out = subprocess.run([sys.executable, "-c", code, "show", str(tmp_path / "r")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr and str(tmp_path / "r" / "run.sqlite") in out.stderr
    assert "--debug" not in out.stderr, out.stderr
    # an unforeseen error (a bug in hifo): one line naming --debug, exit 1; with --debug the traceback
    crash = ("import sys, hifo.agents.report as r; from hifo.agents.cli import main\n"
             "def boom(*a, **k): raise ZeroDivisionError('a bug')\n"
             "r.show_run = boom; sys.argv = ['hifo'] + sys.argv[1:]; main()")
    out = subprocess.run([sys.executable, "-c", crash, "show", str(tmp_path / "r")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stderr and "--debug" in out.stderr, out.stderr
    assert "ZeroDivisionError: a bug" in out.stderr
    out = subprocess.run([sys.executable, "-c", crash, "--debug", "show", str(tmp_path / "r")], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1 and "Traceback" in out.stderr


def test_sigint_in_a_real_process_then_resume(tmp_path, make_fake_model):
    """The real `hifo` process: SIGINT mid-run exits 130 with the resume command; `hifo resume`
    (the same replayed model) finishes the run."""
    import os
    import signal
    import time

    from hifo.agents.llm.replay import RecordingClient
    from hifo.sandbox import LocalExecutor

    cassette = tmp_path / "c.jsonl"
    common = dict(problem="bpp_online", generations=2, population=2, offspring=3, init_samples=3, hyper_lambda=2,
                  seed=4, test_set="train", workers=1)
    with LocalExecutor(max_workers=2) as ex:
        start_run(RunConfig(model="fake", kb=str(tmp_path / "kb0"), run_dir=str(tmp_path / "rec"), **common),
                  client=RecordingClient(make_fake_model(), cassette), executor=ex)
    run_dir = tmp_path / "run"
    cli = [sys.executable, "-m", "hifo.agents.cli"]
    args = ["run", "-p", "bpp_online", "--model", f"replay:{cassette}", "-g", "2", "-n", "2", "--offspring", "3",
            "--seed", "4", "--test-set", "train", "--workers", "1", "--kb", str(tmp_path / "kb"), "--run-dir",
            str(run_dir), "--config", str(tmp_path / "run.toml")]
    (tmp_path / "run.toml").write_text("[run]\ninit_samples = 3\nhyper_lambda = 2\n")
    # the process that gets the SIGINT: interruptible even when this one was started with SIGINT ignored
    p = subprocess.Popen([*hifo_cli_interruptible(), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    deadline = time.time() + 120
    for line in p.stdout:
        seen.append(line)
        if line.strip().startswith("[1/") or time.time() > deadline:  # the first evaluation is in
            break
    os.kill(p.pid, signal.SIGINT)
    rest, _ = p.communicate(timeout=120)
    out = "".join(seen) + rest
    assert p.returncode == 130, out
    assert f"hifo resume {run_dir}" in out and "Traceback" not in out
    rows = json.loads(subprocess.run([*cli, "runs", "--json", "--root", str(tmp_path)], capture_output=True,
                                     text=True, timeout=60).stdout)
    assert {r["run"]: r["status"] for r in rows}[str(run_dir)] == "interrupted"
    res = subprocess.run([*cli, "resume", str(run_dir)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads((run_dir / "summary.json").read_text())["generations"] == 3


def test_doctor_model_check(fake_backend, make_fake_model):
    res = runner.invoke(app, ["doctor", "--no-smoke", "--model", "openai/x@http://127.0.0.1:9/v1"])
    assert res.exit_code == 2 and "is not usable: APIConnectionError" in res.output
    # the whole report is still printed (issue 31, item 8), and no flag doctor does not have is suggested
    assert "sandbox" in res.output and "paths" in res.output and "--no-check" not in res.output
    fake_backend(make_fake_model())
    res = runner.invoke(app, ["doctor", "--no-smoke", "--model", "openai/fake"])
    assert res.exit_code == 0 and "model openai/fake answered" in res.output


def test_live_progress_shows_generation_evaluations_best_and_spend(tmp_path):
    import io

    from rich.console import Console

    from hifo.agents.progress import RunProgress
    from hifo.agents.rundb import RunStore

    store = RunStore(tmp_path / "run.sqlite")
    store.add_prompt(generation=0, operator="i1", messages=[], principle_ids=[], reply="x",
                     usage={"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.0125})
    store.close()
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=200)
    with RunProgress(con, generations=3, max_wall_s=600) as prog:
        prog.on_event("start", {"run_dir": str(tmp_path)})
        prog.on_event("seed", {"baselines": ["a", "b"]})
        prog.on_event("foresight", {"generation": 1, "regime": "explore", "reason": "stagnation", "directive": "",
                                    "numbers": {"stagnation": 2, "code_diversity": 0.5, "behaviour_diversity": 0.4}})
        prog.on_event("model_errors", {"generation": 1, "errors": 1, "calls": 2, "error": "AuthenticationError: bad key"})
        prog.on_event("propose", {"generation": 1, "prompts": 2, "replies": 2, "new": 3, "hyper": 1,
                                  "stop_reason": None})
        prog.on_event("evaluated", {"generation": 1, "id": "g1-000", "operator": "e1", "feasible": True,
                                    "objective": 4.25, "error": None, "done": 1, "total": 4})
        prog.progress.refresh()
        info = prog.progress.tasks[0].fields["info"]
        assert "evals 1/6 (5 pending)" in info
        # the bar moved with the evaluation (1 of the generation's 4), so a remaining time can be estimated
        assert prog.progress.tasks[0].completed == pytest.approx(0.25)
        prog.on_event("select", {"generation": 1, "population": [], "best": 4.25, "best_id": "g1-000"})
        prog.progress.refresh()
        info = prog.progress.tasks[0].fields["info"]
    # select comes after every evaluation of the generation: nothing is pending any more (issue 31, item 9)
    assert "evals 1/1 (0 pending)" in info and "best 4.25" in info and "explore" in info
    assert "1 calls, 120 tok, $0.0125" in info and "wall budget left" in info
    import re

    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue())
    assert "gen 1/3" in text and "wall budget left" in text  # the live bar was drawn
    assert f"run directory: {tmp_path}" in text and "AuthenticationError: bad key" in text


def test_target_and_patience_stop_early(tmp_path, make_fake_model):
    from hifo.sandbox import LocalExecutor

    base = dict(problem="bpp_online", model="fake", generations=6, population=2, offspring=2, init_samples=2,
                hyper_lambda=0, seed=1, test_set="train", workers=2)
    with LocalExecutor(max_workers=2) as ex:
        # any heuristic, baselines included, is within 100 % excess: the target is reached at once
        _, s = start_run(RunConfig(target=100.0, kb=str(tmp_path / "k1"), run_dir=str(tmp_path / "t"), **base),
                         client=make_fake_model(), executor=ex)
        assert s["stop_reason"] == "target excess_percent = 100 reached" and s["generations"] == 1
        # a model that only ever writes worst fit never beats the baselines: no new best after generation 0
        worst = make_fake_model(["```python\ndef priority(item, bins):\n    return bins - item\n```"])
        _, s = start_run(RunConfig(patience=2, kb=str(tmp_path / "k2"), run_dir=str(tmp_path / "p"), **base),
                         client=worst, executor=ex)
        assert s["stop_reason"] == "no new best for 2 generation(s) (--patience)" and s["generations"] == 3


def test_resume_extends_a_finished_run(tmp_path, fake_backend, make_fake_model):
    fake_backend(make_fake_model())
    run_dir = tmp_path / "run"
    args = ["run", *SMALL, "--model", "openai/fake", "--kb", str(tmp_path / "kb.sqlite"), "--run-dir", str(run_dir)]
    assert runner.invoke(app, args).exit_code == 0
    before = json.loads((run_dir / "summary.json").read_text())
    res = runner.invoke(app, ["resume", str(run_dir)])  # nothing new asked: the summary again
    assert res.exit_code == 0 and json.loads((run_dir / "summary.json").read_text()) == before
    res = runner.invoke(app, ["resume", str(run_dir), "--generations", "3"])
    assert res.exit_code == 0, res.output
    after = json.loads((run_dir / "summary.json").read_text())
    assert before["generations"] == 2 and after["generations"] == 4
    assert after["evaluations"] > before["evaluations"] and after["stop_reason"] == "3 generation(s) done"
    assert json.loads((run_dir / "config.json").read_text())["generations"] == 3
    res = runner.invoke(app, ["resume", str(run_dir), "--generations", "-1"])
    assert res.exit_code == 2 and "--generations" in res.output


def test_a_run_stopped_by_its_model_resumes_with_another(runs_root, make_fake_model, monkeypatch, tmp_path):
    """Issue 31, item 8: the advice after a model failure leads somewhere: `hifo resume RUN --model NAME`."""
    from hifo.agents.llm import factory

    def make_client(spec, *, cache_path=None, record_path=None, max_calls=None, max_cost_usd=None, seed=None, **kw):
        model = FailingModel() if spec.endswith("/down") else make_fake_model()
        return factory.wrap_client(model, record_path=record_path, max_calls=max_calls, max_cost_usd=max_cost_usd,
                                   seed=seed)

    monkeypatch.setattr(factory, "make_client", make_client)
    res = runner.invoke(app, ["run", *SMALL, "--model", "openai/down", "--no-check", "--kb", str(tmp_path / "kb.sqlite")])
    assert res.exit_code == 4, res.output
    run_dir = next(runs_root.iterdir())
    assert f"hifo resume {run_dir} --model NAME" in " ".join(res.output.split())
    res = runner.invoke(app, ["resume", str(run_dir), "--model", "openai/up"])
    assert res.exit_code == 0, res.output
    assert json.loads((run_dir / "config.json").read_text())["model"] == "openai/up"
    rows = json.loads(runner.invoke(app, ["runs", "--json"]).output)
    assert [r["status"] for r in rows] == ["finished"] and rows[0]["evaluations"] > 2


def test_the_crash_advice_names_a_debug_flag_that_works():
    res = subprocess.run([sys.executable, "-m", "hifo.agents.cli", "--help"], capture_output=True, text=True)
    assert "--debug" in res.stdout  # the flag sits before the command: `hifo --debug COMMAND ...`
    src = (__import__("hifo.agents.cli", fromlist=["x"]).__file__)
    text = open(src).read()
    assert "rerun with --debug" not in text and "`hifo --debug COMMAND ...`" in text


def test_a_local_server_without_address_is_not_called_a_missing_key(monkeypatch):
    """Issue 31, item 8: no Ollama server was reported as "missing API key: set OLLAMA_API_BASE"."""
    from hifo.agents import preflight

    class Spec:
        kind, target = "litellm", "ollama_chat/llama3"

    class FakeLitellm:
        @staticmethod
        def validate_environment(model):
            return {"missing_keys": ["OLLAMA_API_BASE"], "keys_in_environment": False}

    import hifo.agents.llm.litellm_client as lc

    monkeypatch.setattr(lc, "import_litellm", lambda: FakeLitellm)
    said = preflight._missing_keys(Spec())
    assert "API key" not in said and "OLLAMA_API_BASE" in said and "server running" in said


def test_recalled_principles_are_printed_whole_once(tmp_path):
    """Issue 31, item 9: recalled principles were reprinted every generation, cut mid-word."""
    import io
    import re

    from rich.console import Console

    from hifo.agents.progress import RunProgress

    long = "Prefer bins[mask] whose remaining gap after packing is small " * 4 + "END"
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=False, width=400)
    with RunProgress(con, generations=2, live=False) as prog:
        for _ in range(2):
            prog.on_event("recall", {"principles": [{"id": "p1", "problem": "bpp_online", "utility": 0.5, "text": long}]})
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue())
    assert text.count(long) == 1 and "bins[mask]" in text
    assert "recall again (text above): #p1" in text


def test_repair_rounds_are_counted_as_such_and_general_principles_name_no_none():
    import io

    from rich.console import Console

    from hifo.agents.progress import RunProgress

    buf = io.StringIO()
    con = Console(file=buf, force_terminal=False, width=400)
    with RunProgress(con, generations=1, live=False) as prog:
        prog.on_event("recall", {"principles": [{"id": "p9", "problem": None, "utility": 0.0, "text": "Keep it simple."}]})
        for i, op in enumerate(("m1", "m2"), 1):
            prog.on_event("evaluated", {"done": i, "total": 2, "id": f"g1-00{i}", "operator": op, "feasible": False,
                                        "objective": None, "error": "ValueError: got shape ()"})
        prog.on_event("evaluated", {"done": 1, "total": 1, "id": "g1-001x", "operator": "repair", "feasible": True,
                                    "objective": 4.9554, "error": None})
    text = buf.getvalue()
    assert "(any problem, utility 0.0) Keep it simple." in text and "None" not in text
    assert "[2/2] g1-002 m2" in text and "[repair 1/1] g1-001x repair" in text, text


def test_the_live_bar_reads_the_spend_while_a_step_runs(tmp_path, monkeypatch):
    """Issue 31, item 9: the bar showed "0 calls, 0 tok" until the first step ended."""
    import io
    import time

    from rich.console import Console

    from hifo.agents import progress as pr
    from hifo.agents.rundb import RunStore

    monkeypatch.setattr(pr, "SPEND_REFRESH_S", 0.05)
    store = RunStore(tmp_path / "run.sqlite")
    con = Console(file=io.StringIO(), force_terminal=True, width=200)
    with pr.RunProgress(con, generations=1) as prog:
        prog.on_event("start", {"run_dir": str(tmp_path)})
        assert "0 calls" in prog.progress.tasks[0].fields["info"]
        store.add_prompt(generation=0, operator="i1", messages=[], principle_ids=[], reply="x",
                         usage={"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.0})
        deadline = time.monotonic() + 10
        while "1 calls, 120 tok" not in prog.progress.tasks[0].fields["info"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "1 calls, 120 tok" in prog.progress.tasks[0].fields["info"]  # no event came: the ticker read it
    store.close()
