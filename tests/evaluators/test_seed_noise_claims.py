"""Issue 29's must-shows for the algorithmic families, re-measured: the seed-to-seed noise of the score the search
sees (the train set) for the paper's rule (or its renamed reconstruction) and the slot's best other baseline, and
the figures that no other test re-checks.

The noise is measured the way :mod:`hifo.evaluators._seed_noise` measures a secret set's: the set redrawn under the
fixed keys ``blake2b("seed-noise draw {d}")``, d = 0..7, here for the train set too (a subclass that makes every
set secret), so each figure is the same on every machine and the documented numbers are checked exactly.
``python tests/evaluators/test_seed_noise_claims.py EVALUATOR BASELINE_A BASELINE_B [SET ...]`` prints them
(mean and sample sd of each baseline's set score over the draws, and of their paired difference);
``python tests/evaluators/test_seed_noise_claims.py --fdiv-coverage`` prints fdiv_pessimism's scored quantile on the
starved and covered instances, ``--tbptt-redraws half ramp no_burn_in`` tbptt_burnin's train score on redrawn data
seeds (its train set has no secret draw). The family pages (docs/families/) quote that output.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hifo.evaluators.base import Evaluator, measured_figures
from hifo.evaluators.registry import get_evaluator

sys.path.insert(0, str(Path(__file__).parent))
from evalkit import assert_figure, compile_entry, run_instance  # noqa: E402

DRAWS = 8


def _every_set_secret(name: str) -> type[Evaluator]:
    cls = type(get_evaluator(name))
    return type(cls.__name__ + "EverySetSecret", (cls,), {"secret_sets": tuple(cls.instance_sets)})


def draw_scores(name: str, baselines: tuple[str, ...], instance_set: str, draws: int = DRAWS
                ) -> dict[str, list[float]]:
    """Each baseline's primary metric on ``draws`` redraws of ``instance_set`` (the keys of _seed_noise)."""
    sub = _every_set_secret(name)
    template = sub.template.name
    out: dict[str, list[float]] = {b: [] for b in baselines}
    for d in range(draws):
        ev = sub()
        ev.use_secret_key(hashlib.blake2b(f"seed-noise draw {d}".encode()).digest()[:32])
        for b in baselines:
            out[b].append(measured_figures(ev, compile_entry(ev.baselines[b], template), instance_set)[ev.primary_metric])
    return out


