"""An optimizer whose matrix update rule is a plain (numpy) Python function.

This is the slot the ``optimizer_update`` evaluator evolves, usable on its own to try a rule:

    rule(grad, momentum, weight, state, step, total_steps) -> delta     # W <- W - delta

for every hidden matrix (conv filters flattened to ``out x fan_in``), with

* ``grad`` — this step's gradient, ``float32`` ``(m, n)``;
* ``momentum`` — the EMA ``M <- beta M + (1 - beta) grad`` (``beta = 0.95`` by default, the
  Muon reference's momentum), already including this step's gradient;
* ``weight`` — the current weight (a copy: the rule cannot change the model directly);
* ``state`` — a dict private to this matrix that persists across steps (empty at step 1);
* ``step`` (1-based) and ``total_steps`` — for schedules.

The rule's result is checked before use (:class:`InvalidUpdate`: not an array, wrong shape,
non-finite). The other parameters (embeddings, head, biases, gains) get AdamW with fixed settings,
(learning rate 1e-2, betas (0.9, 0.95)), so rules are compared on the matrices alone, as Muon
is meant to be used.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from ._muon import adamw_update, as_matrix

UpdateRule = Callable[[np.ndarray, np.ndarray, np.ndarray, dict, int, int], Any]


class InvalidUpdate(ValueError):
    """The rule returned something that is not a finite array of the weight's shape."""


def check_update(value: Any, shape: tuple[int, int], where: str) -> np.ndarray:
    """``value`` as a finite float32 array of ``shape``, or :class:`InvalidUpdate`."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidUpdate(f"{where}: the update is not a numeric array ({type(value).__name__}: {exc})") from None
    if arr.shape != tuple(shape):
        raise InvalidUpdate(f"{where}: the update has shape {arr.shape}, expected {tuple(shape)} (the gradient's)")
    if not np.all(np.isfinite(arr)):
        raise InvalidUpdate(f"{where}: the update contains NaN or infinity")
    return arr


class RuleOptimizer:
    """``rule`` for the named hidden matrices, AdamW for everything else.

    ``matrices`` and ``others`` map names to parameters (names appear in error messages). Call
    :meth:`step` after ``backward``. Deliberately not a ``torch.optim.Optimizer``: constructing
    one imports ``torch._dynamo``, which costs as much as importing torch itself, and this class
    runs in a fresh sandbox process for every candidate.
    """

    def __init__(self, rule: UpdateRule, matrices: dict[str, torch.nn.Parameter],
                 others: dict[str, torch.nn.Parameter], total_steps: int, *, beta: float = 0.95,
                 adamw_lr: float = 1e-2, adamw_betas: tuple[float, float] = (0.9, 0.95),
                 adamw_eps: float = 1e-10) -> None:
        self.rule, self.total_steps, self.beta = rule, int(total_steps), beta
        self.matrices, self.others = dict(matrices), dict(others)
        self.adamw = (adamw_lr, adamw_betas, adamw_eps)
        self.state: dict[str, dict[str, Any]] = {}
        self.steps_taken = 0

    @torch.no_grad()
    def step(self) -> None:
        self.steps_taken += 1
        t = self.steps_taken
        lr, betas, eps = self.adamw
        for name, p in self.others.items():
            if p.grad is None:
                continue
            state = self.state.setdefault(name, {})
            if not state:
                state.update(exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
            p.add_(adamw_update(p.grad, state["exp_avg"], state["exp_avg_sq"], t, betas, eps), alpha=-lr)
        for name, p in self.matrices.items():
            if p.grad is None:
                continue
            G = as_matrix(p.grad)
            state = self.state.setdefault(name, {})
            if not state:
                state.update(momentum=torch.zeros_like(G), rule_state={})
            state["momentum"].lerp_(G, 1 - self.beta)
            where = f"update() for weight {name!r} {tuple(G.shape)} at step {t}"
            delta = check_update(
                self.rule(G.numpy().copy(), state["momentum"].numpy().copy(),
                          as_matrix(p.detach()).numpy().copy(), state["rule_state"], t, self.total_steps),
                (G.shape[0], G.shape[1]), where)
            p.sub_(torch.from_numpy(delta).reshape(p.shape))
