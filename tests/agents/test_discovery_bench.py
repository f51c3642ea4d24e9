"""benchmarks/discovery.py with the scripted model: every arm runs to its call budget and is measured."""

from benchmarks.discovery import run_all


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
    s = out["summary"]["bpp_online"]["full"]
    assert s["seeds"] == 1 and 0 <= s["valid_rate"] <= 1
