"""Evolving the update rule of a matrix optimizer (Muon and AdamW as seeds).

The algorithm is a fixed-budget training run (:class:`hifo.problems.optimizers.TrainingRun`): a small
network is trained for a fixed number of minibatch steps; every hidden weight matrix is updated
by the candidate ``update`` function (:class:`hifo.problems.optimizers.RuleOptimizer`), the other
parameters by a fixed AdamW. The metric is the validation loss after the budget, averaged over
tasks and seeds.

Trust. The child trains and returns the final parameters only. The parent loads them into a
fresh model and computes the validation (and training) loss itself on the validation split,
which never enters the sandbox. Which data are held out is decided in the parent by
:func:`held_out_seed` (the digits permutation, the seed of the corpus's validation stream), which
the child is never sent: the instance carries the training data it selects, not the seed. So the
public split (permutation seed 0, stream seed 2) that a candidate could rebuild is not the one it
is judged on. The default seed is a constant of this module (the candidate cannot reach it
through the slot fence); set ``HIFO_HELDOUT_SEED`` in the parent for one that is not in any source
(the child's environment is an allowlist; the figures below then change). For the digits the
validation images remain the complement of the training images the child holds; in the sandbox
the rule runs in a slot process of its own (``slot_process``) that receives one matrix's gradient,
momentum, weight (numpy copies) and its state dict, never the model, the training images or the loop,
so it cannot change what the trusted loop trains on. (A candidate that escaped the slot fence could
still load sklearn's digits in its own process and, with the default seed in this source, rebuild the
held-out images; it could then only steer the hidden matrices it is shown, one step at a time, without
seeing the biases, embeddings or output layer: not shown impossible, but far from training on them.
``HIFO_HELDOUT_SEED`` takes the seed out of its reach.) So a candidate cannot report its
own fitness; forged, missing, mis-shaped or non-finite parameters are rejected (``InfeasibleSolution``);
whatever parameters come back are judged on data the candidate never saw, and they come from exactly
``steps`` updates of the trusted loop (its step count and its wall-clock budget run in the algorithm's
process, which the candidate cannot reach). The state dict may hold plain data and numpy arrays only
(it crosses the process boundary after each call).
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import Any, Callable

import torch

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.optimizers import RuleOptimizer, TrainingRun, held_out_metrics, split_params

# (task, seed, steps, batch size, wall-clock budget in seconds) per instance set.
RUNS: dict[str, tuple[tuple[str, int, int, int, float], ...]] = {
    "train": (("digits_mlp", 0, 100, 64, 8.0), ("markov_lm", 0, 150, 16, 10.0)),
    "test": (("digits_mlp", 1, 300, 64, 30.0), ("digits_mlp", 2, 300, 64, 30.0),
             ("digits_cnn", 1, 300, 64, 30.0), ("digits_cnn", 2, 300, 64, 30.0),
             ("markov_lm", 1, 300, 16, 30.0), ("markov_lm", 2, 300, 16, 30.0)),
}

_DOCSTRING = """Returns the step for one weight matrix of a neural network (an optimizer's update rule).

Called once per hidden weight matrix at every training step; the weight becomes W - delta.

Args:
    grad: Gradient of the minibatch loss w.r.t. this weight, np.ndarray (m, n) float32.
        Conv filters arrive flattened to (out_channels, in_channels * kh * kw).
    momentum: Exponential moving average of the gradients,
        momentum = 0.95 * momentum + 0.05 * grad, already including this step's grad (m, n).
    weight: Current value of the weight (a copy), np.ndarray (m, n).
    state: Dict private to this weight matrix, kept between steps (empty at step 1);
        store any arrays or numbers your rule needs (numpy arrays, numbers, strings,
        lists and dicts only: it is copied to and from the process the rule runs in).
    step: Step number, 1-based.
    total_steps: Number of steps in the training run.

Return:
    delta: np.ndarray of shape (m, n) with finite values (the weight becomes W - delta).
"""

_MUON_BODY = """    # Muon: Nesterov momentum, orthogonalised by 5 quintic Newton-Schulz steps.
    g = grad + 0.95 * (momentum - grad)
    x = g / (np.linalg.norm(g) + 1e-7)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    a, b, c = 3.4445, -4.7750, 2.0315
    for _ in range(5):
        s = x @ x.T
        x = a * x + (b * s + c * s @ s) @ x
    if tall:
        x = x.T
    lr = 0.02
    return lr * max(1.0, grad.shape[0] / grad.shape[1]) ** 0.5 * x
"""

_ADAMW_BODY = """    # AdamW (Adam moments with bias correction; decoupled weight decay).
    lr, beta1, beta2, eps, weight_decay = 1e-2, 0.9, 0.95, 1e-10, 0.0
    if not state:
        state["m"] = np.zeros_like(grad)
        state["v"] = np.zeros_like(grad)
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    m_hat = state["m"] / (1 - beta1 ** step)
    v_hat = state["v"] / (1 - beta2 ** step)
    return lr * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * weight)
