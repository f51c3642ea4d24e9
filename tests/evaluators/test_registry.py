"""hifo.evaluators.registry: built-ins, entry points, clear errors."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from hifo.evaluators import registry
from hifo.evaluators.bpp_online import BinPackingOnline
from hifo.evaluators.registry import GROUP, get_evaluator, get_evaluator_class, list_evaluators
from hifo.evaluators.tsp_construct import TSPConstruct


def fake_entry_points(*eps):
    def _entry_points(group):
        assert group == GROUP
        return [EntryPoint(name, value, GROUP) for name, value in eps]
    return _entry_points


def test_builtins_are_listed():
    names = list_evaluators()
    assert names["bpp_online"] == "hifo.evaluators.bpp_online:BinPackingOnline"
    assert names["tsp_construct"] == "hifo.evaluators.tsp_construct:TSPConstruct"
    assert isinstance(get_evaluator("bpp_online"), BinPackingOnline)
    assert isinstance(get_evaluator("tsp_construct"), TSPConstruct)


def test_entry_points_of_this_distribution_match_the_builtins():
    from importlib.metadata import entry_points
    found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    if not found:
        pytest.skip("hifo is not installed")
    for name, target in registry.BUILTIN.items():
        assert found.get(name) == target


def test_builtins_work_without_installed_metadata(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", fake_entry_points())
    assert set(list_evaluators()) == set(registry.BUILTIN) and {"bpp_online", "tsp_construct"} <= set(registry.BUILTIN)
    assert get_evaluator_class("tsp_construct") is TSPConstruct


def test_plugins_are_found(monkeypatch):
    monkeypatch.setattr(registry, "entry_points",
                        fake_entry_points(("my_problem", "hifo.evaluators.bpp_online:BinPackingOnline")))
    assert list_evaluators()["my_problem"] == "hifo.evaluators.bpp_online:BinPackingOnline"
    assert isinstance(get_evaluator("my_problem"), BinPackingOnline)


def test_unknown_name_lists_the_known_ones(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", fake_entry_points())
    with pytest.raises(KeyError) as info:
        get_evaluator("bin_packing")
    assert str(info.value) == ("unknown evaluator 'bin_packing'; known evaluators: "
                               + ", ".join(sorted(registry.BUILTIN)))


def test_bad_targets(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", fake_entry_points(
        ("not_an_evaluator", "hifo.evaluators.base:Score"), ("no_colon", "hifo.evaluators.base")))
    with pytest.raises(TypeError, match="not an Evaluator"):
        get_evaluator("not_an_evaluator")
    with pytest.raises(ValueError, match="module:Class"):
        get_evaluator("no_colon")


def test_plugins_cannot_shadow_builtins(monkeypatch):
    monkeypatch.setattr(registry, "entry_points",
                        fake_entry_points(("bpp_online", "hifo.evaluators.tsp_construct:TSPConstruct")))
    with pytest.warns(UserWarning, match="ignored"):
        assert list_evaluators()["bpp_online"] == "hifo.evaluators.bpp_online:BinPackingOnline"
