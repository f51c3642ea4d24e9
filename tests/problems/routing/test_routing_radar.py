"""hifo.problems.routing RADAR: Sinkhorn attention, SVD embeddings, POMO decoding, training."""

from __future__ import annotations

import numpy as np
import pytest

import torch  # a hard dependency

from hifo.problems.routing import (  # noqa: E402
    RadarConfig,
    RadarModel,
    RadarSettings,
    construct_tour,
    load_radar,
    nearest_neighbour,
    radar_solve,
    random_tmat_instance,
    save_radar,
    sinkhorn,
    svd_features,
    tmat_batch,
    tour_length,
    train_radar,
    triangle_violation,
    validate_tour,
    zscore,
)
from hifo.problems.routing._radar_pomo import WEIGHTS_DIR, rollout  # noqa: E402

SMALL = RadarConfig(embedding_dim=16, head_num=2, encoder_layers=2, ff_hidden_dim=32, svd_rank=4)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def test_sinkhorn_is_doubly_stochastic():
    scores = torch.randn(3, 2, 12, 12, generator=torch.Generator().manual_seed(0))
    w = sinkhorn(scores, iters=50)
    assert (w > 0).all()
    assert torch.allclose(w.sum(-1), torch.ones(3, 2, 12), atol=1e-4)
    assert torch.allclose(w.sum(-2), torch.ones(3, 2, 12), atol=1e-5)
    # every round ends with the column step: columns are exact, rows converge with rounds
    few = sinkhorn(scores, iters=1)
    assert torch.allclose(few.sum(-2), torch.ones(3, 2, 12), atol=1e-5)
    assert (few.sum(-1) - 1).abs().max() > 1e-3
    # sharper scores need more rounds, but converge too (Sinkhorn-Knopp for positive matrices)
    sharp = sinkhorn(scores * 3, iters=200)
    assert torch.allclose(sharp.sum(-1), torch.ones(3, 2, 12), atol=1e-4)
    with pytest.raises(ValueError):
        sinkhorn(scores, iters=0)


def test_svd_embedding_reconstructs_the_matrix_at_full_rank():
    cost = tmat_batch(2, 9, torch.Generator().manual_seed(1)).double()
    cz = zscore(cost)
    assert torch.allclose(cz.mean(dim=(1, 2)), torch.zeros(2, dtype=cz.dtype), atol=1e-9)
    feats = svd_features(cz, rank=9)
    out_role, in_role = feats[..., :9], feats[..., 9:]
    assert torch.allclose(out_role @ in_role.transpose(1, 2), cz, atol=1e-9)
    flip = torch.tensor([[1.0, -1, 1, -1, 1, 1, -1, 1, 1]] * 2, dtype=cz.dtype)
    flipped = svd_features(cz, rank=9, flip=flip)
    assert not torch.allclose(flipped, feats)
    assert torch.allclose(flipped[..., :9] @ flipped[..., 9:].transpose(1, 2), cz, atol=1e-9)
    # truncated: the best rank-k approximation (Eckart-Young), error = tail singular values
    k4 = svd_features(cz, rank=4)
    err = torch.linalg.matrix_norm(cz - k4[..., :4] @ k4[..., 4:].transpose(1, 2))
    tail = torch.linalg.svdvals(cz)[:, 4:].square().sum(-1).sqrt()
    assert torch.allclose(err, tail, atol=1e-9)


def test_tmat_batch_matches_the_generator_properties():
    cost = tmat_batch(4, 15, torch.Generator().manual_seed(2))
    for m in cost.double().numpy():
        assert np.all(np.diag(m) == 0) and triangle_violation(m) <= 1e-6


@pytest.mark.parametrize("svd, sink", [(True, True), (True, False), (False, True)])
def test_rollouts_are_tours_from_every_start(svd, sink):
    torch.manual_seed(0)
    model = RadarModel(RadarConfig(**{**SMALL.to_dict(), "use_svd": svd, "use_sinkhorn": sink})).eval()
    cost = tmat_batch(2, 10, torch.Generator().manual_seed(3))
    with torch.no_grad():
        tours, lengths, logp = rollout(model, cost, torch.arange(10), greedy=True)
    assert tours.shape == (2, 10, 10) and (tours[:, :, 0] == torch.arange(10)).all()
    for b in range(2):
        for p in range(10):
            t = tours[b, p].numpy()
            validate_tour(t, 10)
            assert lengths[b, p].item() == pytest.approx(tour_length(t, cost[b].double().numpy()), rel=1e-5)
    assert (logp <= 0).all()


def test_svd_encoder_is_permutation_equivariant():
    torch.manual_seed(0)
    model = RadarModel(SMALL).eval()
    cost = tmat_batch(1, 8, torch.Generator().manual_seed(4))
    perm = torch.randperm(8, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        h, _ = model.encode(cost)
        hp, _ = model.encode(cost[:, perm][:, :, perm])
    assert torch.allclose(hp, h[:, perm], atol=1e-4)


def test_training_lowers_tour_length_and_round_trips(tmp_path):
    cfg = SMALL
    val = tmat_batch(16, 8, torch.Generator().manual_seed(6))
    ref = torch.ones(16)
    model, log = train_radar(cfg, 8, seconds=60, max_steps=30, batch_size=8, lr=3e-3, seed=0,
                             val_cost=val, val_ref=ref, eval_every=29)
    # REINFORCE with the POMO shared baseline shortens greedy tours (about 122 -> 90 here)
    assert log.steps == [1, 29] and log.val_gap[1] < 0.85 * log.val_gap[0]
    save_radar(model, tmp_path / "m.pt", {"note": "test"})
    again = load_radar(tmp_path / "m.pt")
    d = val[0].double().numpy()
    assert radar_solve(model, d)[1] == radar_solve(again, d)[1]


@pytest.mark.skipif(not (WEIGHTS_DIR / "radar_atsp20_radar.pt").exists(), reason="weights not trained")
def test_shipped_model_beats_nearest_neighbour_and_settings_apply():
    model = load_radar("radar_atsp20_radar")
    gaps_nn, gaps_radar = [], []
    for seed in range(8):
        d = random_tmat_instance(20, 123_000 + seed).distance_matrix
        nn = tour_length(construct_tour(nearest_neighbour, d), d)
        tour, length = radar_solve(model, d)
        assert length == pytest.approx(tour_length(tour, d))
        gaps_nn.append(nn)
        gaps_radar.append(length)
    assert np.mean(gaps_radar) < np.mean(gaps_nn)
    d = random_tmat_instance(20, 5).distance_matrix
    one = radar_solve(model, d, RadarSettings(start_nodes=(0,)))[1]
    more = radar_solve(model, d, RadarSettings(augmentations=2))[1]
    assert more <= radar_solve(model, d)[1] <= one
    sampled = radar_solve(model, d, RadarSettings(sampling=True, temperature=2.0), seed=1)
    again = radar_solve(model, d, RadarSettings(sampling=True, temperature=2.0), seed=1)
    assert np.array_equal(sampled[0], again[0]) and sampled[1] == again[1]
