"""GrAPE: backpropagation-free training with gradient-aligned feedback matrices (CPU scale).

The network is a chain of hidden *blocks* ``h_l = f_l(h_{l-1})`` and a linear *head* ``o = g(h_L)``.
Direct Feedback Alignment (DFA) trains block ``l`` with the surrogate ``dL/dh_l ~= e B_l``, where
``e = softmax(o) - y`` is the output error and ``B_l`` a fixed random feedback matrix; the update of
each block is local (``h_{l-1}`` is detached), so all blocks can update in parallel.

GrAPE keeps that structure but *learns* ``B_l`` so that it follows the true Jacobian
``J_l = do/dh_l``, without any backward pass through the network:

* a **rank-1 Jacobian estimate** with one forward-mode JVP: draw ``v ~ N(0, I)`` per example and push
  it through the rest of the network, ``u = J_l v`` (``torch.func.jvp``); ``E[u v^T] = J_l`` because
  ``E[v v^T] = I`` (:func:`rank1_jacobian`, unbiased; tested);
* a **local cosine loss** ``1 - cos(B_l, J_hat_l)`` whose gradient step (its own Adam, lr ``lr_B``)
  turns ``B_l`` toward the estimate; the cosine is scale-free, so it aligns directions only;
* **anchor steps**: on an occasional mini-batch the weights take a true backprop step instead
  (the *anchor schedule* decides when; :mod:`hifo.evaluators.grape_anchor` evolves it).

Baselines: ``backprop`` (exact gradients every step), ``dfa`` (fixed random ``B_l``) and ``fdfa`` (forward
DFA, Bacho & Chu: ``B_l`` starts at zero and regresses, by Adam on ``0.5 |B_l - J_hat_l|^2``, onto estimates
from one forward-mode pass with perturbations at every layer at once; :func:`fdfa_jacobians`). Models: an
MLP, a small CNN, a tiny transformer (each image's 8 rows as tokens; each transformer block is one GrAPE
layer with its own ``B_l`` over its whole ``8 x 32`` output) and deeper versions (an 8-layer MLP, the
transformer with 4 blocks) on scikit-learn's 8x8 digits (on disk; nothing is
downloaded). Metrics: test accuracy
against steps, the cosine of the method's weight update direction with the true gradient on the same
mini-batch, and the fraction of layer-parallel (non-anchor) steps.

Departures from the paper (no official code was found): the paper aligns feedback with forward
gradients in larger CNNs/transformers on CIFAR-scale data and uses its own learning-rate settings; here
everything is CPU-scale (digits, <= a few hundred steps), forward weights use Adam in every method, the
output layer always takes its exact local gradient (as in DFA), and the tiny transformer has two blocks of
width 32 (the embedding is trained inside the first block's layer, not as a layer of its own).
"""

from __future__ import annotations

import functools

import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._transformer import transformer_parts

METHODS = ("backprop", "dfa", "fdfa", "grape")
MODELS = ("mlp", "cnn", "transformer", "mlp8", "transformer4")
AnchorRule = Callable[[int, int, list, list, int], bool]
# torch's forward-AD levels are process-global, not per thread: two threads inside torch.func.jvp at once
# (the agent scores candidates in parallel threads) corrupt each other's level. Serialise the JVPs.
_JVP_LOCK = threading.Lock()
# Net's initialisation draws from torch's global RNG after torch.manual_seed: serialise it too
_INIT_LOCK = threading.Lock()


@lru_cache(maxsize=None)
def digits_split() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """scikit-learn's digits (1797 8x8 images, on disk), scaled to [0, 1]; fixed 1297/500 split."""
    from sklearn.datasets import load_digits

    d = load_digits()
    perm = np.random.default_rng(0).permutation(len(d.target))
    X = torch.tensor(d.data[perm] / 16.0, dtype=torch.float32)
    y = torch.tensor(d.target[perm], dtype=torch.long)
    return X[:1297], y[:1297], X[1297:], y[1297:]


