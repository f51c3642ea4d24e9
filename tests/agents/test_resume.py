"""SIGKILL a run mid-generation, resume it, and lose no completed evaluation."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from hifo.agents.graph import resume_run
from hifo.agents.rundb import RunStore
from hifo.sandbox import LocalExecutor

HERE = Path(__file__).parent

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from conftest import FakeModel
    from hifo.agents.config import RunConfig
    from hifo.agents.graph import start_run
    cfg = RunConfig(problem="bpp_online", model="fake", generations=4, population=3, offspring=4, hyper_lambda=2,
                    seed=11, init_samples=8, kb={kb!r}, run_dir={run!r}, workers=1, test_set="train")
    start_run(cfg, client=FakeModel())
""")


def _evaluated(db: Path) -> dict[str, tuple]:
    if not db.exists():
        return {}
    con = sqlite3.connect(db, timeout=5)
    try:
        rows = con.execute("SELECT id, fitness, evaluated_at, generation FROM candidates WHERE status='evaluated'")
        return {r[0]: r[1:] for r in rows.fetchall()}
    except sqlite3.OperationalError:
        return {}
    finally:
        con.close()


def test_sigkill_mid_generation_then_resume(tmp_path, make_fake_model):
    run, kb = tmp_path / "run", tmp_path / "kb.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT.format(here=str(HERE), kb=str(kb), run=str(run))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 120
    before: dict[str, tuple] = {}
    try:
        while time.time() < deadline:
            before = _evaluated(run / "run.sqlite")
            if any(v[2] >= 1 for v in before.values()):  # generation 1 is being evaluated
                break
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            time.sleep(0.02)
        else:
            raise AssertionError("run never reached generation 1")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    before = _evaluated(run / "run.sqlite")  # everything committed up to the kill
    store = RunStore(run / "run.sqlite")
    assert store.get_meta("status") == "running"
    store.close()
    with LocalExecutor(max_workers=2) as ex:
        _, summary = resume_run(run, client=make_fake_model(), executor=ex)
    assert summary["stop_reason"] == "4 generation(s) done"
    after = _evaluated(run / "run.sqlite")
    for cid, (fit, at, gen) in before.items():
        assert cid in after, f"completed evaluation {cid} was lost"
        assert after[cid][1] == at, f"{cid} was evaluated again after the resume"
        assert after[cid][0] == fit
    assert len(after) > len(before)
    store = RunStore(run / "run.sqlite")
    try:
        assert store.get_meta("status") == "finished"
        assert [f["generation"] for f in store.foresight()] == [0, 1, 2, 3, 4]
        assert [e["kind"] for e in store.events("resume")] == ["resume"]
        assert not store.pending()
    finally:
        store.close()
    # resuming a finished run is a no-op that returns its summary
    with LocalExecutor(max_workers=1) as ex:
        _, again = resume_run(run, client=make_fake_model(), executor=ex)
    assert again["evaluations"] == summary["evaluations"]
