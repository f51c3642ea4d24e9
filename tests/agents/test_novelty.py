"""Novelty before evaluation: a reply whose normalised code repeats an earlier candidate is not evaluated,
and its prompt is asked again (another seed, a higher temperature), within the call budget."""

from hifo.agents.call_stats import outcomes, per_generation
from hifo.agents.graph import start_run
from hifo.agents.llm.base import Completion
from hifo.agents.llm.factory import wrap_client
from hifo.agents.rundb import RunStore
from hifo.sandbox import LocalExecutor

from agentkit import tiny_config

SAME = "def priority(item, bins):\n    gap = bins - item\n    return -gap\n"


class RepeatsItself:
    """A chat model that writes the same program at the run's temperature and a new one when hotter."""

    style, model = "chat", "fake-chat"

    def __init__(self):
        self.temperatures = []

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.temperatures.append(round(temperature, 3))
        new = f"def priority(item, bins):\n    return (bins - item) * {1 + seed % 97}\n"  # worst fit, new code per seed
        code = SAME if temperature <= 0.7 else new
        return [Completion(f"Idea: fill bins tightly.\n```python\nimport numpy as np\n{code}```", 10, 10,
                           model=self.model)]


def _run(tmp_path, name, client, **kw):
    kw = {"probe_novelty": False, **kw}  # the first two tests are about code; the probe has its own test below
    cfg = tiny_config(tmp_path, run_dir=str(tmp_path / name), init_samples=3, population=3, temperature=0.7, **kw)
    with LocalExecutor(max_workers=2) as ex:
        run_dir, summary = start_run(cfg, client=client, executor=ex)
    store = RunStore(run_dir / "run.sqlite")
    try:
        assert summary["model_calls"] == per_generation(store) and summary["outcomes"] == outcomes(store, "minimize")
        return {c.id: c.status for c in store.candidates(not_operator="baseline")}, store.events("propose"), summary
    finally:
        store.close()


def test_a_duplicate_is_not_evaluated_and_its_prompt_is_asked_again(tmp_path):
    model = RepeatsItself()
    cands, (propose,), summary = _run(tmp_path, "run", model)
    assert cands["g0-000"] == "evaluated"
    assert cands["g0-001"] == cands["g0-002"] == "duplicate"  # same code as g0-000: never evaluated
    assert cands["g0-001d1"] == cands["g0-002d1"] == "evaluated"  # the re-draws, hotter, are new
    assert model.temperatures == [0.7, 0.7, 0.7, 0.9, 0.9]
    assert (propose["duplicates"], propose["redraws"]) == (2, 2)
    (gen0,) = summary["model_calls"]  # what `hifo show` and summary.json report
    assert (gen0["calls"], gen0["candidates"], gen0["duplicates"], gen0["redraws"]) == (5, 5, 2, 2)
    assert gen0["prompt_eval_s"] is None  # a model without llama.cpp's counters: no timings invented
    o = summary["outcomes"]
    # best fit once, worst fit twice (different code, same behaviour): 2 distinct objectives
    assert (o["model_candidates"], o["duplicates"], o["valid"], o["distinct_valid"]) == (5, 2, 3, 2)


def test_re_draws_count_against_the_call_budget_and_can_be_switched_off(tmp_path):
    model = RepeatsItself()
    cands, _, summary = _run(tmp_path, "budget", wrap_client(model, max_calls=4), max_calls=4)
    assert len(model.temperatures) == 4 and "budget" in summary["stop_reason"]
    assert "g0-001d1" in cands and "g0-002d1" not in cands
    off = RepeatsItself()
    cands, (propose,), _ = _run(tmp_path, "off", off, novelty_redraws=0)
    assert off.temperatures == [0.7] * 3 and not any("d1" in c for c in cands)
    assert (propose["duplicates"], propose["redraws"]) == (2, 0)