"""

_SGD_BODY = """    # SGD with (EMA) momentum.
    return 0.5 * momentum
"""

_TEMPLATE = FunctionTemplate(
    name="update",
    signature="def update(grad: np.ndarray, momentum: np.ndarray, weight: np.ndarray, state: dict, "
              "step: int, total_steps: int) -> np.ndarray:",
    docstring=_DOCSTRING,
    baseline_body=_MUON_BODY,
)


def _source(body: str) -> str:
    return _TEMPLATE.source(body)


HELD_OUT_SEED_ENV = "HIFO_HELDOUT_SEED"
_DEFAULT_HELD_OUT_SEED = 20_131  # not the public split's seeds (0 for the digits, 2 for the corpus)


def held_out_seed() -> int:
    """The parent's seed for what is held out (read where the parent loads and scores; never sent)."""
    raw = os.environ.get(HELD_OUT_SEED_ENV, "").strip()
    if not raw:
        return _DEFAULT_HELD_OUT_SEED
    try:
        seed = int(raw)
    except ValueError:
        raise ValueError(f"{HELD_OUT_SEED_ENV} must be an integer, got {raw!r}") from None
    if seed < 0 or seed == 1:  # 1 seeds the corpus's training stream
        raise ValueError(f"{HELD_OUT_SEED_ENV} must be a non-negative integer other than 1, got {seed}")
    return seed


@lru_cache(maxsize=None)
def _load(instance_set: str, seed: int) -> tuple[TrainingRun, ...]:
    if instance_set not in RUNS:
        raise OptimizerUpdate.unknown_instance_set(instance_set, RUNS)
    return tuple(TrainingRun.make(*spec, held_out_seed=seed) for spec in RUNS[instance_set])


