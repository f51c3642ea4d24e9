"""`hifo problems` answers from a cache keyed by the evaluators' sources (issue 31: it took 5-7 s)."""

import os

from hifo.evaluators import registry


def test_listing_is_cached_and_the_cache_follows_the_sources(tmp_path, monkeypatch):
    plugin = tmp_path / "plug" / "myplug_eval.py"
    plugin.parent.mkdir()
    plugin.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(plugin.parent))
    targets = {"bpp_online": registry.BUILTIN["bpp_online"], "mine": "myplug_eval:Mine"}
    monkeypatch.setattr(registry, "list_evaluators", lambda: dict(targets))
    calls = []

    class Fake:
        def __init__(self, name):
            self.name = name

        def info(self):
            return {"name": self.name, "primary_metric": "m"}

    def fake_get(name):
        calls.append(name)
        return Fake(name)

    monkeypatch.setattr(registry, "get_evaluator", fake_get)
    first = registry.evaluator_infos(tmp_path / "cache")
    assert [r["name"] for r in first] == ["bpp_online", "mine"] and calls == ["bpp_online", "mine"]
    assert len(list((tmp_path / "cache").glob("problems-*.json"))) == 1
    assert registry.evaluator_infos(tmp_path / "cache") == first and len(calls) == 2  # from the cache
    st = plugin.stat()
    os.utime(plugin, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))  # the plug-in was edited
    registry.evaluator_infos(tmp_path / "cache")
    assert len(calls) == 4
    assert registry.evaluator_infos("") and len(calls) == 6  # "" switches the cache off


def test_a_broken_evaluator_is_listed_with_its_error_and_never_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "list_evaluators", lambda: {"broken": "nowhere_mod:Nope"})

    def boom(name):
        raise ImportError("no module named nowhere_mod")

    monkeypatch.setattr(registry, "get_evaluator", boom)
    (row,) = registry.evaluator_infos(tmp_path / "cache")
    assert row["error"].startswith("ImportError") and row["target"] == "nowhere_mod:Nope"
    assert not list((tmp_path / "cache").glob("problems-*.json"))