class Net(nn.Module):
    """Hidden blocks + linear head. ``mlp``: 64-128-128-10 (tanh); ``cnn``: conv3x3(8) - conv3x3/2(16) - 10;
    ``transformer``: 8 row tokens, d=32, 2 heads, 2 pre-LN blocks, mean pool - 10 (:mod:`._transformer`);
    the deeper ones, where feedback alignment drifts: ``mlp8``: 64-(64 x 7)-10 (tanh, 8 linear layers) and
    ``transformer4``: the transformer with 4 blocks."""

    def __init__(self, kind: str, seed: int):
        super().__init__()
        with _INIT_LOCK:
            torch.manual_seed(seed)
            self._build(kind)

    def _build(self, kind: str) -> None:
        self.head: nn.Module
        if kind == "mlp":
            self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(64, 128), nn.Tanh()),
                                         nn.Sequential(nn.Linear(128, 128), nn.Tanh())])
            self.head = nn.Linear(128, 10)
        elif kind == "cnn":
            self.blocks = nn.ModuleList([
                nn.Sequential(nn.Unflatten(1, (1, 8, 8)), nn.Conv2d(1, 8, 3, padding=1), nn.Tanh()),
                nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.Tanh(), nn.Flatten())])
            self.head = nn.Linear(256, 10)
        elif kind == "mlp8":
            self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(64, 64), nn.Tanh()) for _ in range(7)])
            self.head = nn.Linear(64, 10)
        elif kind == "transformer":
            self.blocks, self.head = transformer_parts()
        elif kind == "transformer4":
            self.blocks, self.head = transformer_parts(depth=4)
        else:
            raise ValueError(f"unknown model {kind!r}; known: {', '.join(MODELS)}")
        self.kind = kind

    def hidden(self, x: torch.Tensor) -> list[torch.Tensor]:
        hs = []
        for block in self.blocks:
            x = block(x)
            hs.append(x)
        return hs

    def rest(self, l: int, h: torch.Tensor) -> torch.Tensor:
        """The network above hidden block ``l``: ``h_l -> o``."""
        for block in self.blocks[l + 1:]:
            h = block(h)
        return self.head(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.hidden(x)[-1])


def rank1_jacobian(fn: Callable[[torch.Tensor], torch.Tensor], h: torch.Tensor,
                   gen: torch.Generator) -> torch.Tensor:
    """Unbiased rank-1 estimate of the batch-mean Jacobian ``mean_b d fn(h)_b / d h_b`` (out x flat h).

    One forward-mode JVP with a Gaussian tangent ``v`` per example: ``u_b = J_b v_b`` and
    ``J_hat = mean_b u_b v_b^T``; ``E[J_hat] = mean_b J_b`` since ``E[v v^T] = I``. ``fn`` must act
    example-wise (no mixing across the batch), as every layer here does.
    """
    v = torch.randn(h.shape, generator=gen)
    with _JVP_LOCK:
        u = torch.func.jvp(fn, (h.detach(),), (v,))[1]
    return torch.einsum("bo,bi->oi", u.reshape(len(u), -1), v.reshape(len(v), -1)) / len(h)


def forward_gradient(f: Callable[[torch.Tensor], torch.Tensor], w: torch.Tensor,
                     gen: torch.Generator) -> torch.Tensor:
    """The forward gradient ``(grad f . v) v`` of a scalar ``f`` at ``w`` (Baydin et al. 2022): unbiased."""
    v = torch.randn(w.shape, generator=gen)
    with _JVP_LOCK:
        d = torch.func.jvp(f, (w,), (v,))[1]
    return d * v


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(F.cosine_similarity(a.reshape(1, -1), b.reshape(1, -1)).item())


@dataclass
class Run:
    """The record of one training run (JSON-able through :meth:`to_dict`)."""

    method: str
    model: str
    steps: int
    anchors: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    align: list[list[float]] = field(default_factory=list)  # per step: cos(B_l, J_hat_l) per hidden layer
    curve: list[dict] = field(default_factory=list)  # every log_every steps: step, test_acc, grad_cos
    test_acc: float = 0.0
    test_loss: float = 0.0

    def to_dict(self) -> dict:
        return {"method": self.method, "model": self.model, "steps": self.steps, "anchors": self.anchors,
                # backprop is never layer-parallel; DFA always; GrAPE except on anchor steps
                "layer_parallel_fraction": 0.0 if self.method == "backprop" else 1.0 - len(self.anchors) / max(self.steps, 1),
                "test_acc": self.test_acc, "test_loss": self.test_loss, "curve": self.curve,
                "final_loss": float(np.mean(self.losses[-20:])) if self.losses else None}


