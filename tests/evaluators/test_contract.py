"""The contract every registered evaluator keeps, checked once for all of them (one row each).

A new in-tree evaluator is one file and one ``registry.BUILTIN`` line; it is picked up here without
another line. What each evaluator's baselines *measure* against its ``reference_figures`` is checked
in its own test file (those runs differ in cost and tolerance); here the figures are checked to name
real baselines, instance sets and metrics.
"""

from __future__ import annotations

import inspect
import math
import pickle

import pytest

from hifo.evaluators import Evaluator, FunctionTemplate, get_evaluator
from hifo.evaluators.registry import BUILTIN, get_evaluator_class
from evalkit import compile_entry

NAMES = sorted(BUILTIN)


@pytest.fixture(scope="module", params=NAMES)
def ev(request) -> Evaluator:
    return get_evaluator(request.param)


def test_declaration(ev):
    cls = type(ev)
    assert get_evaluator_class(ev.name) is cls and BUILTIN[ev.name] == cls.entry_point()
    assert ev.direction in ("minimize", "maximize") and ev.primary_metric and ev.description.strip()
    assert isinstance(ev.template, FunctionTemplate)
    assert isinstance(inspect.getattr_static(cls, "solve"), staticmethod)  # runs in the sandbox child
    assert {ev.default_train_set, ev.default_test_set} <= set(ev.instance_sets)
    assert ev.limits.timeout_s > 0 and ev.limits.memory_mb > 0
    assert ev.tags and all(isinstance(t, str) for t in ev.tags)


def test_baselines_are_full_sources_of_the_slot(ev):
    assert ev.baselines and ev.baseline_source() in ev.baselines.values()
    assert ev.baseline_source() == ev.template.source() == ev.template.source(ev.template.baseline_body)
    for name, source in ev.baselines.items():
        assert source.startswith(ev.template.imports), name
        fn = compile_entry(source, ev.template.name)
        assert callable(fn), name
        # the slot's parameters, as the template declares them
        declared = ev.template.signature.split("(", 1)[1].rsplit(")", 1)[0]
        assert list(inspect.signature(fn).parameters) == [p.split(":")[0].split("=")[0].strip()
                                                          for p in declared.split(",") if p.strip()], name


def test_reference_figures_name_real_things(ev):
    for baseline, per_set in ev.reference_figures.items():
        assert baseline in ev.baselines, baseline
        for instance_set, figures in per_set.items():
            assert instance_set in ev.instance_sets or _loads(ev, instance_set), (baseline, instance_set)
            assert ev.primary_metric in figures, (baseline, instance_set)
            assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in figures.values())


def _loads(ev: Evaluator, instance_set: str) -> bool:
    """A set outside ``instance_sets`` (an extra benchmark set) must still load by name."""
    try:
        return bool(ev.load_instances(instance_set))
    except KeyError:
        return False


def test_unknown_instance_set_is_a_key_error_naming_the_known(ev):
    with pytest.raises(KeyError, match=rf"unknown instance set 'no_such_set' for {ev.name}; known: \w"):
        ev.load_instances("no_such_set")


def test_evaluator_pickles_for_the_executors(ev):
    assert type(pickle.loads(pickle.dumps(ev))) is type(ev)
