"""The two screenshots of docs/report.md, made again: a scripted-model run (the tests' fake model, each call
slowed to 0.7 s so the run lasts long enough to watch) on bpp_online, 3 generations of 3; docs/dashboard.png
is the live page (``hifo ui``'s) once 4 candidates are evaluated, docs/report.png the top of report.html
after the run. Needs headless Chromium (tests/agents/cdp.py drives it).

    .venv/bin/python scripts/report_screenshots.py [OUT_DIR]    # default: docs/
"""

from __future__ import annotations

import base64
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "agents")]

from cdp import Browser  # noqa: E402
from conftest import FakeModel  # noqa: E402 - tests/agents/conftest.py: the scripted model

from hifo.agents.config import RunConfig  # noqa: E402
from hifo.agents.dashboard import make_server, url_of  # noqa: E402
from hifo.agents.graph import start_run  # noqa: E402
from hifo.agents.html_report import write_report  # noqa: E402
from hifo.sandbox import LocalExecutor  # noqa: E402


class SlowModel(FakeModel):
    def complete(self, *args, **kw):
        time.sleep(0.7)
        return super().complete(*args, **kw)


def shot(b: Browser, path: Path, height: int) -> None:
    b.call("Emulation.setDeviceMetricsOverride", session=b.session, width=1200, height=height,
           deviceScaleFactor=1, mobile=False)
    time.sleep(0.5)
    path.write_bytes(base64.b64decode(b.call("Page.captureScreenshot", session=b.session, format="png")["data"]))
    errors = b.console_errors()
    assert errors == [], errors
    print(path)


def main(out: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="hifo-shots-"))
    run = tmp / "bpp-scripted"
    cfg = RunConfig(problem="bpp_online", model="fake", generations=3, population=3, offspring=4, init_samples=4,
                    hyper_lambda=2, seed=2, kb=str(tmp / "kb.sqlite"), run_dir=str(run), workers=2)

    def go() -> None:
        with LocalExecutor(max_workers=2) as ex:
            start_run(cfg, client=SlowModel(), executor=ex)

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    while not (run / "events.jsonl").exists():  # its first line follows the run store's tables
        time.sleep(0.2)
    server = make_server(run, port=0, interval_ms=500)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with Browser(width=1200, height=1100) as b:
        b.goto(url_of(server))
        b.wait_for("(document.getElementById('plot-best-evals').data || [{y: []}])[0].y.length >= 4", timeout=600)
        time.sleep(1)
        shot(b, out / "dashboard.png", 1100)
    worker.join()
    server.shutdown()
    report = write_report(run)
    with Browser(width=1200, height=1100) as b:
        b.goto(report.as_uri())
        b.wait_for("document.querySelectorAll('#cands-body tr').length > 0", timeout=60)
        time.sleep(1)
        shot(b, out / "report.png", 1100)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs")
