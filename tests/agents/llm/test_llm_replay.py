"""Recording and replaying cassettes; the scripted test model."""

import json

import pytest
from llm_helpers import chat, prompt

from hifo.agents.llm.base import LLMError
from hifo.agents.llm.replay import RecordingClient, ReplayClient, ReplayMismatch, ScriptedClient


def _record(tmp_path, replies, requests, **kw):
    path = tmp_path / "run.jsonl"
    rec = RecordingClient(ScriptedClient(replies, **kw), path)
    got = [rec.complete(m, n=n, seed=s, temperature=0.7) for m, n, s in requests]
    rec.close()
    return path, got


def test_round_trip_is_identical_including_repeated_requests(tmp_path):
    same = prompt("def f(x):")
    requests = [(same, 1, 3), (chat("write g"), 2, 4), (same, 1, 3), (same, 1, 3)]
    path, recorded = _record(tmp_path, ["a b", "c", "d e f", "g", "h"], requests, style="completion")
    # identical requests got different replies when recorded; replay must give them back in order
    assert [c[0].text for c in recorded] == ["a b", "c", "g", "h"]
    replay = ReplayClient(path)
    assert (replay.model, replay.style, replay.recorded_calls) == ("scripted", "completion", 4)
    for (m, n, s), want in zip(requests, recorded):
        got = replay.complete(m, n=n, seed=s, temperature=0.7)
        assert [c.to_dict() for c in got] == [c.to_dict() for c in want]


def test_strict_replay_rejects_unknown_and_extra_requests(tmp_path):
    path, _ = _record(tmp_path, ["x"], [(prompt("p"), 1, 1)])
    replay = ReplayClient(path)
    with pytest.raises(ReplayMismatch, match="recorded 0 time"):
        replay.complete(prompt("p"), seed=2, temperature=0.7)  # another seed is another request
    replay.complete(prompt("p"), seed=1, temperature=0.7)
    with pytest.raises(ReplayMismatch, match="recorded 1 time"):
        replay.complete(prompt("p"), seed=1, temperature=0.7)
    assert not issubclass(ReplayMismatch, LLMError)  # a divergence must not pass as one failed call


def test_lenient_replay_repeats_last_reply_and_uses_fallback(tmp_path):
    path, _ = _record(tmp_path, ["x", "y"], [(prompt("p"), 1, 1), (prompt("p"), 1, 1)])
    fallback = ScriptedClient(["from the model"])
    replay = ReplayClient(path, strict=False, fallback=fallback)
    texts = [replay.complete(prompt("p"), seed=1, temperature=0.7)[0].text for _ in range(3)]
    assert texts == ["x", "y", "y"]
    assert replay.complete(prompt("new"), seed=1)[0].text == "from the model"
    assert len(fallback.calls) == 1


def test_failed_calls_are_recorded_and_replayed_as_errors(tmp_path):
    path = tmp_path / "c.jsonl"
    rec = RecordingClient(ScriptedClient([LLMError("provider said no"), "ok"]), path)
    with pytest.raises(LLMError):
        rec.complete(prompt("p"), seed=1)
    assert rec.complete(prompt("p"), seed=1)[0].text == "ok"
    replay = ReplayClient(path)
    with pytest.raises(LLMError, match="provider said no"):
        replay.complete(prompt("p"), seed=1)
    assert replay.complete(prompt("p"), seed=1)[0].text == "ok"


def test_each_call_is_on_disk_before_the_next_and_a_torn_line_is_ignored(tmp_path):
    path = tmp_path / "c.jsonl"
    rec = RecordingClient(ScriptedClient(["one", "two"]), path)
    rec.complete(prompt("p"), seed=1)
    lines = path.read_text().splitlines()  # the recorder is still open: nothing may sit in a buffer
    assert [json.loads(x)["type"] for x in lines] == ["header", "call"]
    rec.complete(prompt("q"), seed=1)
    with path.open("a") as fh:
        fh.write('{"type": "call", "key": "ab')  # a recorder killed mid-write
    replay = ReplayClient(path)
    assert replay.recorded_calls == 2
    assert replay.complete(prompt("q"), seed=1)[0].text == "two"


def test_request_key_ignores_representation_details(tmp_path):
    path, _ = _record(tmp_path, ["x"], [(prompt("p"), 1, 1)])
    replay = ReplayClient(path)
    # temperature 0.7 given as float both times; stop None and [] are the same request
    assert replay.complete(prompt("p"), n=1, temperature=0.7, seed=1, stop=[])[0].text == "x"


def test_scripted_client_cycles_or_calls_a_function():
    cycled = ScriptedClient(["a", "b c"])
    assert [c.text for c in cycled.complete(prompt("one two three"), n=3)] == ["a", "b c", "a"]
    out = cycled.complete(prompt("one two three"))[0]
    assert (out.prompt_tokens, out.completion_tokens, out.text) == (3, 2, "b c")
    fn = ScriptedClient(lambda p, i: f"{p.upper()}#{i}")
    assert [c.text for c in fn.complete(prompt("hi"), n=2)] == ["HI#0", "HI#1"]
    assert fn.calls[0]["n"] == 2
    with pytest.raises(ValueError):
        ScriptedClient([])
