"""The HTML report opened in headless Chromium (Debian `chromium` or `chromium-headless-shell`, driven over
the DevTools protocol: tests/agents/cdp.py): it loads offline without console errors, every plot is drawn
with a size on the page, and text a model or a candidate wrote is shown verbatim (a ``</script>`` in code,
``list[float]`` in an error, ``bins[mask]``, ``:fire:`` and ``<b>`` in a principle)."""

import pytest
from cdp import BROWSER, Browser

from hifo.agents.config import RunConfig
from hifo.agents.graph import start_run
from hifo.agents.html_report import PLOTS, render_compare, write_report
from hifo.agents.rundb import RunStore
from hifo.sandbox import LocalExecutor

EVIL_CODE = 'def priority(item, bins):\n    s = "</script><b>bold</b> &amp; [red]x[/red]"\n    return bins - item\n'
EVIL_ERROR = 'TypeError("expected list[float], got dict[str, int]")'
EVIL_PRINCIPLE = "Weigh bins[mask] by :fire: and <b>never</b> divide & conquer"


def _inject(run_dir):
    """A failed candidate and a recalled principle whose text looks like markup, as a model could write."""
    store = RunStore(run_dir / "run.sqlite")
    try:
        store.add_candidate(generation=1, operator="e1", code=EVIL_CODE, code_hash="evil", parents=[],
                            principle_ids=["9999"], status="invalid", error=EVIL_ERROR, cid="evil-one")
        # a feasible but terrible candidate in a generation of its own: its median must not squash the curve
        store.add_candidate(generation=5, operator="e2", code="def priority(item, bins):\n    return 0 * bins\n",
                            code_hash="awful", parents=[], status="pending", cid="awful-one")
        store.record_score("awful-one", {"feasible": True, "fitness": -1e6, "objective": 1e6, "metrics": {},
                                         "per_instance": [], "wall_s": 0.1})
        store.event("recall", generation=1, principles=[{"id": 9999, "problem": "bpp_online", "utility": 0.25,
                                                         "text": EVIL_PRINCIPLE}])
    finally:
        store.close()


@pytest.mark.skipif(BROWSER is None, reason="needs headless Chromium (apt-get install chromium-headless-shell)")
def test_report_renders_in_headless_chromium(tmp_path, make_fake_model):
    cfg = RunConfig(problem="bpp_online", model="fake", generations=1, population=2, offspring=2, init_samples=2,
                    hyper_lambda=1, seed=1, kb=str(tmp_path / "kb.sqlite"), run_dir=str(tmp_path / "run"), workers=2)
    with LocalExecutor(max_workers=2) as ex:
        run_dir, summary = start_run(cfg, client=make_fake_model(), executor=ex)
    _inject(run_dir)
    report = write_report(run_dir)
    with Browser() as b:
        b.goto(report.as_uri())
        b.wait_for("document.querySelectorAll('#cands-body tr').length > 0", timeout=60)
        sizes = b.js("Array.from(document.querySelectorAll('.plot')).map(function(e){var r=e.getBoundingClientRect();"
                     "return [e.dataset.plot, Math.round(r.width), Math.round(r.height), (e.data||[]).length];})")
        assert {s[0] for s in sizes} == set(PLOTS), sizes
        for name, w, h, traces in sizes:
            assert w >= 700 and h >= 200 and traces >= 1, (name, w, h, traces)
        # the y range follows the running best and the baselines, not generation 5's median of 1e6
        top = b.js("document.getElementById('plot-best-evals').layout.yaxis.range[1]")
        assert top < 100, top
        assert 1e6 in b.js("document.getElementById('plot-best-evals').data[1].y")  # the median is drawn (off range)
        # the held-out test score from the run (summary.json) beside the train score
        test = summary["best"]["test"]["objective"]
        assert float(b.js("document.getElementById('test-value').textContent.split(' ')[0]")) == \
            pytest.approx(test, rel=1e-5)
        assert float(b.js("document.getElementById('best-value').textContent")) == \
            pytest.approx(summary["best"]["objective"], rel=1e-5)
        # verbatim: the code cell, the error, the principle in the table and in the plot's legend
        assert b.js("document.querySelector('tr[data-id=\"evil-one\"] pre').textContent") == EVIL_CODE
        assert b.js("document.querySelector('tr[data-id=\"evil-one\"] td.err').title") == EVIL_ERROR
        assert EVIL_PRINCIPLE in b.js("document.getElementById('principles').textContent")
        assert EVIL_PRINCIPLE[:40] in b.js("document.querySelector('#plot-principles .legend').textContent")
        # no <b> from the data became markup
        assert b.js("Array.from(document.querySelectorAll('b')).filter(e => /bold|never/.test(e.textContent)).length") == 0
        # a candidate with a prompt: its prompt and reply are shown when it is selected
        cid = b.js("JSON.parse(document.getElementById('hifo-data').textContent).candidates.find(c => c.prompt_id).id")
        b.js(f"document.querySelector('tr[data-id=\"{cid}\"]').click()")
        detail = b.js("document.getElementById('detail').textContent")
        assert "prompt and reply" in detail and "reply" in detail.split("prompt and reply")[1] and "system" in detail
        assert b.js("document.getElementById('diff').textContent.length") > 0
        assert b.console_errors() == []
    # hifo compare of a run with itself: two identical curves, each with its own dash, marker and width
    page = tmp_path / "cmp.html"
    page.write_text(render_compare([run_dir, run_dir]))
    with Browser() as b:
        b.goto(page.as_uri())
        styles = b.wait_for("document.getElementById('plot-compare').data && document.getElementById('plot-compare')"
                            ".data.map(t => [t.line.dash, t.marker.symbol, t.line.width])", timeout=60)
        assert len(styles) == 2 and all(len({s[k] for s in styles}) == 2 for k in range(3)), styles
        assert b.console_errors() == []
