"""``hifo data optwvp-refs`` on a temporary set: one packaged record reproduced, the file written."""

from __future__ import annotations

import json

import pytest

from hifo.evaluators.optwvp_refs import make_optwvp_refs
from hifo.evaluators.optwvp_route import REFS_PATH, instance_specs


def test_the_first_train_instance_is_reproduced(tmp_path):
    name, n, seed = instance_specs()["train"][0]
    out = tmp_path / "refs.json"
    lines: list[str] = []
    make_optwvp_refs(milp_limit=30.0, ils_runs=1, specs={"train": [(name, n, seed)]}, out=out, log=lines.append)
    made = json.loads(out.read_text())["instances"]
    stored = json.loads(REFS_PATH.read_text())["instances"][name]
    assert list(made) == [name]
    rec = made[name]
    assert (rec["set"], rec["n"], rec["seed"]) == ("train", n, seed)
    assert rec["coords_sum"] == pytest.approx(stored["coords_sum"])
    assert stored["source"] == "milp-optimal" and rec["source"] == "milp-optimal"
    assert rec["best"] == pytest.approx(stored["best"], rel=1e-6)
    assert rec["ils_best"] <= rec["best"] + 1e-6
    assert [s["route"] for s in rec["service_routes"]][0] == rec["route"]
    assert any(name in line for line in lines)


def test_ils_runs_must_be_positive(tmp_path):
    with pytest.raises(ValueError):
        make_optwvp_refs(ils_runs=0, specs={}, out=tmp_path / "r.json")
