"""A fitness is a fact about the candidate: every evaluator's baselines give the same figures on the pinned
kernels (what every x86-64 CPU with AVX2 runs: numpy without AVX-512, OpenBLAS Haswell, MKL/torch AVX2),
with another thread count in the parent and beside a CPU hog, within the evaluator's declared tolerance
(hifo.evaluators.determinism; issue 26). Before the pinning, an AVX2-only machine computed other figures
than an AVX-512 one for surface_recon (Chamfer 0.0411 vs 0.0419) and tsp_gls (tsplib 0.85 vs 0.81 %)."""

from __future__ import annotations

import math

import pytest

from hifo.evaluators import determinism as det
from hifo.evaluators.registry import get_evaluator_class, list_evaluators
from hifo.sandbox._child import child_env
from hifo.sandbox._numeric import PINNED_VARS, cpu_avx512_features, pinned_numeric_env


def test_agree_is_exact_unless_a_tolerance_is_declared():
    assert det.agree(0.1 + 0.2, 0.1 + 0.2, 0.0)
    assert not det.agree(0.30000000000000004, 0.3, 0.0)
    assert det.agree(0.30000000000000004, 0.3, 1e-15)
    assert det.agree(math.nan, math.nan, 0.0) and not det.agree(math.nan, 1.0, 1.0)
    assert det.agree("InfeasibleSolution: x", "InfeasibleSolution: x", 0.0)
    assert not det.agree("a", "b", 1.0)


def test_compare_reports_every_differing_metric_and_honours_per_metric_tolerances():
    plain = {"b": [{"m": 1.0, "n": 2.0}, {"m": 3.0, "n": 4.0}]}
    other = {"b": [{"m": 1.0 + 1e-9, "n": 2.0}, {"m": 3.0, "n": 4.5}]}
    rep = det.compare("x", {"plain": plain, "threads": other}, {"m": 1e-8}, False)
    assert [(m["instance"], m["metric"]) for m in rep.mismatches] == [(1, "n")]
    assert not rep.ok and rep.max_rel["threads"]["n"] == pytest.approx(0.5 / 4.5)
    # a load-dependent evaluator may differ under the hog, never with other threads; unpinned is informational
    rep = det.compare("x", {"plain": plain, "hog": other}, 0.0, True)
    rep.primary = "n"
    assert rep.mismatches and rep.ok
    rep = det.compare("x", {"plain": plain, "threads": other}, 0.0, True)
    rep.primary = "n"
    assert not rep.ok  # its primary metric moved beyond the declared tolerance
    rep = det.compare("x", {"plain": plain, "threads": other}, {"m": 1e-8}, True)
    rep.primary = "m"
    assert rep.ok  # a load-dependent evaluator's other metrics may move
    assert det.compare("x", {"plain": plain, "unpinned": other}, 0.0, False).ok
    # an instance that fails in one configuration only is a difference too
    rep = det.compare("x", {"plain": plain, "threads": {"b": [{"error": "boom"}, plain["b"][1]]}}, 1.0, False)
    assert not rep.ok


def test_merge_replaces_only_the_rechecked_reports_and_records_where_they_came_from():
    def rep(name, verdict, inst_set="train"):
        return {"evaluator": name, "set": inst_set, "ok": verdict}

    old = {"cpu_avx512": ["AVX512F"], "machine": "x86_64", "command": "all of them", "note": "n",
           "reports": [rep("c", True), rep("a", True), rep("b", False), rep("b", True, "test")]}
    new = {"cpu_avx512": [], "machine": "x86_64", "configs": ["plain", "threads"], "command": "b d", "date": "today",
           "reports": [rep("d", True), rep("b", True)]}
    out = det.merge_reports(old, new)
    assert [(r["evaluator"], r["set"], r["ok"]) for r in out["reports"]] == [
        ("a", "train", True), ("b", "test", True), ("b", "train", True), ("c", "train", True), ("d", "train", True)]
    assert {k: out[k] for k in ("cpu_avx512", "command", "note")} == {"cpu_avx512": ["AVX512F"],
                                                                      "command": "all of them", "note": "n"}
    assert out["merges"] == [{"evaluators": ["b", "d"], "configs": ["plain", "threads"], "command": "b d",
                              "date": "today", "cpu_avx512": [], "machine": "x86_64"}]
    assert len(det.merge_reports(out, new)["merges"]) == 2 and len(old["reports"]) == 4  # appended; input untouched


