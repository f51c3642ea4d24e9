"""The HTML report opened in headless Chromium (Debian `chromium` or `chromium-headless-shell`): it
loads without console errors, and every plot is in the rendered DOM and has a size on the page."""

import shutil
import subprocess

import pytest

from hifo.agents.config import RunConfig
from hifo.agents.graph import start_run
from hifo.agents.html_report import write_report
from hifo.sandbox import LocalExecutor

PLOTS = ("fitness", "outcomes", "principles", "cost", "sandbox")
BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium")

# reads each plot's rendered box after layout; printed into the title, which --dump-dom shows
PROBE = ("<script>window.onload=function(){var r=[];document.querySelectorAll('svg.plot').forEach(function(s){"
         "var b=s.getBoundingClientRect();r.push(s.dataset.plot+':'+Math.round(b.width)+'x'+Math.round(b.height));});"
         "document.title='PLOTS '+r.join(',');};</script></body>")


@pytest.mark.skipif(BROWSER is None, reason="needs headless Chromium (apt-get install chromium-headless-shell)")
def test_report_renders_in_headless_chromium(tmp_path, make_fake_model):
    cfg = RunConfig(problem="bpp_online", model="fake", generations=1, population=2, offspring=2, init_samples=2,
                    hyper_lambda=1, seed=1, kb=str(tmp_path / "kb.sqlite"), run_dir=str(tmp_path / "run"),
                    test_set="train", workers=2)
    with LocalExecutor(max_workers=2) as ex:
        run_dir, _ = start_run(cfg, client=make_fake_model(), executor=ex)
    report = write_report(run_dir)
    probe = tmp_path / "probe.html"  # the report itself has no script; the probe is added to a copy
    probe.write_text(report.read_text().replace("</body>", PROBE))
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=3000", "--dump-dom"]
    for page in (report, probe):
        out = subprocess.run([*cmd, page.as_uri()], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        console = [ln for ln in out.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
        assert console == [], console
        for plot in PLOTS:
            assert f'data-plot="{plot}"' in out.stdout
    title = out.stdout.split("<title>")[1].split("</title>")[0]
    sizes = dict(item.split(":") for item in title.removeprefix("PLOTS ").split(","))
    assert set(sizes) == set(PLOTS), title
    for plot, size in sizes.items():
        w, h = map(int, size.split("x"))
        assert w >= 700 and h >= 50, (plot, size)
