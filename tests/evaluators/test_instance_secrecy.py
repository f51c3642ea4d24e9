"""Instances are independent and held-out data secret (issue 28): leaks through the evaluator's own inputs.

Every attack in ``attacks/`` whose header says ``# expect: no better than the best baseline`` runs through the
real sandbox on the evaluator's instances (``# instances: N`` of ``# set: NAME``, default the train set) and
must be rejected or score no better than the best of the evaluator's baselines, scored the same way on the
same instances (so on the same secret draws). Where the attack's leak is a published seed, the test also
shows that the attack wins on the published instances: what stops it is the secret, not a weak attack.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hifo.agents.evaluation import make_job, score_result
from hifo.evaluators.registry import get_evaluator
from hifo.sandbox import run_job

BETTER_THAN_NOTHING = "# expect: no better than the best baseline"
LEAKS = sorted(p for p in (Path(__file__).parent / "attacks").glob("*.py") if BETTER_THAN_NOTHING in p.read_text())


def _header(path: Path, key: str, default: str) -> str:
    found = re.search(rf"^# {key}: (\S+)$", path.read_text(), re.M)
    return found.group(1) if found else default


TABLES = Path(__file__).parent / "attacks" / "tables"


def attack_source(path: Path, ev) -> str:
    """The attack's code, with its ``TABLE = ...`` line filled in where ``attacks/tables/<stem>.py`` exists: trusted
    code (never sandboxed) whose ``table(ev)`` builds what a memorising model would carry (published instances, their
    answers), so the attack files stay short and no one table is committed that the generators could outdate."""
    code = path.read_text()
    builder = TABLES / f"{path.stem}.py"
    if builder.exists():
        line = re.search(r"^TABLE = .*$", code, re.M)
        assert line, f"{path.name} has a table builder but no 'TABLE = ...' line"
        code = code[: line.start()] + f"TABLE = {_table(builder, ev)}" + code[line.end():]
    return code


_TABLES_BUILT: dict[tuple[Path, str], str] = {}


def _table(builder: Path, ev) -> str:
    """``repr(table(ev))`` of a builder, built once per builder and evaluator (a table holds what the published
    instances give away, the same for the secret-draw and the published-seed test; some take minutes to build)."""
    key = (builder, ev.name)
    if key not in _TABLES_BUILT:
        import importlib.util

        spec = importlib.util.spec_from_file_location(f"attack_table_{builder.stem}", builder)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _TABLES_BUILT[key] = repr(module.table(ev))
    return _TABLES_BUILT[key]


def sandboxed(ev, code: str, instances: list):
    return score_result(ev, instances, run_job(make_job(ev, code, instances)))


def best_baseline(ev, instances: list) -> tuple[str, float]:
    scores = {}
    for name, source in sorted(ev.baselines.items()):
        score = sandboxed(ev, source, instances)
        assert score.feasible, (name, score.error)
        scores[name] = score.fitness
    best = max(scores, key=scores.get)
    return best, scores[best]


def test_every_leak_of_issue_28_has_an_attack():
    names = {_header(p, "evaluator", "") for p in LEAKS}
    assert {"fl_aggregate", "lp_irls", "ridge_schedule", "fdiv_pessimism", "bpp_online",
            "tsp_construct"} <= names


# Evaluators whose slot cannot tell the instances of a set apart, so no table of published answers can pay (each
# has a test in its own file that every instance asks the slot the same questions), or whose held-out data is kept
# secret another way.
NOTHING_TO_MEMORISE = {
    "newton_schulz": "every instance asks the slot the same matrix shapes",
    "grape_slopes": "every instance asks slopes(4, 2, 32)",
    "grape_spectrum": "every instance asks spectrum(8, 10000.0, 32)",
    "fmip_guidance": "the slot sees only (t, step, n_steps), the same on every instance",
    "optimizer_update": "its held-out split is chosen by a parent-side seed (held_out_seed), never shipped",
}


def test_every_evaluator_with_a_published_set_is_shown_to_leak_or_to_have_nothing_to_leak():
    """Issue 28, item 5: for every included evaluator, either a memorising / seed-replaying attack that wins on its
    published instances (header ``# wins on the published seeds``) and no longer wins on the secret draw, or a
    stated reason why nothing per instance can be memorised; none is left unexamined."""
    from hifo.evaluators.registry import get_evaluator_class, list_evaluators

    shown = {_header(p, "evaluator", "") for p in PUBLISHED_WINS}
    for name in sorted(list_evaluators()):
        cls = get_evaluator_class(name)
        if name in NOTHING_TO_MEMORISE:
            continue
        assert name in shown, f"{name}: no attack shows whether its published instances can be memorised"
        assert cls.secret_sets, f"{name}: an attack wins on its published instances, yet no set of it is secret"


@pytest.mark.parametrize("path", [pytest.param(p, marks=[pytest.mark.slow] if p.stem.startswith("optimizer_") else [])
                                  for p in LEAKS], ids=[p.stem for p in LEAKS])
def test_leak_attack_scores_no_better_than_the_best_baseline(path):
    ev = get_evaluator(_header(path, "evaluator", ""))
    instances = ev.load_instances(_header(path, "set", ev.default_train_set))[: int(_header(path, "instances", "1"))]
    attack = sandboxed(ev, attack_source(path, ev), instances)
    name, best = best_baseline(ev, instances)
    # each of these attacks falls back on a baseline where its leak gives nothing: a refusal or a crash would make
    # the comparison vacuous (the fence's refusals are tests/evaluators/test_fair_fitness.py's business)
    assert attack.feasible, f"{path.name}: {attack.error}"
    assert attack.fitness <= best + 1e-12, f"{path.name}: {attack.metrics} beats {name} ({best})"


WINS_ON_PUBLISHED = "# wins on the published seeds"
PUBLISHED_WINS = [p for p in LEAKS if WINS_ON_PUBLISHED in p.read_text()]


@pytest.mark.parametrize("path", PUBLISHED_WINS, ids=[p.stem for p in PUBLISHED_WINS])
def test_the_seed_attacks_win_where_the_seeds_are_published(path):
    """The same attacks on the published instances (header ``# wins on the published seeds``): better than every
    baseline, so the leak is real and what stops the attack is the secret, not a weak attack."""
    ev = get_evaluator(_header(path, "evaluator", ""))
    ev.public_seeds = True
    instances = ev.load_instances(_header(path, "set", ev.default_train_set))[: int(_header(path, "instances", "1"))]
    attack = sandboxed(ev, attack_source(path, ev), instances)
    _, best = best_baseline(ev, instances)
    assert attack.feasible and attack.fitness > best, (attack.error, attack.metrics, best)


def test_secret_instances_differ_per_evaluator_object_and_name_no_seed():
    a, b = get_evaluator("fdiv_pessimism"), get_evaluator("fdiv_pessimism")
    ia, ib = a.load_instances("test"), b.load_instances("test")
    assert [i.name for i in ia] == [i.name for i in ib] and all("secret" in i.name for i in ia)
    assert not np.array_equal(ia[0].x, ib[0].x)  # another key, another draw
    assert np.array_equal(ia[0].x, a.load_instances("test")[0].x)  # the same object: the same instances
    public = get_evaluator("fdiv_pessimism")
    public.public_seeds = True
    assert public.load_instances("test")[0].name == "covered_kappa4_n1000_seed100"
    assert a.load_instances("train")[0].name == public.load_instances("train")[0].name  # train stays published,
    assert all(np.array_equal(x.y, y.y) and x.bandit_seed == y.bandit_seed  # its data too, not only its names
               for x, y in zip(a.load_instances("train"), public.load_instances("train")))
    ridge = get_evaluator("ridge_schedule")
    assert {i.seed for i in ridge.load_instances("train")}.isdisjoint({0, 5, 10, 15, 20, 25})


def _shared_data_instances(name: str) -> list:
    """The instances as they were before issue 28: one seed (fl_aggregate) or one A (lp_irls) for the whole set;
    for optimizer_update the test set's two digits-MLP runs (one architecture), shortened to 60 steps."""
    if name == "optimizer_update":
        import dataclasses

        return [dataclasses.replace(run, steps=60) for run in get_evaluator(name).load_instances("test")[:2]]
    if name == "fl_aggregate":
        from hifo.evaluators.fl_aggregate import FLInstance

        return [FLInstance(f"{a}/30pct/seed0", a, 0.3, 0) for a in ("sign_flip", "alie", "ipm", "label_flip")]
    from hifo.evaluators.lp_irls import LpInstance, _key
    from hifo.problems.lp_regression import damped_irls, random_instance, reference_optimum

    A, b = random_instance(30, 120, 100)
    return [LpInstance(_key(30, 120, p, 100), A, b, p,
                       min(reference_optimum(A, b, p)[0], min(damped_irls(A, b, p, iterations=200).value)))
            for p in (1.5, 3.0, 4.0, 8.0)]


@pytest.mark.parametrize("stem, name", [("fl_cross_instance", "fl_aggregate"), ("lp_irls_row_space", "lp_irls"),
                                        pytest.param("optimizer_warm_start", "optimizer_update", marks=pytest.mark.slow)])
def test_the_state_attacks_win_only_where_state_survives_across_shared_instances(stem, name):
    """On instances that share their data (or, for optimizer_update, their architecture), with state kept from one
    instance to the next (in-process: the slot in the algorithm's process, as these four evaluators' slots were
    until issue 28), the attack beats every baseline; through the sandbox, where each instance gets a fresh slot
    server, the same instances give it nothing."""
    from hifo.sandbox import InProcessExecutor

    ev = get_evaluator(name)
    instances = _shared_data_instances(name)
    code = (Path(__file__).parent / "attacks" / f"{stem}.py").read_text()
    with InProcessExecutor() as executor:
        def in_process(source: str):
            return score_result(ev, instances, executor.submit(make_job(ev, source, instances)).result())

        kept = in_process(code)
        best_in_process = max(in_process(src).fitness for src in ev.baselines.values())
    assert kept.feasible and kept.fitness > best_in_process, (kept.error, kept.metrics, best_in_process)
    fresh = sandboxed(ev, code, instances)
    _, best = best_baseline(ev, instances)
    assert fresh.feasible and fresh.fitness <= best + 1e-12, (fresh.metrics, best)
