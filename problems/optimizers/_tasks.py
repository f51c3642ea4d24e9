"""Small CPU training tasks used to compare optimizers and to score evolved update rules.

=============  ====================================================  ======================
task           model                                                 data
=============  ====================================================  ======================
digits_mlp     64 -> 64 -> 64 -> 10 MLP, ReLU                        digits (:mod:`._data`)
digits_cnn     conv3x3(1->8), conv3x3(8->16), maxpool2, linear->10   digits as 1x8x8 images
markov_lm      1-block pre-LN causal transformer, d=32, 2 heads,     order-2 Markov corpus,
               context 32, learned positions, untied head            16 symbols
=============  ====================================================  ======================

Every model splits its parameters into *hidden matrices* (what Muon, COSMOS or an evolved rule
updates: every weight with ``ndim >= 2`` except token/position embeddings and the output head,
as Muon prescribes) and *the rest* (embeddings, head, biases, LayerNorm gains: AdamW).
Initialisation is seeded; :func:`train` draws minibatches from a seeded numpy generator, so a
run is deterministic given (task, seed, optimizer) on one thread.
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._data import Split, digits, markov_corpus
from .._repro import torch_portable_kernels

TASKS = ("digits_mlp", "digits_cnn", "markov_lm")
LM_CONTEXT = 32


class MLP(nn.Module):
    def __init__(self, sizes: tuple[int, ...] = (64, 64, 64, 10)) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)

    def head_names(self) -> set[str]:
        return {f"layers.{len(self.layers) - 1}.weight"}


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.head = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(-1, 1, 8, 8)
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))

    def head_names(self) -> set[str]:
        return {"head.weight"}


class TinyTransformer(nn.Module):
    """One pre-LayerNorm block: causal self-attention and a 4x GELU MLP, learned positions."""

    def __init__(self, vocab: int = 16, dim: int = 32, heads: int = 2, context: int = LM_CONTEXT) -> None:
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.ln1, self.ln2, self.ln_f = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T))
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=-1)
        shape = (B, T, self.heads, -1)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(B, T, -1))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return self.head(self.ln_f(x))

    def head_names(self) -> set[str]:
        return {"tok.weight", "pos.weight", "head.weight"}


def build_model(task: str, seed: int) -> nn.Module:
    """A freshly initialised model for ``task`` (global torch RNG left untouched)."""
    makers: dict[str, Callable[[], nn.Module]] = {
        "digits_mlp": MLP, "digits_cnn": SmallCNN, "markov_lm": TinyTransformer}
    if task not in makers:
        raise KeyError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return makers[task]()


def split_params(model: nn.Module) -> tuple[dict[str, nn.Parameter], dict[str, nn.Parameter]]:
    """``(hidden_matrices, rest)`` by name (module docstring)."""
    heads = model.head_names()  # type: ignore[operator]
    hidden: dict[str, nn.Parameter] = {}
    rest: dict[str, nn.Parameter] = {}
    for name, p in model.named_parameters():
        (hidden if p.ndim >= 2 and name not in heads else rest)[name] = p
    return hidden, rest


def load_split(task: str, which: str, held_out_seed: int | None = None) -> Split:
    """Training (``"train"``) or validation (``"val"``) data of a task.

    ``held_out_seed`` (None: the public defaults) decides what is held out: the permutation of the
    digits (which images are validation) or the seed of the corpus's validation stream. Whoever
    holds it out of the sandbox holds a validation split the candidate cannot re-derive."""
    if task not in TASKS:
        raise KeyError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    if held_out_seed is None:
        return markov_corpus(which) if task == "markov_lm" else digits(which)
    return markov_corpus(which, held_out_seed) if task == "markov_lm" else digits(which, held_out_seed)


def sample_batch(task: str, split: Split, rng: np.random.Generator,
                 batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    if task == "markov_lm":
        starts = rng.integers(0, len(split.inputs) - LM_CONTEXT - 1, size=batch_size)
        window = split.inputs[starts[:, None] + np.arange(LM_CONTEXT + 1)]
        return torch.from_numpy(window[:, :-1]), torch.from_numpy(window[:, 1:])
    rows = rng.choice(len(split), size=batch_size, replace=False)
    return torch.from_numpy(split.inputs[rows]), torch.from_numpy(split.targets[rows])


def loss_of(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (per token for the language model)."""
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


@torch.no_grad()
def evaluate(task: str, model: nn.Module, split: Split) -> dict[str, float]:
    """Mean loss and accuracy on a whole split (the corpus in non-overlapping windows)."""
    if task == "markov_lm":
        n = (len(split.inputs) - 1) // LM_CONTEXT
        idx = np.arange(n)[:, None] * LM_CONTEXT + np.arange(LM_CONTEXT + 1)
        window = torch.from_numpy(split.inputs[idx])
        x, y = window[:, :-1], window[:, 1:]
    else:
        x, y = torch.from_numpy(split.inputs), torch.from_numpy(split.targets)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    acc = (logits.argmax(-1) == y).float().mean()
    return {"loss": float(loss), "accuracy": float(acc)}


class BudgetExceeded(TimeoutError):
    """Training ran past its wall-clock budget."""


