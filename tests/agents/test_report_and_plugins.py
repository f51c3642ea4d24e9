"""Issue 15: the HTML report and comparison page, and plug-ins given as file.py:Class."""

import json
import subprocess
import sys
from html.parser import HTMLParser

from typer.testing import CliRunner

from hifo.agents.cli import app
from hifo.agents.config import RunConfig
from hifo.agents.graph import start_run
from hifo.agents.html_report import render_report
from hifo.evaluators.registry import get_evaluator, plugin_sys_path
from hifo.sandbox import LocalExecutor

runner = CliRunner()
PLOTS = {"best-evals", "best-calls", "genealogy", "principles", "outcomes", "spend", "sandbox"}


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.plots, self.scripts, self.external = [], 0, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("data-plot"):
            self.plots.append(a["data-plot"])
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if a.get(key) and not a[key].startswith("#"):
                self.external.append(a[key])


def _run(tmp_path, fake_model, name, seed):
    cfg = RunConfig(problem="bpp_online", model="fake", generations=2, population=2, offspring=3, init_samples=3,
                    hyper_lambda=2, seed=seed, kb=str(tmp_path / f"kb-{name}.sqlite"), run_dir=str(tmp_path / name),
                    test_set="train")
    with LocalExecutor(max_workers=2) as ex:
        path, _ = start_run(cfg, client=fake_model, executor=ex)
    return path


def test_report_has_every_plot_and_is_self_contained(tmp_path, make_fake_model):
    a = _run(tmp_path, make_fake_model(), "a", 1)
    html = render_report(a)
    p = _Collect()
    p.feed(html)
    assert set(p.plots) == PLOTS and len(p.plots) == len(PLOTS)
    assert p.external == []  # offline: plotly.js, the script and the data are all inline
    data = json.loads(html.split('id="hifo-data">')[1].split("</script>")[0])
    assert data["run"] == "a" and len(data["candidates"]) > 3 and data["foresight"]
    res = runner.invoke(app, ["report", str(a)])
    assert res.exit_code == 0 and (a / "report.html").read_text().count('class="plot"') == len(PLOTS)
    b = _run(tmp_path, make_fake_model(), "b", 2)
    out = tmp_path / "cmp.html"
    res = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    runs = json.loads(page.split('id="hifo-data">')[1].split("</script>")[0])
    assert 'data-plot="compare"' in page and [r["run"] for r in runs] == ["a", "b"]
    res = runner.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "not a hifo run directory" in res.output


def test_new_problem_scaffold_runs_in_the_sandbox_as_file_spec(tmp_path, monkeypatch):
    res = runner.invoke(app, ["new-problem", "toy_knap", "--dir", str(tmp_path / "plug")])
    assert res.exit_code == 0, res.output
    ev_file = tmp_path / "plug" / "toy_knap.py"
    spec = f"{ev_file}:ToyKnap"
    rule = tmp_path / "rule.py"
    rule.write_text("import math\n\ndef score_item(value, weight, capacity_left):\n    return value / weight ** 1.2\n")
    # the plug-in directory is not on this process's path: the sandbox gets it from the spec
    res = runner.invoke(app, ["evaluate", "-p", spec, "--heuristic", str(rule), "--instances", "train", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["feasible"] and out["metrics"]["value"] > 0
    assert plugin_sys_path(type(get_evaluator(spec))) == (str(tmp_path / "plug"),)
    assert runner.invoke(app, ["new-problem", "toy_knap", "--dir", str(tmp_path / "plug")]).exit_code == 2
    # the generated test passes as written
    test = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path / "plug" / "test_toy_knap.py")], capture_output=True, text=True, timeout=240)
    assert test.returncode == 0, test.stdout + test.stderr


def test_plugin_file_spec_in_a_run_and_clear_errors(tmp_path, monkeypatch, make_fake_model, fake_backend):
    runner.invoke(app, ["new-problem", "mini_knap", "--dir", str(tmp_path)])
    monkeypatch.setenv("HIFO_RUNS", str(tmp_path / "runs"))
    fake_backend(make_fake_model())
    res = runner.invoke(app, ["run", "-p", f"{tmp_path / 'mini_knap.py'}:MiniKnap", "--model", "openai/fake", "-g",
                              "1", "-n", "2", "--workers", "2", "--kb", str(tmp_path / "kb.sqlite")])
    assert res.exit_code == 0, res.output
    summary = json.loads(next((tmp_path / "runs").glob("MiniKnap-*/summary.json")).read_text())
    assert summary["problem"] == "mini_knap" and summary["best"]["objective"] > 0
    res = runner.invoke(app, ["run", "-p", f"{tmp_path / 'mini_knap.py'}:Nope"])
    assert res.exit_code == 2 and "defines no 'Nope'" in res.output
    res = runner.invoke(app, ["run", "-p", f"{tmp_path / 'absent.py'}:X"])
    assert res.exit_code == 2 and "does not exist" in res.output


def test_plugin_on_pythonpath_is_importable_in_the_sandbox(tmp_path, monkeypatch):
    """An evaluator package found through PYTHONPATH (not installed): the sandbox, which gets no
    PYTHONPATH, is given the package's folder."""
    import importlib

    from hifo.agents.evaluation import CandidateEvaluator
    from hifo.agents.scaffold import EVALUATOR

    pkg = tmp_path / "site" / "my_pkg15"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "knap.py").write_text(EVALUATOR.format(name="knap15", cls="Knap15"))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    cls = importlib.import_module("my_pkg15.knap").Knap15
    assert plugin_sys_path(cls) == (str(tmp_path / "site"),)
    ev = cls()
    with LocalExecutor(max_workers=1) as ex:
        score = CandidateEvaluator(ev, "train", ex).evaluate(ev.baselines["ratio"])
    assert score.feasible, score.error
