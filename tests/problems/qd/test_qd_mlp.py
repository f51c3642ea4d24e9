"""The numpy discount-model MLP against torch's nn.Linear / MSELoss / Adam."""

import numpy as np
import pytest

from hifo.problems.qd import MLP, Adam, fit_mse

import torch  # a hard dependency


def _torch_copy(model: MLP):
    layers = []
    for i in range(0, len(model.params), 2):
        lin = torch.nn.Linear(*model.params[i].shape)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(model.params[i].T.copy()))
            lin.bias.copy_(torch.from_numpy(model.params[i + 1].copy()))
        layers.append(lin)
        if i != len(model.params) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def test_forward_gradient_and_adam_match_torch():
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    model = MLP((10, 128, 128, 1), seed=0)
    net = _torch_copy(model)
    opt_np, opt_t = Adam(model, lr=1e-3), torch.optim.Adam(net.parameters(), lr=1e-3)
    for step in range(5):
        x = rng.uniform(-1, 1, size=(32, 10)).astype(np.float32)
        t = rng.random(32).astype(np.float32)
        loss, grad = model.mse_and_grad(x, t)
        xt = torch.from_numpy(x)
        out = net(xt).squeeze(1)
        np.testing.assert_allclose(model(x), out.detach().numpy(), rtol=1e-5, atol=1e-6)
        loss_t = torch.nn.functional.mse_loss(out, torch.from_numpy(t))
        opt_t.zero_grad()
        loss_t.backward()
        assert loss == pytest.approx(loss_t.item(), rel=1e-5)
        grad_t = np.concatenate([np.concatenate([l.weight.grad.numpy().T.ravel(), l.bias.grad.numpy()])
                                 for l in net if isinstance(l, torch.nn.Linear)])
        np.testing.assert_allclose(grad, grad_t, rtol=1e-4, atol=1e-6)
        opt_np.step(grad)
        opt_t.step()
        params_t = np.concatenate([np.concatenate([l.weight.detach().numpy().T.ravel(), l.bias.detach().numpy()])
                                   for l in net if isinstance(l, torch.nn.Linear)])
        np.testing.assert_allclose(model.flat, params_t, rtol=1e-4, atol=1e-6)


def test_default_initialisation_bounds():
    model = MLP((10, 128, 1), seed=1)
    w0, b0, w1, b1 = model.params
    assert np.abs(w0).max() <= 1 / np.sqrt(10) and np.abs(w1).max() <= 1 / np.sqrt(128)
    assert np.abs(w0).max() > 0.9 / np.sqrt(10)  # uniform over the whole range, like torch
    assert model.num_params == 10 * 128 + 128 + 128 + 1


def test_fit_early_stopping_and_epoch_cap():
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, size=(200, 3))
    t = np.sin(2 * x[:, 0]) * 0.5
    model = MLP((3, 64, 64, 1), seed=0)
    losses = fit_mse(model, Adam(model), x, t, epochs=400, cutoff_loss=1e-3, batch_size=32, rng=rng)
    assert losses[-1] <= 1e-3 < losses[0] and len(losses) < 400  # stopped on the fit error
    capped = fit_mse(model, Adam(model), x, t, epochs=3, cutoff_loss=0.0, batch_size=32, rng=rng)
    assert len(capped) == 3
