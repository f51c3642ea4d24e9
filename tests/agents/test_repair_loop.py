"""Error-feedback repair (issue 12, item 5): a failing reply goes back to the model once, inside the
call budget, and a resumed generation gets that call from the response cache."""

import pytest

from agentkit import tiny_config

from hifo.agents.graph import start_run, resume_run
from hifo.agents.llm.base import Completion
from hifo.agents.llm.factory import wrap_client
from hifo.agents.rundb import RunStore
from hifo.sandbox import LocalExecutor

BAD = "```python\ndef priority(item, bins):\n    return -(bins - item) * helper_weight({c})\n```"
GOOD = "```python\nimport numpy as np\n\ndef priority(item, bins):\n    return -(bins - item) * {c}\n```"


class RepairModel:
    """First replies use an undefined helper; a repair prompt gets the fixed function."""

    style = "chat"
    model = "fake-repair"

    def __init__(self, crash_on_repair=None):
        self.calls = self.repair_calls = 0
        self.repair_prompts = []
        self.crash_on_repair = crash_on_repair

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.calls += 1
        last = messages[-1]["content"]
        c = 1.0 + (seed or 0) % 89 / 10
        if last.startswith("That code fails"):
            self.repair_calls += 1
            if self.repair_calls == self.crash_on_repair:
                raise RuntimeError("process killed")
            self.repair_prompts.append(messages)
            return [Completion(GOOD.format(c=c), 10, 10, model=self.model)]
        return [Completion(BAD.format(c=c), 10, 10, model=self.model)]


_cfg = tiny_config


def _cands(run_dir):
    store = RunStore(run_dir / "run.sqlite")
    try:
        return {c.id: c for c in store.candidates(generation=0, not_operator="baseline")}
    finally:
        store.close()


def test_undefined_name_is_fed_back_and_the_repaired_candidate_is_evaluated(tmp_path):
    model = RepairModel()
    with LocalExecutor(max_workers=1) as ex:
        run_dir, summary = start_run(_cfg(tmp_path), client=model, executor=ex)
    assert model.calls == 4 and model.repair_calls == 2
    # the repair prompt shows the failing code and its error
    msgs = model.repair_prompts[0]
    assert "helper_weight" in msgs[-2]["content"] and "undefined name(s): helper_weight" in msgs[-1]["content"]
    cands = _cands(run_dir)
    assert cands["g0-000"].status == "invalid" and "helper_weight" in cands["g0-000"].error
    rep = cands["g0-000r"]
    assert rep.operator == "repair" and rep.parents == ["g0-000"] and rep.status == "evaluated" and rep.ok


def test_no_repair_flag_switches_it_off(tmp_path):
    model = RepairModel()
    with LocalExecutor(max_workers=1) as ex:
        start_run(_cfg(tmp_path, repair=False), client=model, executor=ex)
    assert model.calls == 2 and model.repair_calls == 0


def test_repair_calls_count_against_max_calls(tmp_path):
    model = RepairModel()
    client = wrap_client(model, max_calls=3)
    with LocalExecutor(max_workers=1) as ex:
        run_dir, summary = start_run(_cfg(tmp_path, max_calls=3), client=client, executor=ex)
    assert model.calls == 3 and model.repair_calls == 1
    assert "max_calls=3" in summary["stop_reason"]
    cands = _cands(run_dir)
    assert "g0-000r" in cands and "g0-001r" not in cands


def test_resume_gets_repair_replies_from_the_cache(tmp_path):
    cache = tmp_path / "cache.sqlite"
    first = RepairModel(crash_on_repair=2)  # killed during the second repair call
    with LocalExecutor(max_workers=1) as ex, pytest.raises(Exception):
        start_run(_cfg(tmp_path), client=wrap_client(first, cache_path=cache), executor=ex)
    assert first.calls == 4
    again = RepairModel()
    with LocalExecutor(max_workers=1) as ex:
        run_dir, _ = resume_run(tmp_path / "run", client=wrap_client(again, cache_path=cache), executor=ex)
    # the two first replies and the first repair come from the cache: one new call only
    assert again.calls == 1 and again.repair_calls == 1
    cands = _cands(run_dir)
    assert cands["g0-000r"].ok and cands["g0-001r"].ok


def test_what_is_fed_back():
    from hifo.agents.repair_loop import Parsed, fixable, repair_messages

    assert not fixable(Parsed(code=None, error="reply is not valid Python", raw="I cannot", has_code=False))
    assert fixable(Parsed(code=None, error="reply is not valid Python", raw="```python\ndef priority(:\n```"))
    assert not fixable(Parsed(code="def priority(item, bins):\n    return bins\n"))
    bad = Parsed(code=None, error="undefined name(s): w " + "x" * 1000, raw="def priority(item, bins): return w")
    msgs = repair_messages("completion", [{"role": "prompt", "content": "def priority_v0(item, bins):\n  ...\n\n"}],
                           "  return w", bad, "priority", "def priority_v1(item, bins):\n")
    # completion style: one prompt that shows the failing version, its short error, then the def line again
    assert len(msgs) == 1 and msgs[0]["content"].endswith("# Fixed:\ndef priority_v1(item, bins):\n")
    assert "undefined name(s): w" in msgs[0]["content"] and len(msgs[0]["content"]) < 500
