"""MatNet's two-stream encoder (the RADAR ablation baseline): exact structural properties, rollouts, save/load."""

from __future__ import annotations

import math

import numpy as np
import pytest

import torch  # a hard dependency

from hifo.problems.routing import (  # noqa: E402
    MatNetConfig,
    MatNetModel,
    RadarSettings,
    construct_tour,
    load_radar,
    nearest_neighbour,
    radar_solve,
    random_tmat_instance,
    save_radar,
    tmat_batch,
    tour_length,
    train_radar,
    validate_tour,
)
from hifo.problems.routing._matnet import MixedScoreMHA, scale_costs  # noqa: E402
from hifo.problems.routing._radar import one_hot_features  # noqa: E402
from hifo.problems.routing._radar_pomo import WEIGHTS_DIR, rollout  # noqa: E402

SMALL = MatNetConfig(embedding_dim=16, head_num=2, encoder_layers=2, ff_hidden_dim=32, one_hot_dim=12)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def _model(cfg=SMALL, seed=0):
    torch.manual_seed(seed)
    return MatNetModel(cfg).eval()


def test_encoder_is_equivariant_to_a_consistent_permutation():
    # permuting the instance's rows and columns together (and the column IDs with them) permutes
    # both streams' embeddings the same way
    model = _model().double()  # float64: the property holds to rounding, checked tightly
    cost = scale_costs(tmat_batch(2, 9, torch.Generator().manual_seed(1))).double()
    ids = one_hot_features(2, 9, SMALL.one_hot_dim, torch.Generator().manual_seed(2)).double()
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        rows, cols = model.encode_with_ids(cost, ids)
        rows_p, cols_p = model.encode_with_ids(cost[:, perm][:, :, perm], ids[:, perm])
    assert torch.allclose(rows_p, rows[:, perm], atol=1e-10) and torch.allclose(cols_p, cols[:, perm], atol=1e-10)
    # and the two streams really differ (rows start at zero, columns at their IDs)
    assert not torch.allclose(rows, cols, atol=1e-2)


def test_row_stream_reads_the_matrix_and_column_stream_its_transpose():
    # an asymmetric matrix: transposing it changes the embeddings (the model sees direction)
    model = _model()
    cost = scale_costs(tmat_batch(1, 8, torch.Generator().manual_seed(4)))
    ids = one_hot_features(1, 8, SMALL.one_hot_dim, torch.Generator().manual_seed(5))
    with torch.no_grad():
        rows, cols = model.encode_with_ids(cost, ids)
        rows_t, cols_t = model.encode_with_ids(cost.transpose(1, 2), ids)
    assert not torch.allclose(rows, rows_t, atol=1e-3) and not torch.allclose(cols, cols_t, atol=1e-3)


def test_layer_swaps_streams_under_transposition_when_both_blocks_share_weights():
    # with the column block a copy of the row block, a layer is symmetric: swapping the two
    # streams and transposing D swaps its outputs. This holds only if the column stream reads
    # D^T and both blocks read the layer's inputs (parallel update, as the official EncoderLayer).
    layer = _model().double().layers[0]
    layer.col_block.load_state_dict(layer.row_block.state_dict())
    g = torch.Generator().manual_seed(11)
    a = torch.randn(2, 7, SMALL.embedding_dim, generator=g, dtype=torch.float64)
    b = torch.randn(2, 7, SMALL.embedding_dim, generator=g, dtype=torch.float64)
    cost = scale_costs(tmat_batch(2, 7, torch.Generator().manual_seed(12))).double()
    with torch.no_grad():
        ra, cb = layer(a, b, cost)
        rb, ca = layer(b, a, cost.transpose(1, 2))
    assert torch.allclose(ra, ca, atol=1e-12) and torch.allclose(cb, rb, atol=1e-12)


def _identity_mixer(attn: MixedScoreMHA) -> None:
    """Make the per-head MLP compute ``relu(s) - relu(-s) = s``, ignoring the cost input."""
    with torch.no_grad():
        for p in (attn.w1, attn.b1, attn.w2, attn.b2):
            p.zero_()
        attn.w1[:, 0, 0], attn.w1[:, 0, 1] = 1.0, -1.0
        attn.w2[:, 0, 0], attn.w2[:, 1, 0] = 1.0, -1.0