def summary(scores: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Mean and sample sd of each baseline's scores, and of the paired difference (first minus second)."""
    a, b = scores
    out = {k: {"mean": round(float(np.mean(v)), 6), "sd": round(float(np.std(v, ddof=1)), 6)}
           for k, v in scores.items()}
    diff = np.subtract(scores[a], scores[b])
    out[f"{a} - {b}"] = {"mean": round(float(diff.mean()), 6), "sd": round(float(diff.std(ddof=1)), 6)}
    return out


def _assert_summary(got: dict[str, dict[str, float]], documented: dict[str, tuple[float, float]]) -> None:
    for key, (mean, sd) in documented.items():
        assert got[key]["mean"] == pytest.approx(mean, abs=1e-6), (key, got[key])
        assert got[key]["sd"] == pytest.approx(sd, abs=1e-6), (key, got[key])


# hnsw_delete's 8 redraws of its 36-instance train set (``python tests/evaluators/test_seed_noise_claims.py hnsw_delete
# spatch robust_prune train``: about 10 min at load 5) and the first two draws' scores, which the suite re-draws
HNSW_SUMMARY = {"spatch": (0.943149, 0.004934), "robust_prune": (0.956951, 0.002857),
                "spatch - robust_prune": (-0.013802, 0.00424)}
# tbptt_burnin's train set redrawn 16 times (``--tbptt-redraws half ramp no_burn_in --draws 16``, 2026-12-07/08,
# benchmarks/results/tbptt_redraws.json): the sd of each schedule's set score over the draws, and of the paired
# difference half - ramp (mean +0.0114, ramp lower in 15 of 16; over the first 8 draws alone 0.0101, 0.0092, 0.0128)
TBPTT_REDRAW_SD = {"half": 0.008416, "ramp": 0.007435}
TBPTT_PAIRED_REDRAW_SD = 0.010059
# half - ramp per train instance (data seeds 0-7): mean 0.0104, sd 0.0123
TBPTT_HALF_MINUS_RAMP = [-0.006, 0.017, 0.0269, 0.0175, 0.0128, -0.0028, 0.0199, -0.0021]
HNSW_FIRST_DRAWS = {"spatch": [0.944792, 0.931708], "robust_prune": [0.95775, 0.953764]}


@pytest.mark.slow
def test_hnsw_the_best_baseline_beats_the_paper_style_rule_by_more_than_the_noise_on_train():
    """docs/families/hnsw.md: on 8 redraws of the 36-instance train set SPatch (our reading of the paper) scores
    0.9431 +- 0.0049 and robust_prune (the best other baseline) 0.9570 +- 0.0029, paired difference -0.0138 +- 0.0042;
    the published train gap (0.0073) is larger than either's seed-to-seed sd and than the paired difference's sd,
    and the redraws' mean gap more than twice each. All eight draws take about 10 min, too long for the suite: it
    re-draws the first two (75 s) and checks them exactly; the script above reproduces the whole summary."""
    got = draw_scores("hnsw_delete", ("spatch", "robust_prune"), "train", draws=2)
    for name, values in HNSW_FIRST_DRAWS.items():
        assert got[name] == pytest.approx(values, abs=1e-6), (name, got[name])
    sds = [sd for _, sd in HNSW_SUMMARY.values()]
    stored = get_evaluator("hnsw_delete").reference_figures
    gap = stored["robust_prune"]["train"]["budget_recall"] - stored["spatch"]["train"]["budget_recall"]
    assert gap > max(sds)
    assert -HNSW_SUMMARY["spatch - robust_prune"][0] > 2 * max(sds)


@pytest.mark.slow
def test_lp_irls_the_renamed_reconstruction_leads_by_far_more_than_the_noise():
    """docs/families/lp_regression.md: damped IRLS (ours; the paper's rule was not recovered) against half-damped,
    the best other baseline: 8.94 +- 0.29 vs 28.41 +- 0.19 solves over 8 train redraws; the published gap (19.25
    solves) is more than 50 times either sd."""
    got = summary(draw_scores("lp_irls", ("damped", "half_damped"), "train"))
    _assert_summary(got, {"damped": (8.9375, 0.291241), "half_damped": (28.40625, 0.186006),
                          "damped - half_damped": (-19.46875, 0.311606)})
    stored = get_evaluator("lp_irls").reference_figures
    gap = stored["half_damped"]["train"]["solves"] - stored["damped"]["train"]["solves"]
    assert gap > 50 * max(got["damped"]["sd"], got["half_damped"]["sd"])


@pytest.mark.slow
def test_fdiv_the_best_baseline_beats_the_paper_s_bonus_by_more_than_the_noise_on_train():
    """docs/families/fdiv_bandits.md: the 1/N bonus (ours) against the paper's Hoeffding bonus on 8 train redraws:
    28.85 +- 6.17 vs 61.96 +- 7.07 (n_subopt_q90); the published train gap (31.5) is more than 4 times either sd."""
    got = summary(draw_scores("fdiv_pessimism", ("hoeffding", "inverse_count"), "train"))
    _assert_summary(got, {"hoeffding": (61.96103, 7.073037), "inverse_count": (28.851768, 6.169835),
                          "hoeffding - inverse_count": (33.109262, 4.877851)})
    stored = get_evaluator("fdiv_pessimism").reference_figures
    gap = stored["hoeffding"]["train"]["n_subopt_q90"] - stored["inverse_count"]["train"]["n_subopt_q90"]
    assert gap > 4 * max(got["hoeffding"]["sd"], got["inverse_count"]["sd"])


def _starved_q90(ev: Evaluator, baseline: str, instance_set: str, coverage: str = "starved") -> float:
    h = compile_entry(ev.baselines[baseline], "bonus")
    return float(np.mean([run_instance(ev, h, i)["n_subopt_q90"] for i in ev.load_instances(instance_set)
                          if i.coverage == coverage]))


def fdiv_by_coverage(draws: int = DRAWS) -> dict[str, Any]:
    """Mean n_subopt_q90 over the starved and the covered instances, Hoeffding vs plug-in, on the published train and
    test sets and on ``draws`` redraws of each (``--fdiv-coverage`` prints it)."""
    sub = _every_set_secret("fdiv_pessimism")
    out: dict[str, Any] = {}
    for instance_set in ("train", "test"):
        for coverage in ("starved", "covered"):
            public = sub()
            public.public_seeds = True
            row: dict[str, Any] = {b: round(_starved_q90(public, b, instance_set, coverage), 2)
                                   for b in ("hoeffding", "plugin")}
            drawn = []
            for d in range(draws):
                ev = sub()
                ev.use_secret_key(hashlib.blake2b(f"seed-noise draw {d}".encode()).digest()[:32])
                drawn.append([_starved_q90(ev, b, instance_set, coverage) for b in ("hoeffding", "plugin")])
            arr = np.array(drawn)
            row["draws"] = {b: (round(float(arr[:, k].mean()), 2), round(float(arr[:, k].std(ddof=1)), 2))
                            for k, b in enumerate(("hoeffding", "plugin"))}
            row["hoeffding_lower_in_draws"] = int((arr[:, 0] < arr[:, 1]).sum())
            out[f"{instance_set}/{coverage}"] = row
    return out


@pytest.mark.slow
def test_fdiv_on_starved_test_draws_pessimism_beats_plug_in_in_the_scored_quantile():
    """The paper's regime on the test set (test_fdiv_pessimism.py checks the train set): on the starved instances
    of the published test set and of each of 4 secret draws, the Hoeffding bonus's mean 90th percentile of
    n * subopt is below a third of the plug-in learner's (published: 105.8 vs 682.8)."""
    sub = _every_set_secret("fdiv_pessimism")
    public = sub()
    public.public_seeds = True
    evs = [public]
    for d in range(4):
        ev = sub()
        ev.use_secret_key(hashlib.blake2b(f"seed-noise draw {d}".encode()).digest()[:32])
        evs.append(ev)
    for ev in evs:
        h, p = _starved_q90(ev, "hoeffding", "test"), _starved_q90(ev, "plugin", "test")
        assert h < p / 3, (h, p)


def tbptt_redraws(names: tuple[str, ...], draws: int = DRAWS, workers: int = 2) -> dict[str, Any]:
    """tbptt_burnin's train set has no secret draw: it is redrawn here as the train spec on other data seeds (draw k:
    data seeds 100 + 8k .. 107 + 8k, initialisation seed 0, window 100), each baseline scored by the parent's replay of
    its fixed schedule on one pinned torch thread (``workers`` processes; the figures do not depend on it). Each
    schedule's set score (mean test RMSE of the 8 runs) per draw, its mean and sd over the draws, and the paired
    difference of the first schedule and each other (``--tbptt-redraws NAME ...`` prints it; about 11 s per run on one
    core, 8 runs per schedule and draw)."""
    from hifo.evaluators.tbptt_burnin import WINDOW, BurnInInstance, fixed_schedule, pool_map, replay

    ev = get_evaluator("tbptt_burnin")
    sched = {n: fixed_schedule(compile_entry(ev.baselines[n], "burn_in"), WINDOW) for n in names}
    items = [(BurnInInstance(f"redraw{k}/data{s}/init0/window{WINDOW}", s, WINDOW, 0), sched[n])
             for k in range(draws) for n in names for s in range(100 + 8 * k, 108 + 8 * k)]
    rmse = iter(r["test_rmse"] for r in pool_map(replay, items, workers))
    scores: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(draws):
        for n in names:
            scores[n].append(float(np.mean([next(rmse) for _ in range(8)])))
    out: dict[str, Any] = {n: {"per_draw": np.round(v, 4).tolist(), "mean": round(float(np.mean(v)), 6),
                               "sd": round(float(np.std(v, ddof=1)), 6)} for n, v in scores.items()}
    for n in names[1:]:
        diff = np.subtract(scores[names[0]], scores[n])
        out[f"{names[0]} - {n}"] = {"per_draw": np.round(diff, 4).tolist(), "mean": round(float(diff.mean()), 6),
                                    "sd": round(float(diff.std(ddof=1)), 6)}
    return out


@pytest.mark.slow
def test_tbptt_every_baseline_reproduces_its_train_figures_and_ramp_s_lead_over_half_exceeds_the_noise():
    """Every baseline's stored train figures, by the parent's replay of its fixed schedule (the sandbox path agrees:
    test_tbptt_burnin.py). ramp (ours, the best other baseline) leads half (the paper's fixed burn-in, window/2) on the
    published train set by 0.0104: more than the sd of either's set score over 16 redrawn train sets (0.0084, 0.0074)
    and, by a hair, than the sd of their paired difference over the draws (0.0101; its mean +0.0114, ramp lower in 15
    of 16): ``--tbptt-redraws half ramp no_burn_in --draws 16``, docs/families/tbptt.md."""
    from hifo.evaluators.tbptt_burnin import set_scores

    ev = get_evaluator("tbptt_burnin")
    runs = {name: set_scores(name, "train", ev, workers=2) for name in ("half", "ramp", "quarter", "no_burn_in")}
    for name, per in runs.items():
        agg = ev.aggregate(per)
        for metric, value in ev.reference_figures[name]["train"].items():
            assert_figure(ev, agg[metric], value, metric, (name, "train"))
    diff = np.array([h["test_rmse"] - r["test_rmse"] for h, r in zip(runs["half"], runs["ramp"])])
    assert np.round(diff, 4).tolist() == TBPTT_HALF_MINUS_RAMP
    assert diff.mean() > max(*TBPTT_REDRAW_SD.values(), TBPTT_PAIRED_REDRAW_SD)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["krum", "multi_krum", "bulyan", "geometric_median", "coordinate_median",
                                  "trimmed_mean", "centered_clipping"])
