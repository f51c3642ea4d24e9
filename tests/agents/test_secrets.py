"""No secret carried to the model in a candidate's error text (issue 20).

A candidate that manages to get hold of a secret (here: it rebuilds, at run time, the value of a
secret-named variable of the parent's environment, and an API-key-shaped string) and puts it in
its error message or stdout: the stored error (``run.sqlite``), the events (``events.jsonl``) and
every prompt sent to the model, the distill prompt included, carry it only as ``[REDACTED]``.
"""

from __future__ import annotations

import json

from hifo.agents.config import RunConfig
from hifo.agents.graph import start_run
from hifo.agents.rundb import RunStore
from hifo.sandbox import LocalExecutor
from hifo.sandbox._scrub import REDACTED, scrub

ENV_SECRET = "planted-env-secret-7f3a9c1e5b"
KEY = "sk-ant-api03-" + "Zq9" * 12  # the shape of an Anthropic key; never a real one

LEAKY = [
    # the secret is assembled at run time, so the model's code itself never contains it
    # (the slot fence refuses `import os`, so the value is rebuilt from pieces rather than read)
    "```python\ndef priority(item, bins):\n    key = 'sk-' + 'ant-api03-' + 'Zq9' * 12\n"
    "    env = 'planted-env-' + 'secret-7f3a9c1e5b'\n    print('leaking', key, env)\n"
    "    raise RuntimeError(f'OPENAI_API_KEY={key} token {env}')\n```",
    "```python\ndef priority(item, bins):\n    return -(bins - item)\n```",
    "```python\ndef priority(item, bins):\n    return -(bins - item) ** 2 + {C} * 0\n```",
]


def test_scrub_removes_key_shapes_and_secret_env_values():
    env = {"MY_SERVICE_TOKEN": ENV_SECRET, "PATH": "/usr/bin:/bin", "SHORT_KEY": "abc"}
    text = f"boom: {KEY} and {ENV_SECRET}; api_key = 'hunter2hunter2'; Authorization: Bearer abcdefghijklmnop1234"
    out = scrub(text, environ=env)
    assert KEY not in out and ENV_SECRET not in out and "hunter2hunter2" not in out and "abcdefghijklmnop1234" not in out
    assert out.count(REDACTED) >= 4 and out.startswith("boom: ")
    assert scrub("/usr/bin:/bin is fine", environ=env) == "/usr/bin:/bin is fine"  # not secret-named
    assert scrub("x" * 50, limit=10) == "x" * 10 + " [...]"
    assert scrub(None) is None


def test_a_leaked_secret_reaches_neither_the_store_nor_events_nor_any_prompt(tmp_path, monkeypatch, make_fake_model):
    monkeypatch.setenv("HIFO_TEST_TOKEN", ENV_SECRET)
    cfg = RunConfig(problem="bpp_online", model="fake", generations=1, population=2, offspring=3, hyper_lambda=0,
                    seed=3, init_samples=3, kb=str(tmp_path / "kb.sqlite"), run_dir=str(tmp_path / "run"), workers=2,
                    test_set="train")
    with LocalExecutor(max_workers=2) as ex:
        run_dir, _ = start_run(cfg, client=make_fake_model(LEAKY), executor=ex)
    store = RunStore(run_dir / "run.sqlite")
    try:
        cands = store.candidates()
        leaked = [c for c in cands if c.error and "OPENAI_API_KEY" in c.error]
        assert leaked, [c.error for c in cands]  # the leaky candidate ran and failed with its message
        assert all(REDACTED in c.error for c in leaked)
        prompts = json.dumps(store.prompts())
        assert "distill" in prompts  # the distill prompt was built (and is checked below)
    finally:
        store.close()
    for blob in ((run_dir / "run.sqlite").read_bytes().decode("utf-8", "replace"),
                 (run_dir / "events.jsonl").read_text(), prompts):
        assert KEY not in blob and ENV_SECRET not in blob
