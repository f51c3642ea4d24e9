"""``hifo data train-fmip``'s pipeline on one small family: label, train one epoch, held-out check, save."""

from __future__ import annotations

import json

import pytest

import torch  # a hard dependency

from hifo.problems.milp import fmip, fmip_training  # noqa: E402


@pytest.mark.slow  # about 10 s: HiGHS labels and the held-out sampling
def test_one_family_one_epoch_saves_loadable_weights(tmp_path, monkeypatch):
    torch.set_num_threads(1)
    monkeypatch.setattr(fmip_training, "FAMILIES", ("intcover",))
    weights = tmp_path / "fmip.pt"
    out = fmip_training.run(per_family=1, epochs=1, label_time=1.0, weights=weights, log=lambda s: None)
    assert out["n_train"] == 1 and out["epochs"] == 1 and out["weights"] == str(weights)
    (row,) = out["held_out"]
    assert row["family"] == "intcover"
    for mode in ("unguided", "guided"):
        assert 0.0 <= row[f"{mode}_int_acc"] <= 1.0 and row[f"{mode}_viol"] >= 0.0
    net = fmip.load_model(weights)
    assert sum(p.numel() for p in net.parameters()) > 0
    meta = json.loads(weights.with_suffix(".json").read_text())
    assert meta["families"] == ["intcover"] and meta["per_family"] == 1 and "intcover" in meta["sizes"]


@pytest.mark.slow
def test_compare_checks_earlier_weights_on_the_same_held_out_instances(tmp_path, monkeypatch):
    torch.set_num_threads(1)
    monkeypatch.setattr(fmip_training, "FAMILIES", ("intcover",))
    earlier = tmp_path / "earlier.pt"
    fmip.save_model(fmip.FMIPNet(16, 1), earlier)
    weights = tmp_path / "fmip.pt"
    out = fmip_training.run(per_family=1, epochs=1, label_time=1.0, weights=weights, compare=earlier,
                            save=False, log=lambda s: None)
    assert not weights.exists() and out["compare"] == str(earlier) and out["wall_s"] > 0
    (now,), (before,) = out["held_out"], out["held_out_compare"]
    assert now["instance"] == before["instance"] and now["label_obj"] == before["label_obj"]
    assert 0.0 <= before["guided_int_acc"] <= 1.0