class RewritesTheBaseline:
    """A chat model whose programs differ in code but, until it is asked hotter, make Best Fit's decisions."""

    style, model = "chat", "fake-chat"

    def __init__(self):
        self.temperatures = []
        self.n = 0

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.temperatures.append(round(temperature, 3))
        self.n += 1
        if temperature <= 0.7:  # best fit in other words: a new program, the baseline's behaviour
            code = f"def priority(item, bins):\n    slack{self.n} = item - bins\n    return slack{self.n} * {self.n}.0\n"
        else:  # worst fit, new in code and in behaviour (the first time)
            code = f"def priority(item, bins):\n    return (bins - item) + {self.n}\n"
        return [Completion(f"Idea: rewrite.\n```python\n{code}```", 10, 10, model=self.model)]


def test_a_candidate_that_behaves_like_an_earlier_one_is_not_evaluated(tmp_path):
    model = RewritesTheBaseline()
    cands, (propose,), summary = _run(tmp_path, "probe", model, probe_novelty=True)
    # g0-000..002: new code, Best Fit's behaviour on the probe instances -> duplicates of the baseline, re-drawn
    assert [cands[f"g0-00{i}"] for i in range(3)] == ["duplicate"] * 3
    # the re-draws: worst fit plus a constant, the same decisions for every constant: the first is evaluated, the
    # others duplicate it, and each of those is asked once more (novelty_redraws=2), again in vain
    assert cands["g0-000d1"] == "evaluated"
    assert [cands[k] for k in ("g0-001d1", "g0-001d2", "g0-002d1", "g0-002d2")] == ["duplicate"] * 4
    store = RunStore(tmp_path / "probe" / "run.sqlite")
    try:
        errors = {c.id: c.error for c in store.candidates(not_operator="baseline")}
    finally:
        store.close()
    assert errors["g0-000"] == "duplicate: behaves like base-best_fit on the probe instances"
    assert (propose["behaviour_duplicates"], propose["duplicates"], propose["redraws"]) == (7, 7, 5)
    assert model.temperatures == [0.7] * 3 + [0.9, 0.9, 1.1, 0.9, 1.1]
    assert summary["outcomes"]["behaviour_duplicates"] == 7
    assert summary["model_calls"][0]["behaviour_duplicates"] == 7
    # off: only the code is compared, so all three rewrites of Best Fit are evaluated
    off = RewritesTheBaseline()
    cands, (propose,), _ = _run(tmp_path, "noprobe", off, probe_novelty=False)
    assert [cands[f"g0-00{i}"] for i in range(3)] == ["evaluated"] * 3 and propose["behaviour_duplicates"] == 0


def test_the_probe_is_bounded_in_time_and_by_the_wall_budget():
    """A spinning candidate must not hold the propose step for the evaluator's whole 30 s limit (it did, and a
    run with --max-wall 4 took 32 s): the probe gives up after PROBE_TIMEOUT_S, or at once when the run's
    wall-clock budget is (nearly) spent; the candidate then goes to its evaluation, which is bounded too."""
    import time

    from hifo.agents.probe import PROBE_TIMEOUT_S, BehaviourProbe
    from hifo.evaluators.registry import get_evaluator

    spin = "def priority(item, bins):\n    while True:\n        pass\n"
    ev = get_evaluator("bpp_online")
    with LocalExecutor(max_workers=1) as ex:
        probe = BehaviourProbe.for_evaluator(ev, ex)
        t0 = time.monotonic()
        assert probe.fingerprint(spin, "spin", wall_left=0.2) is None and probe.runs == 0
        assert probe.fingerprint(spin, "spin") is None and probe.runs == 1
        assert time.monotonic() - t0 < PROBE_TIMEOUT_S + 10 < ev.limits.timeout_s
        assert probe.fingerprint(SAME, "same", wall_left=60.0) is not None


