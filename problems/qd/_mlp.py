"""A small numpy MLP with Adam: the network behind DMS's discount model.

Why numpy rather than torch: the discount model is tiny (``k -> 128 -> 128 -> 1``) and is
trained on a few hundred points per iteration in minibatches of 32, so per-call overhead, not
arithmetic, dominates. Plain numpy with all parameters in one flat buffer (so Adam is a handful
of vector operations) is several times faster than torch here, needs no torch import in the
sandboxed child (no multi-GB address-space limit, no start-up cost), and is deterministic.

It reproduces what the reference implementation does with torch: ``nn.Linear`` layers with
torch's default initialisation (weights and biases ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``),
ReLU between layers and none after the last, MSE loss (mean over the minibatch), and
``torch.optim.Adam`` with bias correction. Computation is in float32 like torch's default.
"""

from __future__ import annotations

import numpy as np


class MLP:
    """Fully connected network; ``layer_sizes = (in, hidden..., out)``."""

    def __init__(self, layer_sizes, seed: int | np.random.SeedSequence | None = None,
                 dtype=np.float32) -> None:
        self.layer_sizes = tuple(int(s) for s in layer_sizes)
        if len(self.layer_sizes) < 2:
            raise ValueError("need at least an input and an output size")
        self.dtype = np.dtype(dtype)
        shapes = []
        for fan_in, fan_out in zip(self.layer_sizes[:-1], self.layer_sizes[1:]):
            shapes += [(fan_in, fan_out), (fan_out,)]
        sizes = [int(np.prod(s)) for s in shapes]
        self.flat = np.zeros(sum(sizes), dtype=self.dtype)  # every parameter is a view into it
        offsets = np.cumsum([0] + sizes)
        self.params = [self.flat[a:b].reshape(s) for a, b, s in zip(offsets[:-1], offsets[1:], shapes)]
        rng = np.random.default_rng(seed)
        for i in range(0, len(self.params), 2):
            bound = 1.0 / np.sqrt(shapes[i][0])
            self.params[i][...] = rng.uniform(-bound, bound, size=shapes[i])
            self.params[i + 1][...] = rng.uniform(-bound, bound, size=shapes[i + 1])

    @property
    def num_params(self) -> int:
        return self.flat.size

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Outputs for a batch ``(n, in)``; shape ``(n,)`` when the output size is 1."""
        h = np.asarray(x, dtype=self.dtype)
        last = len(self.params) - 2
        for i in range(0, len(self.params), 2):
            h = h @ self.params[i] + self.params[i + 1]
            if i != last:
                np.maximum(h, 0, out=h)
        return h[:, 0] if h.shape[1] == 1 else h

    def mse_and_grad(self, x: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean squared error on the batch and its gradient as one flat vector."""
        acts = [np.asarray(x, dtype=self.dtype)]
        last = len(self.params) - 2
        for i in range(0, len(self.params), 2):
            h = acts[-1] @ self.params[i] + self.params[i + 1]
            acts.append(np.maximum(h, 0) if i != last else h)
        err = acts[-1].reshape(len(acts[0]), -1) - np.asarray(target, dtype=self.dtype).reshape(len(acts[0]), -1)
        loss = float(np.mean(err * err))
        grad = np.empty_like(self.flat)
        gparams = []
        offset = 0
        for p in self.params:
            gparams.append(grad[offset:offset + p.size].reshape(p.shape))
            offset += p.size
        delta = (2.0 / err.size) * err
        for i in range(len(self.params) - 2, -1, -2):
            gparams[i][...] = acts[i // 2].T @ delta
            gparams[i + 1][...] = delta.sum(axis=0)
            if i:
                delta = (delta @ self.params[i].T) * (acts[i // 2] > 0)
        return loss, grad


class Adam:
    """``torch.optim.Adam`` (no weight decay, no amsgrad) over an :class:`MLP`'s flat buffer."""

    def __init__(self, model: MLP, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8) -> None:
        self.model = model
        self.lr, (self.beta1, self.beta2), self.eps = float(lr), betas, float(eps)
        self.m = np.zeros_like(model.flat)
        self.v = np.zeros_like(model.flat)
        self.t = 0

    def step(self, grad: np.ndarray) -> None:
        self.t += 1
        self.m *= self.beta1
        self.m += (1 - self.beta1) * grad
        self.v *= self.beta2
        self.v += (1 - self.beta2) * grad * grad
        step_size = self.lr / (1 - self.beta1**self.t)
        denom = np.sqrt(self.v) / np.sqrt(1 - self.beta2**self.t) + self.eps
        self.model.flat -= (step_size * self.m / denom).astype(self.model.flat.dtype)


def fit_mse(model: MLP, optimizer: Adam, x: np.ndarray, target: np.ndarray, *, epochs: int,
            cutoff_loss: float, batch_size: int, rng: np.random.Generator) -> list[float]:
    """Minibatch training as in the reference ``training_loop``.

    Each epoch shuffles the data, takes one Adam step per minibatch and records the dataset
    loss as the size-weighted mean of the minibatch losses; training stops after ``epochs``
    epochs or as soon as an epoch's loss is at most ``cutoff_loss`` (early stopping on the fit
    error). Returns the per-epoch losses.
    """
    x = np.asarray(x, dtype=model.dtype)
    target = np.asarray(target, dtype=model.dtype)
    n = len(x)
    losses: list[float] = []
    if n == 0:
        return losses
    for _ in range(int(epochs)):
        perm = rng.permutation(n)
        total = 0.0
        for s in range(0, n, batch_size):
            b = perm[s:s + batch_size]
            loss, grad = model.mse_and_grad(x[b], target[b])
            optimizer.step(grad)
            total += loss * len(b)
        losses.append(total / n)
        if losses[-1] <= cutoff_loss:
            break
    return losses
