"""A deterministic stand-in model for the agent tests: replies depend only on the request."""

import hashlib

import pytest

from hifo.agents.llm.base import Completion

BPP_REPLIES = [
    "{Best fit: prefer the bin left tightest.}\n```python\nimport numpy as np\n\ndef priority(item, bins):\n"
    "    return -(bins - item)\n```",
    "{Penalise leftover space quadratically, with a bonus for exact fits.}\n```python\nimport numpy as np\n\n"
    "def priority(item, bins):\n    gap = bins - item\n    return -gap ** 2 + {C} * (gap < 1.5)\n```",
    "Here you go:\n```python\nimport numpy as np\ndef priority(item, bins):\n    r = bins - item\n"
    "    return 1.0 / (r + {C}) - 0.01 * bins\n```",
    "{Worst fit.}\n```python\ndef priority(item, bins):\n    return bins - item\n```",
    "```python\ndef priority(item, bins):\n    return bins / 0.0 * 0\n```",  # NaN: must fail cleanly
    "```python\ndef priority(item, bins):\n    raise RuntimeError('boom')\n```",
    "I cannot write code today.",
    "{Harmonic-like: favour bins whose gap is a small fraction of the item.}\n```python\nimport numpy as np\n\n"
    "def priority(item, bins):\n    frac = (bins - item) / (item + 1e-9)\n"
    "    return -np.log1p({C} * frac) + 0.2 * (frac < 0.05)\n```",
]

PRINCIPLE_REPLY = ("- Prefer bins that the item fills almost completely, leaving very little waste behind.\n"
                   "- Avoid dividing by quantities that can reach zero; guard every denominator.\n")


class FakeModel:
    """Chat-style model whose reply is a pure function of (messages, seed)."""

    style = "chat"
    model = "fake-chat"

    def __init__(self, replies=BPP_REPLIES):
        self.replies = list(replies)
        self.calls = 0

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.calls += 1
        text = messages[-1]["content"]
        if "design principles" in text and "one principle per line" in text:
            return [Completion(PRINCIPLE_REPLY, 10, 10, model=self.model)]
        # consecutive seeds (one per prompt of a batch) walk through the reply list
        h = (seed or 0) + int(hashlib.sha256(text.encode()).hexdigest(), 16) % 3
        const = 0.5 + (h % 97) / 10  # seeds differ per prompt, so constants differ: novel code each generation
        return [Completion(self.replies[(h + i) % len(self.replies)].replace("{C}", repr(const)), len(text.split()),
                           30, model=self.model) for i in range(n)]


@pytest.fixture
def fake_model():
    return FakeModel()


@pytest.fixture
def make_fake_model():
    return FakeModel


@pytest.fixture
def fake_backend(monkeypatch):
    """``fake_backend(model)``: from now on ``hifo run --model PROVIDER/NAME`` gets ``model`` wrapped as a real
    backend is (recorder, default seed, call/cost budget from the flags); ``replay:`` specs go through the
    real factory."""
    from hifo.agents.llm import factory

    real = factory.make_client

    def install(model):
        def make_client(spec, *, cache_path=None, record_path=None, max_calls=None, max_cost_usd=None, seed=None,
                        **kw):
            if spec.startswith("replay:"):
                return real(spec, cache_path=cache_path, record_path=record_path, max_calls=max_calls,
                            max_cost_usd=max_cost_usd, seed=seed, **kw)
            return factory.wrap_client(model, record_path=record_path, max_calls=max_calls,
                                       max_cost_usd=max_cost_usd, seed=seed)

        monkeypatch.setattr(factory, "make_client", make_client)
        return model

    return install
