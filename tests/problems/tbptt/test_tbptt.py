"""hifo.problems.tbptt: the burn-in effect the paper reports, and exact replay of a schedule."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hifo.problems.tbptt import make_data, train_tbptt, wiener_hammerstein

KW = dict(window=32, epochs=30, steps=10, batch=32, hidden=12, lr=2e-2, seed=0)


@pytest.fixture(scope="module")
def data():
    torch.set_num_threads(1)
    return make_data(0, n_train=1000, n_test=500)


def test_system_has_long_memory():
    # an impulse is still visible 60 steps later: a window of 32 from a zero state starts far from the truth
    u = np.zeros(200)
    u[0] = 1.0
    y = wiener_hammerstein(u)
    assert abs(y[60:]).max() > 0.01 * abs(y).max()


def test_burn_in_lowers_the_test_error(data):
    # the paper's effect: the same steps on the same windows, only the loss's first m steps dropped
    none = train_tbptt(data, burn_in=lambda e, losses: 0, **KW)
    half = train_tbptt(data, burn_in=lambda e, losses: 16, **KW)
    assert half.test_rmse < 0.95 * none.test_rmse, (half.test_rmse, none.test_rmse)


def test_a_schedule_replays_exactly(data):
    kw = dict(KW, epochs=3)
    run = train_tbptt(data, burn_in=lambda e, losses: 5 * e + len(losses), **kw)
    assert run.burn_ins == [0, 6, 12]
    again = train_tbptt(data, burn_ins=run.burn_ins, **kw)
    assert again.test_rmse == run.test_rmse and again.epoch_losses == run.epoch_losses


@pytest.mark.parametrize("bad", [-1, 32, 3.0, True])
def test_burn_in_must_be_an_int_inside_the_window(data, bad):
    with pytest.raises(ValueError):
        train_tbptt(data, burn_ins=[bad], **dict(KW, epochs=1))


def test_lstm_cell_and_stateful_training_carry_state(data):
    """The LSTM cell runs (the official code's cell), and carried-state training does carry the state:
    the same model run on a record in two halves, the second from the first's final state, equals one run."""
    from hifo.problems.tbptt import GRUModel, train_stateful

    torch.manual_seed(0)
    model = GRUModel(8, "lstm")
    u = torch.from_numpy(data[0][:64])[None]
    whole = model(u)
    first, state = model(u[:, :32], return_state=True)
    second = model(u[:, 32:], state)
    assert torch.allclose(torch.cat([first, second], 1), whole, atol=1e-6)
    with pytest.raises(ValueError):
        GRUModel(8, "rnn")
    run = train_stateful(data, **dict(KW, epochs=2, cell="lstm"))
    assert np.isfinite(run.test_rmse) and len(run.epoch_losses) == 2
    assert train_stateful(data, **dict(KW, epochs=2, cell="lstm")).test_rmse == run.test_rmse  # deterministic
