"""Issue 31: ``hifo ui`` follows a run while it works. A run is recorded with the scripted model, then replayed
from its cassette, the replay held at its first model call; the dashboard page is opened in headless Chromium
(over the DevTools protocol, tests/agents/cdp.py) and shows the run as it stands; the run is released, and the
same page, never reloaded, shows the best-so-far curve and the candidate table grow to what the run store holds
at the end, with no console error. Skipped without Chromium (Debian `chromium-headless-shell` or `chromium`)."""

import threading
import time

import pytest
from agentkit import tiny_config
from cdp import BROWSER, Browser

from hifo.agents.dashboard import make_server, url_of
from hifo.agents.graph import start_run
from hifo.agents.rundb import RunStore
from hifo.sandbox import LocalExecutor

ROWS = "document.querySelectorAll('#cands-body tr').length"
CURVE = "(document.getElementById('plot-best-evals').data || [{y: []}])[0].y.length"
BEST = "(document.getElementById('best-value') || {}).textContent || ''"


class HeldModel:
    """The scripted model, held at its first call until the test lets it go."""

    def __init__(self, inner):
        self.inner, self.asked, self.go = inner, threading.Event(), threading.Event()
        self.style, self.model = inner.style, inner.model

    def complete(self, *args, **kw):
        self.asked.set()
        assert self.go.wait(120), "the test never released the model"
        return self.inner.complete(*args, **kw)


@pytest.mark.skipif(BROWSER is None, reason="needs headless Chromium (apt-get install chromium-headless-shell)")
def test_dashboard_follows_a_running_run_in_headless_chromium(tmp_path, make_fake_model):
    from hifo.agents.llm.factory import make_client
    from hifo.agents.llm.replay import RecordingClient

    shape = dict(generations=1, population=2, offspring=2, init_samples=2, hyper_lambda=1, workers=2)
    cassette = tmp_path / "cassette.jsonl"
    with LocalExecutor(max_workers=2) as ex:  # the recording; the dashboard follows its replay
        start_run(tiny_config(tmp_path, run_dir=str(tmp_path / "recorded"), kb=str(tmp_path / "kb0.sqlite"), **shape),
                  client=RecordingClient(make_fake_model(), cassette), executor=ex)
    cfg = tiny_config(tmp_path, model=f"replay:{cassette}", **shape)
    model = HeldModel(make_client(f"replay:{cassette}"))
    result: dict = {}

    def run() -> None:
        try:
            with LocalExecutor(max_workers=2) as ex:
                result["dir"], result["summary"] = start_run(cfg, client=model, executor=ex)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            result["error"] = exc
        finally:
            model.go.set()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    deadline = time.monotonic() + 60
    while not model.asked.wait(0.2) and worker.is_alive() and time.monotonic() < deadline:
        pass
    assert model.asked.is_set(), result.get("error")
    server = make_server(cfg.run_dir, port=0, interval_ms=250)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    try:
        with Browser() as b:
            b.goto(url_of(server))  # redirected to /run/run
            b.wait_for(f"{ROWS} > 0", timeout=30)
            rows0, curve0, best0 = b.js(ROWS), b.js(CURVE), b.js(BEST)
            model.go.set()
            worker.join(180)
            assert not worker.is_alive() and "error" not in result, result.get("error")
            store = RunStore(result["dir"] / "run.sqlite", readonly=True)
            try:
                total, evaluated = len(store.candidates()), store.count_evaluated()
                best = store.best_feasible(1)[0]
            finally:
                store.close()
            # the same page, never reloaded, catches up with the store
            b.wait_for(f"{ROWS} === {total} && {CURVE} === {evaluated}", timeout=30)
            assert total > rows0 and evaluated > curve0, (rows0, curve0, total, evaluated)
            assert float(b.js(BEST)) == pytest.approx(best.objective, rel=1e-5), (b.js(BEST), best0)
            assert "finished" in b.wait_for("document.getElementById('live').textContent.includes('finished') && "
                                            "document.getElementById('live').textContent", timeout=10)
            assert b.console_errors() == []
    finally:
        server.shutdown()
        server.server_close()
        model.go.set()