class OptimizerUpdate(Evaluator):
    """Fixed-budget training with an evolved matrix update rule; metric: validation loss.

    Instance sets: ``train`` (digits MLP for 100 steps and the Markov-corpus transformer for
    150, one seed) and ``test`` (digits MLP, digits CNN and the transformer, 300 steps, two seeds
    each).
    Per instance: ``val_loss``, ``val_accuracy``, ``train_loss``, ``train_accuracy`` (all
    recomputed by the parent); aggregated: their means.
    """

    name = "optimizer_update"
    description = (
        "Design the update rule of a neural-network optimizer for weight matrices. At every "
        "training step the function receives the gradient of one hidden weight matrix, an "
        "exponential moving average of its gradients (momentum 0.95), the current weight, a "
        "per-matrix state dict and the step counter, and returns the step delta (the weight "
        "becomes W - delta). Biases, embeddings and output layers are trained by a fixed AdamW "
        "(learning rate 1e-2). "
        "Each run has a fixed number of steps (100-150 for training, 300 for testing) on small "
        "networks: an MLP and a small CNN classifying 8x8 digit images (matrices 64x64, 8x9, "
        "16x72) and a one-block transformer language model (matrices 96x32, 32x32, 128x32, "
        "32x128). The goal is the lowest validation loss after the budget. Known good rules: "
        "Muon (orthogonalise the Nesterov momentum with a few Newton-Schulz iterations, learning "
        "rate about 0.02) and AdamW (learning rate about 1e-2). Keep each call cheap: runs have a "
        "wall-clock budget."
    )
    direction = "minimize"
    primary_metric = "val_loss"
    template = _TEMPLATE
    instance_sets = ("train", "test")
    limits = Limits(timeout_s=240.0, cpu_s=300, memory_mb=8192)  # torch needs a large address space
    baselines = {"muon": _source(_MUON_BODY), "adamw": _source(_ADAMW_BODY),
                 "sgd_momentum": _source(_SGD_BODY)}
    # Measured in-process, one torch thread, float32, on the split of the default held_out_seed() (the
    # train figures are re-measured by tests/evaluators/test_optimizer_update.py, the test figures by
    # its slow test).
    reference_figures = {  # measured on the pinned kernels (measured_figures, 6 decimals; issue 26)
        "muon": {"train": {"val_loss": 1.307731, "val_accuracy": 0.585653},
                "test": {"val_loss": 0.771437, "val_accuracy": 0.761296}},
        "adamw": {"train": {"val_loss": 1.390404, "val_accuracy": 0.550601},
                 "test": {"val_loss": 0.826081, "val_accuracy": 0.743931}},
        "sgd_momentum": {"train": {"val_loss": 1.439662, "val_accuracy": 0.526254},
                        "test": {"val_loss": 0.993977, "val_accuracy": 0.677733}},
    }
    tags = ("optimizer", "muon", "adamw", "deep learning", "torch")
    # Measured 2026-12-06: on a 2-core AMD EPYC (AVX2, pinned kernels, one torch thread) the train figures were
    # bit-identical to the stored ones, but the test set's differed by up to 1.0 % (val_loss, Muon) and 0.4 %
    # (val_accuracy) from the figures stored on another machine. Cause found: with oneDNN off, the digits CNN's
    # convolutions (test set only) ran on NNPACK, whose blocking follows the CPU's caches; NNPACK is now off too
    # (problems/_repro.py::torch_portable_kernels) and the test figures re-measured. The tolerance stays declared
    # until a second CPU reproduces them exactly: tests/evaluators/evalkit.py::assert_figure warns (ToleranceUsed)
    # whenever a check needs it, so CI's log says.
    fitness_rtol = {"val_loss": 0.015, "val_accuracy": 0.006, "*": 0.0}
    # issue 28: the candidate in a process of its own, a fresh one per instance (sandbox/_slotproc.py): it gets
    # numpy copies of one matrix's gradient, momentum and weight and its state dict (held here between calls),
    # never the model, the training data or the loop; one call per hidden matrix per step (about 1,000 per
    # train instance, up to 1,800 per test instance)
    slot_process = True

    def load_instances(self, instance_set: str) -> list[TrainingRun]:
        return list(_load(instance_set, held_out_seed()))

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: TrainingRun) -> dict[str, Any]:
        """Train with ``heuristic`` as the matrix update rule; return the final parameters."""
        torch.set_num_threads(1)
        rule = heuristic
        keeping = getattr(heuristic, "call_returning_args", None)  # a slot process (sandbox/_slotproc.py)
        if keeping is not None:
            def rule(grad: Any, momentum: Any, weight: Any, state: dict, step: int, total_steps: int) -> Any:
                # the per-matrix state dict lives here, between the steps; it comes back after each call
                value, args, _ = keeping(grad, momentum, weight, state, step, total_steps)
                kept = args[3] if len(args) == 6 else None
                if not isinstance(kept, dict):
                    raise ValueError("update() must leave state a dict")
                state.clear()
                state.update(kept)
                return value

        def optimizer_for(model: torch.nn.Module) -> RuleOptimizer:
            hidden, rest = split_params(model)
            return RuleOptimizer(rule, hidden, rest, total_steps=instance.steps)

        model, losses = instance.run(optimizer_for)
        params = {n: p.detach().reshape(-1).tolist() for n, p in model.named_parameters()}
        return {"params": params, "last_train_losses": losses[-5:]}  # the losses are not trusted

    def score(self, instance: TrainingRun, solution: Any) -> dict[str, float]:
        if not isinstance(solution, dict) or "params" not in solution:
            raise InfeasibleSolution(f"{instance.task}: the solution must be a dict with 'params'")
        try:
            metrics = held_out_metrics(instance.task, solution["params"], held_out_seed())
        except ValueError as exc:
            raise InfeasibleSolution(f"{instance.task} seed {instance.seed}: {exc}") from None
        if not all(map(_finite, metrics.values())):
            raise InfeasibleSolution(f"{instance.task} seed {instance.seed}: the trained model's loss "
                                     f"is not finite ({metrics})")
        return metrics


def _finite(x: float) -> bool:
    return math.isfinite(x)
