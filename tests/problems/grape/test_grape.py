"""hifo.problems.grape: the forward-gradient / rank-1 Jacobian estimators and the three training methods."""

from __future__ import annotations

import pytest
import torch

from hifo.problems.grape import Net, cosine, digits_split, fdfa_jacobians, forward_gradient, rank1_jacobian, train


def test_forward_gradient_is_unbiased_with_positive_expected_cosine():
    gen = torch.Generator().manual_seed(0)
    A = torch.randn(20, 20, generator=gen)
    f = lambda w: torch.tanh(A @ w).sum() + (w ** 3).sum()  # noqa: E731
    w = torch.randn(20, generator=gen)
    true = torch.func.grad(f)(w)
    samples = torch.stack([forward_gradient(f, w, gen) for _ in range(4000)])
    cos_each = torch.nn.functional.cosine_similarity(samples, true.expand_as(samples))
    assert float(cos_each.mean()) > 0.05  # E[cos] = E|g.v| / (|g| |v|) > 0 for every gradient
    assert (cos_each >= 0).all()  # (g.v) v . g = (g.v)^2 >= 0: never points uphill
    mean = samples.mean(0)
    assert cosine(mean, true) > 0.95  # unbiased: the average converges to the gradient itself
    assert float((mean - true).norm() / true.norm()) < 0.25


def test_rank1_jacobian_estimate_is_unbiased():
    gen = torch.Generator().manual_seed(1)
    net = Net("mlp", 0)
    x = digits_split()[0][:16]
    with torch.no_grad():
        h = net.hidden(x)[0]
    fn = lambda z: net.rest(0, z)  # noqa: E731
    exact = torch.stack([torch.func.jacrev(fn)(h[i: i + 1])[0, :, 0, :] for i in range(16)]).mean(0)
    est = torch.stack([rank1_jacobian(fn, h, gen).detach() for _ in range(600)]).mean(0)
    assert cosine(est, exact) > 0.95
    one = rank1_jacobian(fn, h, gen).detach()
    assert 0.0 < cosine(one, exact) < 0.95  # one sample is noisy but aligned


def test_fdfa_estimates_every_layers_jacobian_without_bias_from_one_pass():
    """FDFA (Bacho & Chu): perturbing every layer at once in one forward-mode pass still gives each layer an
    unbiased estimate of its own Jacobian to the output (the other layers' noise averages out; it makes one
    draw noisier, the more so the deeper the net and the smaller the layer's Jacobian)."""
    gen = torch.Generator().manual_seed(2)
    x = digits_split()[0][:16]
    for model, layers in (("mlp", (0, 1)), ("mlp8", (6,))):
        net = Net(model, 0)
        with torch.no_grad():
            hs = net.hidden(x)
        draws = [fdfa_jacobians(net, x, gen) for _ in range(800)]
        for l in layers:
            fn = lambda z, l=l: net.rest(l, z)  # noqa: E731
            exact = torch.stack([torch.func.jacrev(fn)(hs[l][i: i + 1])[0, :, 0, :] for i in range(16)]).mean(0).detach()
            est = torch.stack([d[l] for d in draws]).mean(0)
            assert cosine(est, exact) > 0.95, (model, l)
            assert 0.0 < cosine(draws[0][l], exact) < 0.6  # one draw is noisy


def test_fdfa_feedback_regresses_onto_the_jacobian():
    run, _ = train("fdfa", "mlp", steps=60, log_every=59)
    assert len(run.align) == 60 and run.align[0] == [0.0, 0.0]  # B_l starts at zero (official code)
    assert min(run.align[-1]) > 0.2 and run.curve[-1]["hidden_grad_cos"] > 0.3
    assert run.test_acc > 0.7


def test_grape_aligns_feedback_and_beats_dfa_on_gradient_cosine():
    torch.set_num_threads(1)
    dfa, _ = train("dfa", "mlp", steps=150, log_every=149)
    grape, _ = train("grape", "mlp", steps=150, log_every=149, anchor_rule=lambda s, T, a, l, n: False)
    assert grape.anchors == [] and len(grape.align) == 150
    assert min(grape.align[-1]) > max(grape.align[0]) + 0.2  # the cosine loss turned B_l toward J_l
    assert grape.curve[-1]["hidden_grad_cos"] > dfa.curve[-1]["hidden_grad_cos"] + 0.1
    assert grape.test_acc > 0.85 and dfa.test_acc > 0.8


def test_anchor_replay_is_deterministic_and_budget_bounded():
    rule = lambda s, T, a, l, n: s % 10 == 3  # noqa: E731
    run, _ = train("grape", "mlp", steps=60, anchor_rule=rule, budget=4, log_every=0)
    assert run.anchors == [3, 13, 23, 33]
    replay, _ = train("grape", "mlp", steps=60, anchor_steps=run.anchors, log_every=0)
    assert replay.test_acc == run.test_acc and replay.losses == run.losses