def test_mixed_score_attention_reduces_to_plain_attention_when_the_mlp_ignores_costs():
    attn = MixedScoreMHA(SMALL)
    _identity_mixer(attn)
    g = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(2, SMALL.head_num, 7, 8, generator=g) for _ in range(3))
    cost_a, cost_b = torch.rand(2, 7, 7, generator=g), torch.rand(2, 7, 7, generator=g)
    with torch.no_grad():
        out_a, out_b = attn(q, k, v, cost_a), attn(q, k, v, cost_b)
        plain = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(8), dim=-1) @ v
    assert torch.allclose(out_a, plain, atol=1e-6) and torch.equal(out_a, out_b)


def test_mixed_score_uses_the_cost_entry_of_each_pair():
    # with the score input switched off, head h's score is exactly a_h * D[i, j] + c_h (one ReLU unit)
    attn = MixedScoreMHA(SMALL)
    with torch.no_grad():
        for p in (attn.w1, attn.b1, attn.w2, attn.b2):
            p.zero_()
        attn.w1[:, 1, 0] = torch.tensor([2.0, 3.0])
        attn.w2[:, 0, 0] = torch.tensor([1.0, -0.5])
        attn.b2[:, 0] = torch.tensor([0.25, 1.0])
    g = torch.Generator().manual_seed(7)
    q, k = torch.randn(1, 2, 5, 8, generator=g), torch.randn(1, 2, 5, 8, generator=g)
    cost = torch.rand(1, 5, 5, generator=g)  # non-negative, so the ReLU is the identity
    with torch.no_grad():
        s = attn.mixed_scores(q, k, cost)
    assert torch.allclose(s[0, 0], 2.0 * cost[0] + 0.25, atol=1e-6)
    assert torch.allclose(s[0, 1], -1.5 * cost[0] + 1.0, atol=1e-6)


def test_cost_scaling_leaves_the_policy_unchanged():
    model = _model()
    cost = tmat_batch(1, 8, torch.Generator().manual_seed(8))
    with torch.no_grad():
        a = rollout(model, cost, torch.arange(8), greedy=True, generator=torch.Generator().manual_seed(0))
        b = rollout(model, cost * 1000, torch.arange(8), greedy=True, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a[0], b[0]) and torch.allclose(a[2], b[2], atol=1e-5)


def test_rollouts_are_tours_from_every_start():
    model = _model()
    cost = tmat_batch(2, 10, torch.Generator().manual_seed(9))
    with torch.no_grad():
        tours, lengths, logp = rollout(model, cost, torch.arange(10), greedy=True)
    assert tours.shape == (2, 10, 10) and (tours[:, :, 0] == torch.arange(10)).all()
    for b in range(2):
        for p in range(10):
            t = tours[b, p].numpy()
            validate_tour(t, 10)
            assert lengths[b, p].item() == pytest.approx(tour_length(t, cost[b].double().numpy()), rel=1e-5)
    assert (logp <= 0).all()


def test_too_many_nodes_for_the_ids_is_refused():
    with pytest.raises(ValueError, match="one_hot_dim"):
        rollout(_model(), tmat_batch(1, 13, torch.Generator().manual_seed(0)), torch.arange(13), greedy=True)


def test_training_lowers_tour_length_and_round_trips(tmp_path):
    val = tmat_batch(16, 8, torch.Generator().manual_seed(10))
    model, log = train_radar(SMALL, 8, seconds=60, max_steps=30, batch_size=8, lr=3e-3, seed=0,
                             val_cost=val, val_ref=torch.ones(16), eval_every=29)
    assert isinstance(model, MatNetModel) and log.steps == [1, 29] and log.val_gap[1] < log.val_gap[0]
    save_radar(model, tmp_path / "m.pt", {"note": "test"})
    again = load_radar(tmp_path / "m.pt")
    assert isinstance(again, MatNetModel) and again.cfg == SMALL
    d = val[0].double().numpy()
    (t1, l1), (t2, l2) = radar_solve(model, d), radar_solve(again, d)
    assert np.array_equal(t1, t2) and l1 == l2


@pytest.mark.skipif(not (WEIGHTS_DIR / "radar_atsp20_matnet.pt").exists(), reason="weights not trained")
def test_shipped_matnet_beats_nearest_neighbour_and_augmentation_helps():
    model = load_radar("radar_atsp20_matnet")
    assert isinstance(model, MatNetModel)
    nn_len, one, eight = [], [], []
    for seed in range(8):
        d = random_tmat_instance(20, 123_000 + seed).distance_matrix
        nn_len.append(tour_length(construct_tour(nearest_neighbour, d), d))
        tour, length = radar_solve(model, d)
        assert length == pytest.approx(tour_length(tour, d))
        one.append(length)
        eight.append(radar_solve(model, d, RadarSettings(augmentations=8))[1])
    assert np.mean(one) < np.mean(nn_len) and all(e <= o for e, o in zip(eight, one))