def test_a_replay_takes_the_probe_verdicts_from_the_cassette(tmp_path, monkeypatch):
    """The probe's verdict depends on load (its time limit), so a recording keeps each verdict in the cassette and
    the replay uses it: here the replay's probe cannot run at all, and the replay still ends exactly as recorded."""
    import json

    from hifo.agents.llm.replay import RecordingClient
    from hifo.agents.probe import BehaviourProbe

    cassette = tmp_path / "cassette.jsonl"
    rec, _, rec_summary = _run(tmp_path, "rec", RecordingClient(RewritesTheBaseline(), cassette), probe_novelty=True)
    lines = [json.loads(x) for x in cassette.read_text().splitlines()]
    verdicts = [x for x in lines if x["type"] == "probe"]
    assert len(verdicts) >= 4 and len({v["code"] for v in verdicts}) == len(verdicts)  # one per new code
    assert all(len(v["fingerprint"]) == 64 for v in verdicts)  # every candidate here runs cleanly on the probe

    def no_probe(self, *a, **k):
        raise AssertionError("the replay ran the probe instead of taking the recorded verdict")

    monkeypatch.setattr(BehaviourProbe, "fingerprint", no_probe)
    from hifo.agents.llm.factory import make_client

    rep, _, rep_summary = _run(tmp_path, "rep", make_client(f"replay:{cassette}"), probe_novelty=True)
    assert rep == rec and rec["g0-000"] == "duplicate"
    assert rep_summary["outcomes"] == rec_summary["outcomes"]

    # a cassette recorded without verdicts (or with the probe off) leaves the replay to run the probe live
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(x + "\n" for x in cassette.read_text().splitlines() if '"type": "probe"' not in x))
    monkeypatch.undo()
    live, _, _ = _run(tmp_path, "live", make_client(f"replay:{bare}"), probe_novelty=True)
    assert live == rec


class ListensToFeedback:
    """A chat model that writes Best Fit again whatever the temperature, unless it is told its program is not new."""

    style, model = "chat", "fake-chat"

    def __init__(self):
        self.asked = []

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.asked.append(messages)
        told = "not new" in messages[-1]["content"]
        code = f"def priority(item, bins):\n    return (bins - item) * {2 + len(self.asked)}\n" if told else SAME
        return [Completion(f"Idea: rewrite.\n```python\nimport numpy as np\n{code}```", 10, 10, model=self.model)]


def test_a_re_draw_with_feedback_shows_the_repeated_reply_and_why(tmp_path):
    model = ListensToFeedback()
    cands, (propose,), _ = _run(tmp_path, "feedback", model, redraw_feedback=True)
    assert cands["g0-001"] == cands["g0-002"] == "duplicate" and cands["g0-001d1"] == cands["g0-002d1"] == "evaluated"
    first, redraw = model.asked[1], model.asked[3]  # g0-001's prompt, then its re-draw
    assert redraw[:len(first)] == first  # the same prompt, then the repeated reply and the verdict
    assert redraw[-2]["role"] == "assistant" and SAME in redraw[-2]["content"]
    assert redraw[-1]["role"] == "user" and "duplicate of an earlier candidate" in redraw[-1]["content"]
    store = RunStore(tmp_path / "feedback" / "run.sqlite")
    try:  # the run store records the re-draw's prompt as it was asked
        asked = store.prompt(store.candidate("g0-001d1").prompt_id)["messages"]
    finally:
        store.close()
    assert asked == redraw
    off = ListensToFeedback()  # without feedback the same prompt is asked again, and the model repeats itself
    cands, _, _ = _run(tmp_path, "plain", off)
    assert off.asked[3] == off.asked[1] and cands["g0-001d1"] == "duplicate"


def test_a_completion_style_re_draw_ends_on_the_def_line_again():
    from hifo.agents.repair_loop import redraw_messages

    prompt = [{"role": "user", "content": "# bin packing\ndef priority(item, bins):\n"}]
    (msg,) = redraw_messages("completion", prompt, "    return -(bins - item)\n", "duplicate of g0-000",
                             "priority", "def priority(item, bins):\n")
    assert msg["content"].startswith(prompt[0]["content"] + "    return -(bins - item)")
    assert "not new (duplicate of g0-000)" in msg["content"] and msg["content"].endswith("def priority(item, bins):\n")