def evaluate(net: Net, X: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    with torch.no_grad():
        o = net(X)
        return float((o.argmax(1) == y).float().mean()), float(F.cross_entropy(o, y))


def _true_grads(net: Net, x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    net.zero_grad()
    F.cross_entropy(net(x), y).backward()
    grads = [p.grad for p in net.parameters()]
    if any(g is None for g in grads):
        raise RuntimeError("a parameter got no gradient")
    return [g.detach().clone() for g in grads if g is not None]


def train(method: str, model: str = "mlp", steps: int = 300, seed: int = 0, batch: int = 64,
          lr: float = 2e-3, lr_B: float = 1e-2, anchor_rule: AnchorRule | None = None,
          anchor_steps: Sequence[int] | None = None, budget: int | None = None,
          log_every: int = 50) -> tuple[Run, Net]:
    """Train ``model`` with ``method`` for ``steps`` mini-batches; deterministic given ``seed``.

    GrAPE's anchors come from ``anchor_rule(step, steps, align_history, loss_history, anchors_used)``
    (called before each step's update, with histories up to the previous step) or, for replay, from the
    fixed set ``anchor_steps``; at most ``budget`` anchors are taken. ``curve`` records the test
    accuracy and the cosine of the method's update with the true gradient every ``log_every`` steps.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    Xtr, ytr, Xte, yte = digits_split()
    net = Net(model, seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        dims = [h.shape[1:].numel() for h in net.hidden(Xtr[:2])]
    # DFA/GrAPE feedback matrices B_l (10 x |h_l|), N(0, 1/|h_l|) as in DFA; FDFA's start at zero (as in its
    # official code); drawn in every method so that all of them see the same mini-batches
    B = [torch.randn(10, d, generator=gen) / d ** 0.5 for d in dims]
    if method == "fdfa":
        B = [torch.zeros_like(b) for b in B]
    for b in B:
        b.requires_grad_(True)
    opt_B = torch.optim.Adam(B, lr=lr_B) if method in ("grape", "fdfa") else None
    fixed = set(int(s) for s in anchor_steps) if anchor_steps is not None else None
    run = Run(method, model, steps)
    params = list(net.parameters())
    for step in range(steps):
        idx = torch.randint(0, len(Xtr), (batch,), generator=gen)
        x, y = Xtr[idx], ytr[idx]
        anchor = False
        if method == "grape" and (budget is None or len(run.anchors) < budget):
            if fixed is not None:
                anchor = step in fixed
            elif anchor_rule is not None:
                anchor = bool(anchor_rule(step, steps, [list(a) for a in run.align[-20:]],
                                          list(run.losses[-50:]), len(run.anchors)))
        log = log_every and (step % log_every == 0 or step == steps - 1)
        true = _true_grads(net, x, y) if (log or method == "backprop" or anchor) else None
        if method == "backprop" or anchor:
            assert true is not None  # computed above for exactly these steps
            grads = true
            if anchor:
                run.anchors.append(step)
            with torch.no_grad():
                loss = float(F.cross_entropy(net(x), y))
        else:
            grads, loss = _local_grads(net, B, x, y)
        if method == "grape":
            assert opt_B is not None
            run.align.append(_align_feedback(net, B, opt_B, x, gen))
        elif method == "fdfa":
            assert opt_B is not None
            run.align.append(_fdfa_feedback(net, B, opt_B, x, gen))
        run.losses.append(loss)
        if log and true is not None:
            acc, _ = evaluate(net, Xte, yte)
            run.curve.append({"step": step, "test_acc": acc, "grad_cos": cosine(_flat(grads), _flat(true)),
                              "hidden_grad_cos": cosine(_flat(grads[:-2]), _flat(true[:-2]))})
        opt.zero_grad()
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()
    run.test_acc, run.test_loss = evaluate(net, Xte, yte)
    return run, net


def _flat(gs: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in gs])


def _local_grads(net: Net, B: list[torch.Tensor], x: torch.Tensor,
                 y: torch.Tensor) -> tuple[list[torch.Tensor], float]:
    """DFA-style layer-local gradients: block ``l`` gets ``dL/dh_l := e B_l`` with its input detached;
    the head gets its exact gradient. No backward pass crosses a block boundary."""
    grads: list[torch.Tensor] = []
    h_in = x
    outs = []
    for block in net.blocks:
        h = block(h_in.detach())
        outs.append(h)
        h_in = h
    o = net.head(h_in.detach())
    loss = F.cross_entropy(o, y)
    e = (F.softmax(o.detach(), 1) - F.one_hot(y, 10).float()) / len(y)  # dL/do
    for block, h, b in zip(net.blocks, outs, B):
        surrogate = (e @ b.detach()).reshape(h.shape)
        grads.extend(torch.autograd.grad(h, list(block.parameters()), grad_outputs=surrogate))
    grads.extend(torch.autograd.grad(loss, list(net.head.parameters())))
    return [g.detach() for g in grads], float(loss.detach())


def _align_feedback(net: Net, B: list[torch.Tensor], opt_B: torch.optim.Optimizer, x: torch.Tensor,
                    gen: torch.Generator) -> list[float]:
    """One step of the local cosine loss per layer against a rank-1 JVP estimate of ``J_l``; returns
    the cosines before the step (the alignment the slot sees)."""
    with torch.no_grad():
        hs = net.hidden(x)
    cosines: list[float] = []
    loss = torch.zeros(())
    for l, h in enumerate(hs):
        J_hat = rank1_jacobian(functools.partial(net.rest, l), h, gen).detach()
        c = F.cosine_similarity(B[l].reshape(1, -1), J_hat.reshape(1, -1))[0]
        cosines.append(float(c.detach()))
        loss = loss + (1.0 - c)
    opt_B.zero_grad()
    loss.backward()
    opt_B.step()
    return cosines


def fdfa_jacobians(net: Net, x: torch.Tensor, gen: torch.Generator) -> list[torch.Tensor]:
    """FDFA's estimates of every block's batch-mean Jacobian ``J_l = d o / d h_l`` from ONE forward-mode pass
    (Bacho & Chu; official code github.com/Florian-BACHO/FDFA, read, not copied): a Gaussian perturbation
    ``v_l`` is added at every block output at once, the output's directional derivative is
    ``u = sum_l J_l v_l`` and ``J_hat_l = mean_b u_b v_(l,b)^T``; unbiased for each ``l`` since the other
    layers' perturbations are independent of ``v_l`` and zero-mean (tested)."""
    with torch.no_grad():
        hs = net.hidden(x)
    vs = [torch.randn(h.shape, generator=gen) for h in hs]

    def perturbed(*eps: torch.Tensor) -> torch.Tensor:
        h = x
        for block, e in zip(net.blocks, eps):
            h = block(h) + e
        return net.head(h)

    with _JVP_LOCK:
        u = torch.func.jvp(perturbed, tuple(torch.zeros_like(h) for h in hs), tuple(vs))[1]
    return [(torch.einsum("bo,bi->oi", u, v.reshape(len(v), -1)) / len(v)).detach() for v in vs]


def _fdfa_feedback(net: Net, B: list[torch.Tensor], opt_B: torch.optim.Optimizer, x: torch.Tensor,
                   gen: torch.Generator) -> list[float]:
    """One FDFA feedback step: ``B_l`` takes an optimiser step on ``0.5 |B_l - J_hat_l|^2`` (gradient
    ``B_l - J_hat_l``, as in the official code's backward hook), so it tracks a running average of the
    estimates of :func:`fdfa_jacobians` (magnitude included, unlike GrAPE's cosine loss). Returns
    ``cos(B_l, J_hat_l)`` before the step."""
    cosines: list[float] = []
    opt_B.zero_grad()
    for b, J_hat in zip(B, fdfa_jacobians(net, x, gen)):
        cosines.append(float(F.cosine_similarity(b.detach().reshape(1, -1), J_hat.reshape(1, -1))[0]))
        b.grad = b.detach() - J_hat
    opt_B.step()
    return cosines
