"""``hifo data train-radar``'s training loop, one batch: it saves weights that load_radar reads back."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("elkai")

from hifo.problems.routing import load_radar  # noqa: E402
from hifo.problems.routing import radar_training  # noqa: E402


def test_one_batch_saves_loadable_weights(tmp_path):
    torch.set_num_threads(1)
    out = radar_training.run(steps=1, steps50=0, n_val=2, variants=("radar",), weights_dir=tmp_path, log=lambda s: None)
    assert [r["variant"] for r in out["rows"]] == ["radar"] and out["rows"][0]["steps"] == 1
    assert out["rows"][0]["val_gap_greedy"] >= -0.01  # the validation references are LKH-3 tours
    model = load_radar(tmp_path / "radar_atsp20_radar.pt")
    assert model.cfg.use_svd and model.cfg.use_sinkhorn


def test_unknown_variant_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown variant"):
        radar_training.run(variants=("nope",), weights_dir=tmp_path)


def test_matnet_variant_trains_and_saves_a_two_stream_model(tmp_path):
    from hifo.problems.routing import MatNetModel

    torch.set_num_threads(1)
    out = radar_training.run(steps=1, steps50=5, n_val=2, variants=("matnet",), weights_dir=tmp_path,
                             log=lambda s: None)
    # steps50 applies to "radar" only: a MatNet-only run trains no n = 50 model
    assert [r["variant"] for r in out["rows"]] == ["matnet"] and not (tmp_path / "radar_atsp50_radar.pt").exists()
    model = load_radar(tmp_path / "radar_atsp20_matnet.pt")
    assert isinstance(model, MatNetModel) and model.cfg == radar_training.VARIANTS["matnet"]
