"""The litellm backend, offline: litellm's own ``mock_response`` stands in for the provider."""

import os

import pytest
from llm_helpers import chat, prompt

from hifo.agents.llm.litellm_client import LiteLLMClient


@pytest.mark.slow  # importing litellm takes several seconds
def test_litellm_completions_are_priced_from_the_local_cost_map():
    client = LiteLLMClient("openai/gpt-4o-mini", mock_response="def f(x):\n    return x")
    out = client.complete(chat("write f"), n=2, seed=3, temperature=0.2)
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert [c.text for c in out] == ["def f(x):\n    return x"] * 2
    assert all(c.cost_known and c.cost_usd > 0 for c in out)
    assert out[0].prompt_tokens > 0 and out[1].prompt_tokens == 0  # the prompt is billed once


@pytest.mark.slow
def test_unknown_models_cost_zero_and_are_flagged():
    out = LiteLLMClient("openai/my-private-finetune", mock_response="ok").complete(prompt("go on"))
    assert (out[0].text, out[0].cost_usd, out[0].cost_known) == ("ok", 0.0, False)


class FakeLiteLLM:
    """Just enough of litellm's surface: a provider that rejects n>1 and a price map without the model."""

    class BadRequestError(Exception):
        status_code = 400

    def __init__(self):
        self.calls = []

    def completion(self, **kwargs):
        self.calls.append(kwargs)
        if kwargs.get("n", 1) > 1:
            raise self.BadRequestError("n is not supported by this provider")
        msg = type("Msg", (), {"content": f"seed={kwargs.get('seed')}"})()
        choice = type("Choice", (), {"message": msg, "finish_reason": "stop"})()
        usage = type("Usage", (), {"prompt_tokens": 5, "completion_tokens": 2})()
        return type("Resp", (), {"choices": [choice], "usage": usage, "model": kwargs["model"]})()

    def completion_cost(self, completion_response):
        raise ValueError("model not in the price map")


def test_refused_n_falls_back_to_seeded_single_calls(monkeypatch):
    fake = FakeLiteLLM()
    monkeypatch.setattr("hifo.agents.llm.litellm_client.import_litellm", lambda: fake)
    client = LiteLLMClient("custom/m", api_base="http://127.0.0.1:1234", timeout=7)
    out = client.complete(prompt("continue this"), n=3, seed=40, stop=["```"])
    assert [c.text for c in out] == ["seed=40", "seed=41", "seed=42"]
    assert [c.get("n", 1) for c in fake.calls] == [3, 1, 1, 1]
    first = fake.calls[0]
    assert first["messages"] == [{"role": "user", "content": "continue this"}]  # a prompt becomes a user turn
    assert (first["api_base"], first["timeout"], first["drop_params"], first["stop"]) == (
        "http://127.0.0.1:1234", 7, True, ["```"])
    assert all(not c.cost_known and c.cost_usd == 0.0 for c in out)
