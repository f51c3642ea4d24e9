"""The learned DeCoST policy: feasible parallel decoding, stage 2 on top, committed weights."""

import numpy as np

import torch  # a hard dependency

from hifo.problems.optwvp import check_route, check_schedule, generate_instances, route_profit  # noqa: E402
from hifo.problems.optwvp._learned import WEIGHTS_PATH, DeCoSTPolicy, load_policy, rollout, to_batch  # noqa: E402


def test_parallel_decoding_gives_feasible_routes_and_feasible_predicted_service():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    insts = generate_instances(50, 4, 700)
    model = DeCoSTPolicy(dim=32, heads=4, layers=1, ff=64)
    with torch.no_grad():
        routes, service, nodes, logp = rollout(model, to_batch(insts), rollouts=4, greedy=False)
    assert torch.isfinite(logp).all() and (logp <= 0).all()
    for b, inst in enumerate(insts):
        for p, route in enumerate(routes[b]):
            assert len(route) > 0
            check_route(inst, route)
            d = service[b, p, :len(route)].double().numpy()
            # the service decoder's durations are themselves feasible (they drove the masks) ...
            predicted = check_schedule(inst, route, np.clip(d - 1e-6, 0, None))
            # ... and stage 2 can only improve on them (it is optimal for the route)
            assert route_profit(inst, route) >= predicted - 1e-6


def test_committed_weights_load_small_and_beat_an_untrained_policy():
    assert WEIGHTS_PATH.exists() and WEIGHTS_PATH.stat().st_size < 5 * 1024 * 1024
    torch.manual_seed(1)
    torch.set_num_threads(1)
    trained = load_policy()
    untrained = DeCoSTPolicy(**trained.config).eval()
    insts = generate_instances(50, 8, 710)
    batch = to_batch(insts)
    with torch.no_grad():
        good = rollout(trained, batch, 1, greedy=True)[0]
        bad = rollout(untrained, batch, 1, greedy=True)[0]
    gp = np.mean([route_profit(i, r[0]) for i, r in zip(insts, good)])
    bp = np.mean([route_profit(i, r[0]) for i, r in zip(insts, bad)])
    assert gp > 1.2 * bp