def test_merge_on_the_command_line_keeps_the_other_evaluators(tmp_path, monkeypatch):
    import json

    path = tmp_path / "det.json"
    path.write_text(json.dumps({"command": "first", "reports": [{"evaluator": "a", "set": "train", "ok": True},
                                                                 {"evaluator": "z", "set": "train", "ok": False}]}))
    fresh = det.Report("z", "train", 0.0, False)
    monkeypatch.setattr(det, "check", lambda name, instance_set, configs: fresh)
    assert det.main(["z", "--configs", "plain", "threads", "--json", str(path), "--merge"]) == 0
    out = json.loads(path.read_text())
    assert [(r["evaluator"], r["ok"]) for r in out["reports"]] == [("a", True), ("z", True)]
    assert out["command"] == "first" and out["merges"][0]["evaluators"] == ["z"]
    assert out["merges"][0]["command"].endswith("z --configs plain threads --json " + str(path) + " --merge")
    with pytest.raises(SystemExit):
        det.main(["z", "--merge"])  # nothing to merge into


def test_the_sandbox_child_runs_on_the_pinned_kernels(tmp_path):
    env = child_env(str(tmp_path), {"OPENBLAS_CORETYPE": "SkylakeX", "PATH": "/x"})
    pinned = pinned_numeric_env()
    for var, value in pinned.items():
        assert env[var] == value, var  # a parent's OPENBLAS_CORETYPE does not unpin the child
    assert set(pinned) <= set(PINNED_VARS)
    if cpu_avx512_features():
        assert set(pinned["NPY_DISABLE_CPU_FEATURES"].split()) == set(cpu_avx512_features())


def test_configurations_differ_where_they_should():
    pinned = pinned_numeric_env()
    for config in ("plain", "threads", "hog"):
        for role in ("solve", "score"):
            env = det.config_env(config, role, {})
            assert all(env[k] == v for k, v in pinned.items()), (config, role)
            assert env["OPENBLAS_NUM_THREADS"] == ("2" if (config, role) == ("threads", "score") else "1")
    assert not set(PINNED_VARS) & set(det.config_env("unpinned", "solve", {"OPENBLAS_CORETYPE": "Zen"}))
    with pytest.raises(ValueError):
        det.config_env("fast", "solve", {})


def test_the_hifo_command_pins_its_own_kernels_before_numpy_loads(tmp_path):
    import subprocess
    import sys

    code = ("import os, sys; from hifo.sandbox._numeric import pin_this_process; ok = pin_this_process(); "
            "import numpy; print(ok, os.environ.get('OPENBLAS_CORETYPE'), os.environ.get('HIFO_NUMERIC_PINNED'))")
    env = {k: v for k, v in __import__("os").environ.items() if k not in (*PINNED_VARS, "HIFO_NUMERIC_PINNED")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    if pinned_numeric_env():
        assert out.split() == ["True", "Haswell", "1"]
    late = "import numpy; from hifo.sandbox._numeric import pin_this_process; print(pin_this_process())"
    assert subprocess.run([sys.executable, "-c", late], env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "False"  # after numpy: refuses, kernels already chosen


# Not excused, only declared: test-set figures that differed between CPUs (2026-12-06: a 2-core AMD EPYC reproduced
# these evaluators' train figures bit for bit but not their test-set figures, which another machine stored). Cause
# found the same day (NNPACK convolutions, blocked by cache size; now off) and the figures re-measured; each stays
# listed here, with its measured size, until a second CPU reproduces the new figures exactly (evalkit.assert_figure
# warns with ToleranceUsed whenever a check needs the tolerance).
UNEXPLAINED_CROSS_MACHINE = {"newton_schulz": 0.025, "optimizer_update": 0.015}


def test_declared_tolerances_are_small_and_load_dependence_is_declared():
    for name in list_evaluators():
        cls = get_evaluator_class(name)
        tol = cls.fitness_rtol
        values = tol.values() if isinstance(tol, dict) else [tol]
        assert all(0.0 <= v < 1.0 for v in values), name
        if name in UNEXPLAINED_CROSS_MACHINE:
            assert all(v <= UNEXPLAINED_CROSS_MACHINE[name] for v in values), (name, tol)
        elif not cls.load_dependent:  # only a time budget excuses more than rounding
            assert all(v <= 1e-3 for v in values), (name, tol)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(list_evaluators()))
def test_every_evaluator_scores_the_same_under_other_kernels(name):
    rep = det.check(name, get_evaluator_class(name).determinism_set, ("plain", "threads"))
    assert rep.ok, rep.mismatches[:5]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bpp_online", "tsp_gls", "surface_recon"])
def test_scores_do_not_change_beside_a_cpu_hog(name):
    rep = det.check(name, "train", ("plain", "hog"))
    assert rep.ok, rep.mismatches[:5]
