"""``hifo data train-radar``'s training loop, one batch: it saves weights that load_radar reads back."""

from __future__ import annotations

import pytest

import torch  # a hard dependency
import elkai  # noqa: F401  (in the test extra)

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


def test_acvrp_training_saves_weights_that_solve_an_instance(tmp_path):
    import numpy as np

    from hifo.problems.routing._radar_cvrp import load_radar_cvrp, radar_cvrp_solve

    torch.set_num_threads(1)
    out = radar_training.train_acvrp(steps=2, weights_dir=tmp_path, log=lambda s: None)
    row = out["rows"][0]
    assert (row["n"], row["capacity"], row["steps"]) == (20, 30, 2) and row["curve"][0]["step"] == 1
    model = load_radar_cvrp(tmp_path / "radar_acvrp20.pt")
    rng = np.random.default_rng(0)
    dist = rng.uniform(0.1, 1.0, (21, 21))
    np.fill_diagonal(dist, 0.0)
    demands = np.r_[0, rng.integers(1, 10, 20)]
    routes = radar_cvrp_solve(model, dist, demands, 30)
    assert sorted(v for r in routes for v in r) == list(range(1, 21))
    assert all(demands[r].sum() <= 30 for r in routes)
    with pytest.raises(ValueError, match="steps"):
        radar_training.train_acvrp(steps=0, weights_dir=tmp_path)
