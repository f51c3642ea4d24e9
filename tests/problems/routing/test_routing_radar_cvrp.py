"""RADAR on ACVRP: every POMO rollout is a valid ACVRP solution (each customer once, no
vehicle over capacity), its reported length is the routes' cost, and training lowers the cost."""

import numpy as np
import pytest

import torch  # a hard dependency

from hifo.problems.routing import random_acvrp_instance  # noqa: E402
from hifo.problems.routing._cvrp import routes_cost  # noqa: E402
from hifo.problems.routing._radar import RadarConfig  # noqa: E402
from hifo.problems.routing._radar_cvrp import (  # noqa: E402
    RadarCVRP,
    cvrp_rollout,
    radar_cvrp_solve,
    sequence_to_routes,
    train_radar_cvrp,
)

SMALL = RadarConfig(embedding_dim=16, head_num=2, encoder_layers=1, ff_hidden_dim=32, svd_rank=4)


@pytest.mark.parametrize("greedy", [True, False])
def test_rollouts_are_valid_solutions_with_matching_lengths(greedy):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = RadarCVRP(SMALL).eval()
    insts = [random_acvrp_instance(8, s, capacity=12) for s in range(3)]
    cost = torch.tensor(np.stack([i.distance_matrix for i in insts]), dtype=torch.float32)
    dem = torch.tensor(np.stack([i.demands for i in insts]), dtype=torch.float32)
    with torch.no_grad():
        seq, length, _ = cvrp_rollout(model, cost, dem, 12.0, greedy=greedy,
                                      generator=torch.Generator().manual_seed(1))
    for b, inst in enumerate(insts):
        for p in range(seq.shape[1]):
            routes = sequence_to_routes(seq[b, p])
            assert routes[0][0] == p + 1  # POMO: rollout p starts at customer p + 1
            assert routes_cost(routes, inst) == pytest.approx(float(length[b, p]), rel=1e-5)  # validates


def test_solve_is_deterministic_and_valid():
    torch.manual_seed(0)
    model = RadarCVRP(SMALL).eval()
    inst = random_acvrp_instance(10, 3, capacity=15)
    a = radar_cvrp_solve(model, inst.distance_matrix, inst.demands, inst.capacity, augmentations=2, samples=1)
    b = radar_cvrp_solve(model, inst.distance_matrix, inst.demands, inst.capacity, augmentations=2, samples=1)
    assert a == b
    routes_cost(a, inst)


def test_a_few_training_steps_lower_the_cost():
    torch.set_num_threads(1)
    _, curve = train_radar_cvrp(SMALL, 8, 12, seconds=float("inf"), max_steps=40, batch_size=16, lr=3e-3)
    first, last = curve[0]["best_len"], np.mean([c["best_len"] for c in curve[-2:]])
    assert last < first
