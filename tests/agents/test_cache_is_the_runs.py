"""The response cache belongs to its run (issue 31): a second run with the same seed and prompts asks the model
again instead of silently reusing the first run's replies; the cache file lies in the run folder."""

from hifo.agents.graph import start_run
from hifo.agents.llm import factory
from hifo.agents.llm.base import Completion
from hifo.sandbox import LocalExecutor

from agentkit import tiny_config


class Counting:
    style, model = "chat", "fake-chat"

    def __init__(self):
        self.calls = 0

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.calls += 1
        code = f"def priority(item, bins):\n    return -(bins - item) * {self.calls}.0 - {seed % 7}\n"
        return [Completion(f"Idea: x.\n```python\n{code}```", 10, 10, model=self.model)]


def test_a_new_run_with_the_same_seed_does_not_read_another_run_s_replies(tmp_path, monkeypatch):
    backends: list[Counting] = []
    paths = []

    def make_client(spec, *, cache_path=None, **kw):
        backends.append(Counting())
        paths.append(cache_path)
        return factory.wrap_client(backends[-1], cache_path=cache_path, max_calls=kw.get("max_calls"))

    monkeypatch.setattr(factory, "make_client", make_client)
    for name in ("a", "b"):
        cfg = tiny_config(tmp_path, run_dir=str(tmp_path / "runs" / name), probe_novelty=False)
        with LocalExecutor(max_workers=1) as ex:
            start_run(cfg, executor=ex)
    assert [b.calls for b in backends] == [2, 2]  # the second run asked the model too
    assert [p.parent.name for p in paths] == ["a", "b"] and all(p.exists() for p in paths)
    assert not (tmp_path / "runs" / "llm_cache.sqlite").exists()  # nothing shared in the runs' parent
