"""Issue 31, items 2 and 6: the data the report and dashboard show (agents/run_view.py), the static page,
``hifo compare``, and the ``hifo ui`` server (endpoints, loopback only, missing and damaged runs, Ctrl-C)."""

import json
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest
from agentkit import hifo_cli_interruptible, tiny_config
from typer.testing import CliRunner

from hifo.agents.cli import app
from hifo.agents.dashboard import DashboardError, make_server, url_of
from hifo.agents.graph import start_run
from hifo.agents.html_report import render_compare, render_report
from hifo.agents.run_view import load_view, page_json, running_best
from hifo.sandbox import LocalExecutor

runner = CliRunner()


def _c(fitness, ok=True):
    return SimpleNamespace(ok=ok, fitness=fitness, id=str(fitness))


def test_running_best_is_never_lowered_by_a_bad_generation():
    rows = [_c(None, ok=False), _c(-5.0), _c(-3.0), _c(-90.0), _c(-80.0), _c(None, ok=False), _c(-2.5), _c(-4.0)]
    got = [None if b is None else b.fitness for b in running_best(rows)]
    assert got == [None, -5.0, -3.0, -3.0, -3.0, -3.0, -2.5, -2.5]


def test_page_json_cannot_end_its_script_element():
    text = page_json({"code": "</script><script>alert(1)</script> & <!--"})
    assert "<" not in text and "&" not in text
    assert json.loads(text)["code"] == "</script><script>alert(1)</script> & <!--"
    assert json.loads(page_json({"m": [float("nan"), float("-inf"), 1.5]})) == {"m": ["nan", "-inf", 1.5]}


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self.external = 0, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.scripts += tag == "script"
        self.external += [a[k] for k in ("src", "href") if a.get(k) and not a[k].startswith("#")]


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_view_report_compare_and_server_of_one_run(tmp_path, make_fake_model):
    cfg = tiny_config(tmp_path, generations=1, population=2, offspring=2, init_samples=2, hyper_lambda=1, workers=2)
    with LocalExecutor(max_workers=2) as ex:
        run_dir, summary = start_run(cfg, client=make_fake_model(), executor=ex)
    v = load_view(run_dir)
    cands = v["candidates"]
    # the best is the running best by fitness, and the curve never goes down in fitness terms
    assert v["best"]["id"] == summary["best"]["id"] and v["best"]["train"] == pytest.approx(summary["best"]["objective"])
    fit = {c["id"]: c["fitness"] for c in cands}
    seen = [fit[i] for i in v["curve"]["best_id"] if i is not None]
    assert seen == sorted(seen) and len(v["curve"]["best"]) == v["evaluations"] == summary["evaluations"]
    assert v["curve"]["calls"] == sorted(v["curve"]["calls"]) and v["curve"]["calls"][-1] <= v["model_calls"]
    assert {b["name"] for b in v["baselines"]} == set(summary["baselines"])
    # every candidate, with what the table shows; failures carry their reason and error
    assert len(cands) == sum(v["counts"].values())
    for c in cands:
        assert {"code", "per_instance", "operator", "parents", "principles", "error", "reason"} <= set(c)
        assert c["reason"] == "" if c["ok"] else c["reason"]
    assert any(c["operator"] != "baseline" and c["prompt_id"] in v["prompts"] for c in cands)
    assert all(len(c["per_instance"]) > 0 for c in cands if c["ok"])
    assert v["generations"][0]["generation"] == 0 and v["foresight"]
    # the static page: one inlined plotly bundle, the data, no external file
    html = render_report(run_dir)
    tags = _Tags()
    tags.feed(html)
    assert tags.external == [] and html.count("plotly.js v") == 1
    assert json.loads(html.split('id="hifo-data">')[1].split("</script>")[0])["run"] == "run"
    # compare: each run drawn with its own dash and marker, so identical curves stay visible
    page = render_compare([run_dir, run_dir])  # drawn in Chromium by test_report_browser.py
    assert 'data-plot="compare"' in page and len(json.loads(page.split('id="hifo-data">')[1].split("</script>")[0])) == 2
    # the live server
    server = make_server(run_dir, port=0, interval_ms=500)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = url_of(server)
    try:
        assert base.startswith("http://127.0.0.1:")
        status, body = _get(base)  # one run: redirected to its page
        assert status == 200 and '"live": true' in body and "/static/plotly.min.js" in body and "plotly.js v" not in body
        assert _get(base + "static/plotly.min.js")[1].startswith("/**\n* plotly.js v")
        s1 = _get(base + "run/run/api/version")
        assert s1 == _get(base + "run/run/api/version") and s1[0] == 200
        data = json.loads(_get(base + "run/run/api/data")[1])
        assert data["prompts"] is None and [c["id"] for c in data["candidates"]] == [c["id"] for c in cands]
        pid = next(c["prompt_id"] for c in cands if c["prompt_id"])
        prompt = json.loads(_get(base + f"run/run/api/prompt/{pid}")[1])
        assert prompt["reply"] == v["prompts"][pid]["reply"] and prompt["messages"]
        assert _get(base + "run/run/api/prompt/nope")[0] == 404
        status, body = _get(base + "run/other/api/data")
        assert status == 404 and str(run_dir) in body
        assert _get(base + "run/..%2F..%2Fetc/api/data")[0] == 404
        rebound = urllib.request.Request(base + "run/run/api/data", headers={"Host": "evil.example:8765"})
        with pytest.raises(urllib.error.HTTPError, match="403"):
            urllib.request.urlopen(rebound, timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    # a folder of runs: an index, and the run's pages under its name; a damaged run is listed, not fatal
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.sqlite").write_bytes(b"not a database" * 100)
    server = make_server(tmp_path, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status, index = _get(url_of(server))
        assert status == 200 and 'href="/run/run"' in index and "damaged" in index
        status, body = _get(url_of(server) + "run/broken/api/data")
        assert status == 500 and str(tmp_path / "broken" / "run.sqlite") in body
    finally:
        server.shutdown()
        server.server_close()


def test_ui_refuses_other_hosts_and_bad_paths(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.sqlite").write_bytes(b"garbage" * 200)
    with pytest.raises(DashboardError, match="--allow-remote"):
        make_server(tmp_path, host="0.0.0.0", port=0)
    with pytest.raises(DashboardError, match=str(tmp_path / "run" / "run.sqlite")):
        make_server(tmp_path / "run", port=0)
    res = runner.invoke(app, ["ui", str(tmp_path / "absent"), "--port", "0"])
    assert res.exit_code == 2 and str(tmp_path / "absent") in res.output
    res = runner.invoke(app, ["ui", str(tmp_path), "--host", "192.0.2.1", "--port", "0"])
    assert res.exit_code == 2 and "127.0.0.1 only" in " ".join(res.output.split())
    res = runner.invoke(app, ["report", str(tmp_path / "run")])
    assert res.exit_code == 2 and str(tmp_path / "run" / "run.sqlite") in " ".join(res.output.split())


def test_ui_stops_cleanly_on_ctrl_c(tmp_path):
    proc = subprocess.Popen([*hifo_cli_interruptible(), "ui", str(tmp_path), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split(" at ")[1].split(" ")[0]
        assert _get(url)[0] == 200
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, errs = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "stopped" in out and "Traceback" not in errs, errs
