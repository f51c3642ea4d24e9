"""benchmarks/discovery.py with the scripted model: every arm runs to its call budget and is measured."""

import json

from benchmarks.discovery import run_all
from hifo.agents.eoh_selection import pop_greedy


def test_arms_run_to_equal_calls_and_are_measured(tmp_path, make_fake_model):
    out = run_all(["bpp_online"], [0], 8, "fake", tmp_path, client_factory=make_fake_model,
                  arms=["full", "no_foresight", "best_of_n"], log=lambda s: None, test_set="train")
    rows = {r["arm"]: r for r in out["rows"]}
    assert set(rows) == {"full", "no_foresight", "best_of_n"}
    for r in rows.values():
        assert 6 <= r["model_calls"] <= 8 and 1 <= r["replies"] <= r["model_calls"]  # distill calls count too
        assert 0 <= r["valid"] <= r["replies"] and r["curve"][-1][0] == r["model_calls"]
        # the curve never gets worse (bin packing minimises excess)
        vals = [v for _, v in r["curve"]]
        assert all(b <= a + 1e-12 for a, b in zip(vals, vals[1:]))
        assert r["best_baseline"] is not None  # test_set == train set: no separate test evaluation
        assert sum(r["failures"].values()) <= r["replies"] - r["valid"]
        assert 0 <= r["distinct_valid"] <= r["valid"] and (r["valid"] == 0 or r["distinct_valid"] >= 1)
        assert r["valid"] <= r["valid_or_repeat"] <= r["valid"] + r["duplicates"] <= r["replies"]
    s = out["summary"]["bpp_online"]["full"]
    assert s["seeds"] == 1 and 0 <= s["valid_rate"] <= 1


