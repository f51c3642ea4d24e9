"""Run-time error feedback (issue 12, item 5): a candidate that fails in the sandbox goes back to the
model once with the sandbox's error text; the fix is evaluated in the same generation."""

from agentkit import tiny_config
from hifo.agents.graph import start_run
from hifo.agents.llm.base import Completion
from hifo.agents.rundb import RunStore
from hifo.agents.runtime_repair import rendered_from_prompt
from hifo.sandbox import LocalExecutor

CRASH = "```python\nimport numpy as np\n\ndef priority(item, bins):\n    return bins[len(bins) + {i}] - item\n```"
GOOD = "```python\nimport numpy as np\n\ndef priority(item, bins):\n    return -(bins - item) * {c}\n```"


class CrashThenFix:
    style = "chat"
    model = "fake-runtime"

    def __init__(self):
        self.calls = 0
        self.repair_prompts = []

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.calls += 1
        last = messages[-1]["content"]
        if last.startswith("That code fails"):
            self.repair_prompts.append(messages)
            return [Completion(GOOD.format(c=1.0 + (seed or 0) % 89 / 10), 10, 10, model=self.model)]
        return [Completion(CRASH.format(i=self.calls), 10, 10, model=self.model)]


_cfg = tiny_config


def _cands(run_dir):
    store = RunStore(run_dir / "run.sqlite")
    try:
        return {c.id: c for c in store.candidates(generation=0, not_operator="baseline")}, \
            [p["operator"] for p in store.prompts()], [e for e in store.events("runtime_repair")]
    finally:
        store.close()


def test_sandbox_error_goes_back_to_the_model_and_the_fix_is_evaluated(tmp_path):
    model = CrashThenFix()
    with LocalExecutor(max_workers=1) as ex:
        run_dir, _ = start_run(_cfg(tmp_path), client=model, executor=ex)
    assert model.calls == 4 and len(model.repair_prompts) == 2
    fed_back = model.repair_prompts[0][-1]["content"]
    assert "IndexError" in fed_back and "runs but fails" in fed_back  # the sandbox's own error text
    assert "bins[len(bins)" in model.repair_prompts[0][-2]["content"]  # and the failing code
    cands, ops, events = _cands(run_dir)
    assert cands["g0-000"].status == "evaluated" and not cands["g0-000"].ok
    fix = cands["g0-000x"]
    assert fix.operator == "repair" and fix.parents == ["g0-000"] and fix.ok
    assert ops.count("repair") == 2 and len(events) == 2 and all(e["ok"] for e in events)


def test_no_repair_switches_run_time_feedback_off(tmp_path):
    model = CrashThenFix()
    with LocalExecutor(max_workers=1) as ex:
        start_run(_cfg(tmp_path, repair=False), client=model, executor=ex)
    assert model.calls == 2 and not model.repair_prompts


def test_completion_prompt_gives_back_prefix_and_versions():
    text = ('"""task"""\nimport numpy as np\n\n\n# score: 1\ndef priority_v0(item, bins):\n    return -bins\n\n\n'
            'def priority_v1(item: float, bins: np.ndarray) -> np.ndarray:\n    """Better."""\n')
    pr = rendered_from_prompt([{"role": "prompt", "content": text}], "completion", "priority")
    assert pr.prefix.startswith("def priority_v1(") and pr.prefix.endswith('"""Better."""\n')
    assert list(pr.versions) == ["priority_v0"] and "return -bins" in pr.versions["priority_v0"]
    assert "\ndef " in pr.stop