@pytest.mark.parametrize("method", ["backprop", "dfa", "fdfa", "grape"])
def test_cnn_trains(method):
    run, _ = train(method, "cnn", steps=40, log_every=39, anchor_rule=lambda s, T, a, l, n: s == 0)
    assert run.test_acc > 0.3 and run.curve[-1]["grad_cos"] > 0.0


def test_concurrent_runs_in_threads_match_serial_runs():
    # the agent scores candidates in parallel threads of one process; forward-AD levels are global
    from concurrent.futures import ThreadPoolExecutor

    kw = dict(steps=15, log_every=0)
    serial = [train("grape", "mlp", seed=s, anchor_steps=[3], **kw)[0].losses for s in range(3)]
    with ThreadPoolExecutor(3) as ex:
        threaded = list(ex.map(lambda s: train("grape", "mlp", seed=s, anchor_steps=[3], **kw)[0].losses, range(3)))
    assert threaded == serial


# --- the tiny transformer (8 row tokens, 2 pre-LN blocks): the estimators GrAPE relies on hold on it too ---

def test_transformer_blocks_act_example_wise():
    # the rank-1 estimator needs each example's output to depend on that example only (attention mixes
    # the 8 tokens of one digit, never two digits)
    net = Net("transformer", 0)
    x = digits_split()[0][:6]
    with torch.no_grad():
        h = net.hidden(x)
        assert [tuple(t.shape) for t in h] == [(6, 8, 32), (6, 8, 32)]
        alone = torch.cat([net.rest(0, h[0][i: i + 1]) for i in range(6)])
        assert torch.allclose(net.rest(0, h[0]), alone, atol=1e-5)


def test_transformer_rank1_jacobian_estimate_is_unbiased():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(2)
    net = Net("transformer", 0)
    x = digits_split()[0][:16]
    with torch.no_grad():
        h = net.hidden(x)[0]  # output of block 0 (embedding + first transformer block)
    fn = lambda z: net.rest(0, z)  # noqa: E731  (second transformer block, mean pool, head)
    exact = torch.stack([torch.func.jacrev(fn)(h[i: i + 1])[0].reshape(10, -1) for i in range(16)]).mean(0)
    est = torch.stack([rank1_jacobian(fn, h, gen).detach() for _ in range(600)]).mean(0)
    assert cosine(est, exact) > 0.95
    one = rank1_jacobian(fn, h, gen).detach()
    assert 0.0 < cosine(one, exact) < 0.95


def test_transformer_forward_gradient_has_positive_expected_cosine_with_true_gradient():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(3)
    net = Net("transformer", 0)
    Xtr, ytr = digits_split()[:2]
    x, y = Xtr[:32], ytr[:32]
    name = "blocks.1.qkv.weight"  # the attention projection of the second block (3072 weights)
    params = {k: p.detach() for k, p in net.named_parameters()}

    def loss(w):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(net, {**params, name: w}, (x,)), y)

    w = params[name]
    true = torch.func.grad(loss)(w)
    samples = torch.stack([forward_gradient(loss, w, gen) for _ in range(1500)])
    flat = samples.reshape(len(samples), -1)
    cos_each = torch.nn.functional.cosine_similarity(flat, true.reshape(1, -1).expand_as(flat))
    assert (cos_each >= -1e-6).all()  # (g.v)^2 >= 0: a forward gradient never points uphill
    assert float(cos_each.mean()) > 0.005  # E[cos] ~ sqrt(2 / (pi d)) = 0.014 for d = 3072
    # unbiased along the true gradient: E[(g.v)^2] / |g|^2 = 1 (chi-squared(1) mean; 1500 samples: sd 0.037)
    proj = flat @ true.reshape(-1) / true.norm() ** 2
    assert abs(float(proj.mean()) - 1.0) < 0.15
    assert cosine(samples.mean(0), true) > 0.4  # ~ sqrt(N / (N + d)) = 0.57 for the average of N samples


def test_grape_trains_the_transformer_with_aligned_feedback_where_dfa_does_not():
    torch.set_num_threads(1)
    dfa, _ = train("dfa", "transformer", steps=120, log_every=40)
    grape, _ = train("grape", "transformer", steps=120, log_every=40, anchor_rule=lambda s, T, a, l, n: False)
    assert grape.anchors == [] and len(grape.align[0]) == 2  # one feedback matrix per transformer block
    assert min(grape.align[-1]) > max(grape.align[0]) + 0.1
    later = lambda r: [c["hidden_grad_cos"] for c in r.curve[1:]]  # noqa: E731
    assert min(later(grape)) > 0.7 and min(later(grape)) > max(later(dfa))
    assert grape.test_acc > 0.8