def train(task: str, model: nn.Module, step_fn: Callable[[], None] | Any,
          split: Split, steps: int, batch_size: int, seed: int,
          time_budget_s: float | None = None,
          on_step: Callable[[int, float], bool | None] | None = None) -> list[float]:
    """Run ``steps`` minibatch steps; returns the training loss of each step.

    ``step_fn`` is an optimizer (anything with ``.step()``) or a callable run after ``backward``.
    ``on_step(step, loss)`` may return True to stop early (used for steps-to-target).
    Raises :class:`BudgetExceeded` past ``time_budget_s`` and ``FloatingPointError`` when the
    loss stops being finite.
    """
    rng = np.random.default_rng(seed)
    step = step_fn.step if hasattr(step_fn, "step") else step_fn
    params = [p for p in model.parameters() if p.requires_grad]
    start = time.perf_counter()
    losses: list[float] = []
    for t in range(1, steps + 1):
        x, y = sample_batch(task, split, rng, batch_size)
        for p in params:
            p.grad = None
        loss = loss_of(model, x, y)
        value = loss.item()
        if not math.isfinite(value):
            raise FloatingPointError(f"training loss became {value} at step {t}")
        loss.backward()
        step()
        losses.append(value)
        if time_budget_s is not None and time.perf_counter() - start > time_budget_s:
            raise BudgetExceeded(f"training exceeded its {time_budget_s:.1f} s budget after {t} of {steps} steps")
        if on_step is not None and on_step(t, value):
            break
    return losses


def state_to_lists(model: nn.Module) -> dict[str, list[float]]:
    """Flat float lists of every parameter (what an evaluator's child sends back)."""
    return {name: p.detach().reshape(-1).tolist() for name, p in model.named_parameters()}


def load_lists(model: nn.Module, values: Any) -> None:
    """Inverse of :func:`state_to_lists`; ``values`` (untrusted: anything) must be a mapping of names
    to lists; raises ``ValueError`` on another type, a missing/extra name, a wrong length or a
    non-finite value."""
    named = dict(model.named_parameters())
    if not isinstance(values, dict):
        raise ValueError(f"parameters must be a mapping of names to lists, got {type(values).__name__}")
    missing, extra = set(named) - set(values), set(values) - set(named)
    if missing or extra:
        raise ValueError(f"parameter names differ: missing {sorted(missing)}, unexpected {sorted(extra)}")
    with torch.no_grad():
        for name, p in named.items():
            try:
                arr = np.asarray(values[name], dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"parameter {name!r} is not a list of numbers: {exc}") from None
            if arr.ndim != 1 or arr.size != p.numel():
                raise ValueError(f"parameter {name!r} has {arr.size} values in shape {arr.shape}, "
                                 f"expected a flat list of {p.numel()}")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"parameter {name!r} has non-finite values")
            p.copy_(torch.from_numpy(arr).reshape(p.shape))


@dataclass(frozen=True)
class TrainingRun:
    """A fixed training budget on a task, carrying the *training* split only, so it can be sent
    to an untrusted process; the validation split never travels with it."""

    task: str
    seed: int
    steps: int
    batch_size: int
    time_budget_s: float
    train: Split

    @classmethod
    def make(cls, task: str, seed: int, steps: int, batch_size: int, time_budget_s: float,
             held_out_seed: int | None = None) -> "TrainingRun":
        """``held_out_seed``: see :func:`load_split`; the run carries the training data it selects,
        never the seed."""
        return cls(task, seed, steps, batch_size, time_budget_s, load_split(task, "train", held_out_seed))

    def run(self, optimizer_for: Callable[[nn.Module], Any]) -> tuple[nn.Module, list[float]]:
        """Build the seeded model, train it with ``optimizer_for(model)``; return both."""
        model = build_model(self.task, self.seed)
        losses = train(self.task, model, optimizer_for(model), self.train, self.steps,
                       self.batch_size, self.seed, self.time_budget_s)
        return model, losses


def held_out_metrics(task: str, params: Any, held_out_seed: int | None = None) -> dict[str, float]:
    """Validation and training loss/accuracy of ``params`` (untrusted: checked here) loaded into a fresh
    ``task`` model (the split chosen by ``held_out_seed``, see :func:`load_split`).

    Trusted-side check of parameters that came back from elsewhere: raises ``ValueError`` on a
    malformed parameter set (see :func:`load_lists`).
    """
    with one_torch_thread():
        model = build_model(task, 0)
        load_lists(model, params)
        val = evaluate(task, model, load_split(task, "val", held_out_seed))
        tr = evaluate(task, model, load_split(task, "train", held_out_seed))
    return {"val_loss": val["loss"], "val_accuracy": val["accuracy"],
            "train_loss": tr["loss"], "train_accuracy": tr["accuracy"]}


_THREADS_LOCK = threading.Lock()
_THREADS_USERS = 0
_THREADS_BEFORE = 1


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block with one intra-op torch thread, then restore the previous setting.

    These models are tiny: on a busy machine a second thread makes them ~10x slower. Re-entrant
    and safe across threads of this process (the first entrant saves the setting, the last one
    restores it).
    """
    global _THREADS_USERS, _THREADS_BEFORE
    torch_portable_kernels(torch)  # no oneDNN: its blocking (and reduction order) follows the CPU's caches
    with _THREADS_LOCK:
        if _THREADS_USERS == 0:
            _THREADS_BEFORE = torch.get_num_threads()
            torch.set_num_threads(1)
        _THREADS_USERS += 1
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS_USERS -= 1
            if _THREADS_USERS == 0:
                torch.set_num_threads(_THREADS_BEFORE)
