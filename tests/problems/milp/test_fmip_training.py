"""``hifo data train-fmip``'s pipeline on one small family: label, train one epoch, held-out check, save."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

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