def test_eoh_tsp_and_transfer_arms_with_test_curves_and_plot(tmp_path, make_fake_model, monkeypatch):
    from hifo.agents.rundb import RunStore
    from benchmarks import discovery
    from benchmarks.discovery import plot, run_all

    # tsp_construct replies: a nearest-neighbour variant the scripted model can write
    tsp = ["{Nearest neighbour.}\n```python\nimport numpy as np\n\ndef select_next_node(current_node, destination_node,"
           " unvisited_nodes, distance_matrix):\n    d = distance_matrix[current_node][unvisited_nodes]\n"
           "    return unvisited_nodes[int(np.argmin(d + {C} * 0))]\n```"]

    def model():
        m = make_fake_model()
        m.replies = m.replies + tsp
        return m

    arms = ["full", "eoh", "transfer"]
    out = run_all(["bpp_online", "tsp_construct"], [0], 8, "fake", tmp_path, client_factory=model, arms=arms,
                  log=lambda s: None)
    rows = {(r["problem"], r["arm"]): r for r in out["rows"]}
    assert set(rows) == {("bpp_online", "full"), ("bpp_online", "eoh"), ("tsp_construct", "full"),
                         ("tsp_construct", "eoh"), ("tsp_construct", "transfer")}
    for r in rows.values():  # the test-set curve: one point per call, scored on the test set
        # the published test sets (each problem's `test` is a secret draw per run)
        assert r["test_set"] == discovery.PUBLISHED_TEST.get(r["problem"], "test") == {
            "bpp_online": "weibull_5k", "tsp_construct": "test_published"}[r["problem"]]
        assert len(r["test_curve"]) == r["model_calls"]
        assert [x for x, _ in r["test_curve"]] == [x for x, _ in r["curve"]]
        assert r["test_curve"][0][1] is not None
    # EoH mode: only its four operators after generation 0, no principle in any prompt
    store = RunStore(tmp_path / "bpp_online-eoh-0" / "run.sqlite")
    try:
        ops = {c.operator for c in store.candidates(not_operator="baseline") if c.generation > 0}
        assert ops and ops <= {"e1", "e2", "m1", "m2", "repair"}
        assert all(not p["principle_ids"] for p in store.prompts())
        # ... and EoH's survivors: each generation keeps pop_greedy of the population and its new candidates
        events = [json.loads(x) for x in (tmp_path / "bpp_online-eoh-0" / "events.jsonl").read_text().splitlines()]
        selects = [e for e in events if e["kind"] == "select"]
        assert len(selects) >= 2
        population: list[str] = []
        for e in selects:
            new = [c for c in store.candidates(generation=e["generation"], status="evaluated") if c.ok]
            pool = list({c.id: c for c in [store.candidate(i) for i in population] + new}.values())
            assert e["population"] == [c.id for c in pop_greedy(pool, 4, lambda c: c.fitness)]
            fits = [store.candidate(i).fitness for i in e["population"]]
            assert len(set(fits)) == len(fits)
            population = e["population"]
    finally:
        store.close()
    # transfer: the tsp run started from what the bpp run left
    assert rows[("tsp_construct", "transfer")]["principles_transferred"] > 0
    png = plot(out["rows"], tmp_path / "d.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert discovery.PROBLEM_ARMS["tsp_construct"] == ["full", "eoh", "transfer"]


def test_checkpoint_keeps_finished_arms_and_resume_runs_only_the_rest(tmp_path, make_fake_model):
    import json

    ck = tmp_path / "d.rows.jsonl"
    log: list[str] = []
    first = run_all(["bpp_online"], [0], 6, "fake", tmp_path / "w", client_factory=make_fake_model,
                    arms=["best_of_n"], log=log.append, test_set="train", checkpoint=ck)
    lines = ck.read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["arm"] == "best_of_n"
    ck.write_text(ck.read_text() + '{"problem": "bpp_online", "arm": "full", "se')  # a line cut by a crash
    log.clear()
    second = run_all(["bpp_online"], [0], 6, "fake", tmp_path / "w", client_factory=make_fake_model,
                     arms=["best_of_n", "no_foresight"], log=log.append, test_set="train", checkpoint=ck,
                     resume=True)
    assert any("reused" in m and "best_of_n" in m for m in log)  # not run again ...
    assert not any("reused" in m and "no_foresight" in m for m in log)  # ... the missing arm ran
    assert [r for r in second["rows"] if r["arm"] == "best_of_n"] == first["rows"]
    assert {r["arm"] for r in second["rows"]} == {"best_of_n", "no_foresight"}
    # another budget does not reuse the rows
    log.clear()
    run_all(["bpp_online"], [0], 5, "fake", tmp_path / "w", client_factory=make_fake_model,
            arms=["best_of_n"], log=log.append, test_set="train", checkpoint=ck, resume=True)
    assert not any("reused" in m for m in log)
    # nor does another novelty setting: rows with the behaviour probe are not comparable with rows without it
    assert json.loads(lines[0])["probe_novelty"] is False  # off by default
    log.clear()
    run_all(["bpp_online"], [0], 6, "fake", tmp_path / "w", client_factory=make_fake_model,
            arms=["best_of_n"], log=log.append, test_set="train", checkpoint=ck, resume=True, probe_novelty=True)
    assert not any("reused" in m for m in log)
    assert json.loads(lines[0])["redraw_feedback"] is False  # nor re-draw feedback
    log.clear()
    run_all(["bpp_online"], [0], 6, "fake", tmp_path / "w", client_factory=make_fake_model,
            arms=["best_of_n"], log=log.append, test_set="train", checkpoint=ck, resume=True, redraw_feedback=True)
    assert not any("reused" in m for m in log)


def test_repeats_of_working_programs_count_as_valid_but_not_as_new():
    """Issue 27's "valid": a duplicate rejected before evaluation is a working program when the candidate it
    repeats (named by the probe, else the first with its code hash) works; a repeat of a broken one is not."""
    from types import SimpleNamespace as C

    from benchmarks.discovery_rows import repeat_counts

    base = C(id="base-best_fit", code_hash="h0", status="evaluated", ok=True, error=None)
    good = C(id="g1-000", code_hash="h1", status="evaluated", ok=True, error=None)
    bad = C(id="g1-001", code_hash="h2", status="evaluated", ok=False, error="error: TypeError")
    made = [good, bad,
            C(id="g1-002", code_hash="h1", status="duplicate", ok=False, error="duplicate of an earlier candidate"),
            C(id="g1-003", code_hash="h2", status="duplicate", ok=False, error="duplicate of an earlier candidate"),
            C(id="g1-004", code_hash="h9", status="duplicate", ok=False,
              error="duplicate: behaves like base-best_fit on the probe instances"),
            C(id="g1-005", code_hash="h8", status="duplicate", ok=False,
              error="duplicate: behaves like g1-001 on the probe instances")]
    counts = repeat_counts([base, *made], made)
    assert counts == {"duplicates": 4, "repeats_of_valid": 2, "valid_or_repeat": 3, "valid_or_repeat_rate": 0.5}


def test_a_reused_row_gets_its_repeat_counts_from_its_run_folder(tmp_path, make_fake_model):
    ck = tmp_path / "d.rows.jsonl"
    run_all(["bpp_online"], [0], 6, "fake", tmp_path / "w", client_factory=make_fake_model, arms=["best_of_n"],
            log=lambda s: None, test_set="train", checkpoint=ck)
    row = json.loads(ck.read_text())
    counted = {k: row.pop(k) for k in ("duplicates", "repeats_of_valid", "valid_or_repeat", "valid_or_repeat_rate",
                                       "distinct_share")}
    ck.write_text(json.dumps(row) + "\n")  # as a row written before the counts existed
    log: list[str] = []
    again = run_all(["bpp_online"], [0], 6, "fake", tmp_path / "w", client_factory=make_fake_model,
                    arms=["best_of_n"], log=log.append, test_set="train", checkpoint=ck, resume=True)
    assert any("reused" in m for m in log)
    assert {k: again["rows"][0][k] for k in counted} == counted
    assert {k: json.loads(ck.read_text())[k] for k in counted} == counted  # the checkpoint rewritten with them
