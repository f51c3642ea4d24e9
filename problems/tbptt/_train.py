"""Truncated BPTT with a burn-in phase for a recurrent simulation model, an LSTM or a GRU (``cell``; the
evaluator ``tbptt_burnin`` uses an LSTM since issue 29), in torch, deterministic given the seed.

Every gradient step draws ``batch`` windows of ``window`` consecutive samples from the training
record; the network starts each window from a zero state, runs over all of it, and the loss counts only
the last ``window - m`` steps: the first ``m`` (the burn-in) let the state forget the wrong zero
initialisation. ``m = 0`` is truncation without burn-in; :func:`train_full` is full BPTT over the
whole record (one sequence per step). Every method takes the same number of Adam steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

WASHOUT = 50   # test error skips the first 50 steps of the free-run simulation (same for every method)


class GRUModel(torch.nn.Module):
    """A one-layer recurrent simulation model with a linear read-out: ``cell`` "gru" or "lstm" (the
    official code of the paper, ``jdschille/rnn-training``, uses an LSTM)."""

    def __init__(self, hidden: int = 16, cell: str = "gru"):
        super().__init__()
        if cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be 'gru' or 'lstm', got {cell!r}")
        self.gru = (torch.nn.GRU if cell == "gru" else torch.nn.LSTM)(1, hidden, batch_first=True)
        self.out = torch.nn.Linear(hidden, 1)

    def forward(self, u: torch.Tensor, state: object = None, return_state: bool = False) -> object:
        """(B, T) -> (B, T); with ``return_state`` also the final state (for carried-state training)."""
        h, last = self.gru(u.unsqueeze(-1), state)
        y = self.out(h).squeeze(-1)
        return (y, last) if return_state else y


@dataclass
class TBPTTRun:
    test_rmse: float
    train_rmse: float
    burn_ins: list[int]
    epoch_losses: list[float] = field(default_factory=list)


def _rmse(model: GRUModel, u: np.ndarray, y: np.ndarray) -> float:
    with torch.no_grad():
        pred = model(torch.from_numpy(u)[None])[0].numpy()
    return float(np.sqrt(np.mean((pred[WASHOUT:] - y[WASHOUT:]) ** 2)))


def train_tbptt(data: tuple[np.ndarray, ...], *, window: int, burn_in: Callable[[int, list[float]], int] | None = None,
                burn_ins: list[int] | None = None, epochs: int = 20, steps: int = 10, batch: int = 32,
                lr: float = 1e-2, hidden: int = 16, seed: int = 0, cell: str = "gru") -> TBPTTRun:
    """Train on windows of length ``window``; the burn-in of epoch e is ``burn_in(e, losses)`` (losses:
    the mean training loss of each finished epoch) or ``burn_ins[e]`` (replay). Returns test and
    training RMSE of the free-run simulation from a zero state over the whole record."""
    if (burn_in is None) == (burn_ins is None):
        raise ValueError("give exactly one of burn_in and burn_ins")
    u_tr, y_tr, u_te, y_te = data
    torch.manual_seed(seed)
    model = GRUModel(hidden, cell)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed + 1)
    U, Y = torch.from_numpy(u_tr), torch.from_numpy(y_tr)
    used: list[int] = []
    losses: list[float] = []
    for epoch in range(epochs):
        m = burn_ins[epoch] if burn_ins is not None else burn_in(epoch, list(losses))  # type: ignore[misc]
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 0 <= int(m) < window:
            raise ValueError(f"epoch {epoch}: burn-in must be an int in [0, {window}), got {m!r}")
        m = int(m)
        used.append(m)
        total = 0.0
        for _ in range(steps):
            starts = rng.integers(0, len(u_tr) - window, batch)
            idx = torch.from_numpy(starts[:, None] + np.arange(window)[None])
            pred = model(U[idx])
            loss = torch.mean((pred[:, m:] - Y[idx][:, m:]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        losses.append(total / steps)
    return TBPTTRun(_rmse(model, u_te, y_te), _rmse(model, u_tr, y_tr), used, losses)


def train_stateful(data: tuple[np.ndarray, ...], *, window: int, epochs: int = 20, steps: int = 10,
                   batch: int = 32, lr: float = 1e-2, hidden: int = 16, seed: int = 0, cell: str = "gru") -> TBPTTRun:
    """Stateful (carried-state) truncated BPTT, the usual alternative to burn-in: the record is cut
    into ``batch`` contiguous streams (random offsets per seed); each step trains on the next
    ``window`` samples of every stream starting from the state the previous window ended in
    (detached: gradients stop at the window edge), and every step counts in the loss. A stream
    restarts from a zero state at a random offset when it runs out. Same Adam steps as
    :func:`train_tbptt`."""
    u_tr, y_tr, u_te, y_te = data
    torch.manual_seed(seed)
    model = GRUModel(hidden, cell)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed + 1)
    U, Y = torch.from_numpy(u_tr), torch.from_numpy(y_tr)
    pos = rng.integers(0, len(u_tr) - window, batch)
    state: Any = None  # an LSTM (h, c) tuple or a GRU tensor
    losses: list[float] = []
    for _ in range(epochs):
        total = 0.0
        for _ in range(steps):
            ended = pos + window > len(u_tr)
            if ended.any():  # restart exhausted streams from zero
                pos = np.where(ended, rng.integers(0, len(u_tr) - window, batch), pos)
                if state is not None:
                    keep = torch.from_numpy(~ended).to(U.dtype)[None, :, None]
                    state = tuple(s * keep for s in state) if isinstance(state, tuple) else state * keep
            idx = torch.from_numpy(pos[:, None] + np.arange(window)[None])
            pred, state = model(U[idx], state, return_state=True)
            state = tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()
            loss = torch.mean((pred - Y[idx]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
            pos = pos + window
        losses.append(total / steps)
    return TBPTTRun(_rmse(model, u_te, y_te), _rmse(model, u_tr, y_tr), [], losses)


def train_full(data: tuple[np.ndarray, ...], *, epochs: int = 20, steps: int = 10, lr: float = 1e-2,
               hidden: int = 16, seed: int = 0) -> TBPTTRun:
    """Full BPTT: every step backpropagates through the whole training record from a zero state
    (loss after the same washout as the test error)."""
    u_tr, y_tr, u_te, y_te = data
    torch.manual_seed(seed)
    model = GRUModel(hidden)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    U, Y = torch.from_numpy(u_tr)[None], torch.from_numpy(y_tr)[None]
    losses = []
    for _ in range(epochs):
        total = 0.0
        for _ in range(steps):
            loss = torch.mean((model(U)[:, WASHOUT:] - Y[:, WASHOUT:]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        losses.append(total / steps)
    return TBPTTRun(_rmse(model, u_te, y_te), _rmse(model, u_tr, y_tr), [], losses)
