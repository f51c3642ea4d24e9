"""hifo.problems.milp.fmip: the two probability paths, the joint loss, guided sampling, weights."""

from __future__ import annotations

import numpy as np
import pytest

import torch  # a hard dependency

from hifo.problems.milp import GENERATORS, check_solution, generate, solve_highs, solve_lp  # noqa: E402
from hifo.problems.milp import fmip  # noqa: E402
from hifo.problems.milp._fmip_model import (continuous_sample_xt, discrete_sample_xt,  # noqa: E402
                                       labels_to_state)

SMALL = {
    "setcover": {"n_rows": 30, "n_cols": 60, "density": 0.1},
    "cauctions": {"n_items": 12, "n_bids": 30},
    "indset": {"n_nodes": 30, "affinity": 3},
    "intcover": {"n_rows": 8, "n_cols": 16, "n_budget": 2, "density": 0.3},
    "gisp": {"n_nodes": 12, "edge_prob": 0.3},
    "fcmnf": {"n_nodes": 5, "n_arcs": 10, "n_commodities": 2},
}


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_discrete_path_marginal():
    # uniform-noise path: P(x_t = x_1) = t + (1 - t) / K
    gen = torch.Generator().manual_seed(0)
    x1 = torch.ones(200_000, dtype=torch.long)
    for t in (0.0, 0.3, 0.8):
        xt = discrete_sample_xt(x1, t, 2, gen)
        assert (xt == x1).float().mean().item() == pytest.approx(t + (1 - t) / 2, abs=0.01)


def test_continuous_linear_path():
    gen = torch.Generator().manual_seed(0)
    x1 = torch.full((200_000,), 0.7)
    xt = continuous_sample_xt(x1, 0.25, gen)
    assert xt.mean().item() == pytest.approx(0.25 * 0.7, abs=0.01)
    assert xt.std().item() == pytest.approx(0.75, abs=0.01)
    assert torch.equal(continuous_sample_xt(x1, 1.0, gen), x1)


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_sampler_values_in_domain(family):
    torch.manual_seed(0)
    inst = generate(family, 0, **SMALL[family])
    net = fmip.FMIPNet(hidden=16, layers=2)
    s = fmip.guided_sample(net, inst, n_steps=4, n_candidates=8, x_lp=solve_lp(inst).x, seed=1)
    assert s.values.shape == (inst.n_vars,)
    assert np.all(s.values >= inst.lb - 1e-9) and np.all(s.values <= inst.ub + 1e-9)
    ints = s.values[inst.is_int]
    assert np.array_equal(ints, np.round(ints))
    assert np.all((s.confidence >= 0) & (s.confidence <= 1 + 1e-6))
    np.testing.assert_allclose(s.final_probs.sum(1), 1.0, atol=1e-5)


def test_guidance_target_is_the_official_energy():
    inst = generate("setcover", 0, **SMALL["setcover"])
    g = fmip.build_graph(inst)
    x = torch.zeros(1, inst.n_vars)  # violates every covering row by 1: L2 norm sqrt(m)
    val = fmip.guidance_target(g, x, 0.5, 2.0).item()
    assert val == pytest.approx(2.0 * np.sqrt(inst.n_rows), rel=1e-5)
    x = torch.ones(1, inst.n_vars)  # feasible: only the raw objective remains
    val = fmip.guidance_target(g, x, 0.5, 2.0).item()
    assert val == pytest.approx(0.5 * inst.c.sum(), rel=1e-5)


def test_unbounded_continuous_not_clamped():
    from hifo.problems.milp._fmip_model import to_box
    inst = generate("intcover", 0, **SMALL["intcover"])
    g = fmip.build_graph(inst)
    out = to_box(g, torch.full((inst.n_vars,), 7.5))
    assert torch.all(out == 7.5)  # infinite upper bounds stay open (no clamp to lb + 1)
    fc = generate("fcmnf", 0, **SMALL["fcmnf"])
    g = fmip.build_graph(fc)
    assert torch.all(to_box(g, torch.full((fc.n_vars,), 7.5)) == 1.0)
    assert torch.all(to_box(g, torch.full((fc.n_vars,), -1.0)) == 0.0)


@pytest.mark.slow
def test_joint_training_reduces_loss_and_weights_round_trip(tmp_path):
    data = []
    for fam in ("setcover", "fcmnf"):
        inst = generate(fam, 5, **SMALL[fam])
        data.append((inst, solve_lp(inst).x, solve_highs(inst, time_limit=5).x))
    losses = []
    net = fmip.train_fmip(data, epochs=40, hidden=16, layers=2, seed=0,
                          log=lambda s: losses.append(float(s.split()[-1])))
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])
    path = tmp_path / "m.pt"
    fmip.save_model(net, path)
    back = fmip.load_model(path)
    g = fmip.build_graph(data[0][0], data[0][1])
    state = labels_to_state(g, data[0][2])
    with torch.no_grad():
        a, b = net.eval()(g, state, 0.5), back(g, state, 0.5)
    assert torch.allclose(a[0], b[0]) and torch.allclose(a[1], b[1])


def test_committed_weights_hand_off_feasible():
    assert fmip.WEIGHTS.exists(), "train with `hifo data train-fmip`"
    assert fmip.WEIGHTS.stat().st_size < 5 * 2**20
    net = fmip.load_model()
    inst = generate("fcmnf", 3, **SMALL["fcmnf"])
    sample, res = fmip.fmip_solve(net, inst, time_limit=2.0, n_steps=5, n_candidates=8)
    check_solution(inst, res.x)
    assert res.stage in ("dive", "full") and res.n_fixed == int(0.1 * inst.is_int.sum())