def test_fl_aggregate_the_other_baselines_reproduce_their_stored_train_figures(name):
    """test_fl_aggregate.py re-checks learnable_weights and FedAvg; these are the other seven."""
    ev = get_evaluator("fl_aggregate")
    h = compile_entry(ev.baselines[name], "aggregate")
    agg = ev.aggregate([run_instance(ev, h, i) for i in ev.load_instances("train")])
    for metric, value in ev.reference_figures[name]["train"].items():
        assert_figure(ev, agg[metric], value, metric, (name, "train"))


@pytest.mark.slow
def test_fl_aggregate_the_paper_rule_reproduces_its_stored_test_figures():
    """No other test re-checks a test-set figure of fl_aggregate: learnable_weights on the published test seeds."""
    ev = get_evaluator("fl_aggregate")
    ev.public_seeds = True
    h = compile_entry(ev.baselines["learnable_weights"], "aggregate")
    agg = ev.aggregate([run_instance(ev, h, i) for i in ev.load_instances("test")])
    for metric, value in ev.reference_figures["learnable_weights"]["test"].items():
        assert_figure(ev, agg[metric], value, metric, ("learnable_weights", "test"))


@pytest.mark.slow
def test_tbptt_half_reproduces_its_stored_test_published_figures():
    """No other test re-checks a test-set figure of tbptt_burnin: `half` (the paper's fixed burn-in) on the published
    test seeds."""
    from hifo.evaluators.tbptt_burnin import set_scores

    ev = get_evaluator("tbptt_burnin")
    agg = ev.aggregate(set_scores("half", "test_published", ev, workers=2))
    for metric, value in ev.reference_figures["half"]["test_published"].items():
        assert_figure(ev, agg[metric], value, metric, ("half", "test_published"))


if __name__ == "__main__":
    if sys.argv[1:] == ["--fdiv-coverage"]:
        print(json.dumps(fdiv_by_coverage(), indent=1))
        raise SystemExit
    if sys.argv[1:2] == ["--tbptt-redraws"]:
        import argparse

        ap = argparse.ArgumentParser(prog="test_seed_noise_claims.py --tbptt-redraws")
        ap.add_argument("names", nargs="+", help="baselines; the first is compared with each other")
        ap.add_argument("--draws", type=int, default=DRAWS)
        args = ap.parse_args(sys.argv[2:])
        if args.draws < 2:
            ap.error("--draws must be at least 2 (an sd over the draws)")
        print(json.dumps(tbptt_redraws(tuple(args.names), args.draws), indent=1))
        raise SystemExit
    evaluator, a, b, *sets = sys.argv[1:]
    result: dict[str, Any] = {s: summary(draw_scores(evaluator, (a, b), s)) for s in (sets or ["train"])}
    print(json.dumps(result, indent=1))
