"""hifo.problems.grape: the forward-gradient / rank-1 Jacobian estimators and the three training methods."""

from __future__ import annotations

import pytest
import torch

from hifo.problems.grape import Net, cosine, digits_split, forward_gradient, rank1_jacobian, train


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


@pytest.mark.parametrize("method", ["backprop", "dfa", "grape"])
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
