"""Evolving Muon's orthogonalisation: the Newton–Schulz polynomial coefficients and step count.

The candidate ``ns_schedule(m, n)`` returns, for an ``m x n`` matrix (``m <= n``), the list of
odd-polynomial coefficient tuples applied one per step (:func:`hifo.problems.optimizers.newton_schulz`,
where the iteration and its error theory are described). Per instance the parent measures, with
its own code, from the returned schedules alone:

* ``ortho_error`` — mean over test matrices (Gaussian, decaying-spectrum, and real gradients
  captured from training the tasks' networks) of the RMS distance of the output from the exact
  polar factor on the matrix's numerical range, i.e. of ``phi(s_i) - 1`` over its nonzero
  singular values (:func:`~problems.optimizers.polar_error`); ``max_ortho_error`` the worst;
* ``matmuls`` — matrix products per orthogonalisation (the deterministic cost proxy) and
  ``ns_ms`` — the parent's wall time to orthogonalise the instance's matrices (noisy,
  informational);
* ``val_loss`` — validation loss of a network trained by Muon (lr 0.02, momentum 0.95, Nesterov)
  whose orthogonaliser uses the candidate's schedules; the child trains and returns the
  parameters, the parent computes the loss on validation data the child never sees;
* ``objective = ortho_error + 0.01 * matmuls + val_loss`` (minimised).

A schedule that makes the singular values blow up (error not finite or above 10) is infeasible.
The residual trust gap is the one described in :mod:`hifo.evaluators.optimizer_update`: a candidate
that tampers with the trusted training loop in the sandbox could train with another
orthogonaliser than the schedule it returns; its parameters are still judged on held-out data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np
import torch

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.optimizers import (
    RuleOptimizer,
    TrainingRun,
    build_model,
    held_out_metrics,
    load_split,
    matmul_count,
    newton_schulz,
    one_torch_thread,
    polar_error,
    sample_batch,
    loss_of,
    split_params,
)

MAX_STEPS, MAX_TERMS, MAX_ABS = 10, 4, 50.0
COST_WEIGHT = 0.01  # objective units per matrix product
DIVERGED = 10.0  # an RMS singular-value error above this counts as divergence
MUON_LR, MUON_BETA = 0.02, 0.95

_DOCSTRING = """Returns the Newton-Schulz schedule that orthogonalises an m x n matrix (m <= n).

The matrix G is first scaled to X = G / ||G||_F, so all its singular values lie in (0, 1].
Each step applies one odd polynomial with coefficients (c0, c1, c2, ...):
    A = X @ X.T;  X <- c0 * X + c1 * A @ X + c2 * A @ A @ X + ...
which maps every singular value s to c0*s + c1*s**3 + c2*s**5 + ... The goal is singular
values close to 1 (X close to the orthogonal factor U V^T of G) with few matrix products.

Args:
    m: Number of rows (the smaller dimension).
    n: Number of columns.

Return:
    A list of 1 to 10 steps; each step a tuple of 1 to 4 finite coefficients with |c| <= 50.
    A step with k >= 2 coefficients costs k matrix products; a 1-coefficient step costs none.
"""

_TEMPLATE = FunctionTemplate(
    name="ns_schedule",
    signature="def ns_schedule(m: int, n: int) -> list:",
    docstring=_DOCSTRING,
    baseline_body="    # Muon's tuned quintic, 5 steps.\n    return [(3.4445, -4.7750, 2.0315)] * 5\n",
)

_CUBIC_BODY = "    # The classic cubic Newton-Schulz iteration, 5 steps.\n    return [(1.5, -0.5)] * 5\n"
_TAYLOR5_BODY = ("    # The classic quintic (degree-5 Taylor) Newton-Schulz iteration, 5 steps.\n"
                 "    return [(1.875, -1.25, 0.375)] * 5\n")


def _source(body: str) -> str:
    return _TEMPLATE.source(body)


@dataclass(frozen=True)
class NSInstance:
    """Shapes to orthogonalise (the matrices stay with the parent) and a Muon training run."""

    name: str
    matrix_seed: int
    shapes: tuple[tuple[int, int], ...]
    run: TrainingRun


def shape_key(m: int, n: int) -> str:
    """Schedules are keyed by the wide orientation ``'m x n'`` with ``m <= n``."""
    m, n = sorted((int(m), int(n)))
    return f"{m}x{n}"


def check_schedule(value: Any, where: str) -> list[tuple[float, ...]]:
    """A schedule as a list of float tuples, or ``ValueError`` saying what is wrong."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= MAX_STEPS:
        raise ValueError(f"{where}: expected a list of 1 to {MAX_STEPS} steps, got {_describe(value)}")
    schedule = []
    for i, step in enumerate(value):
        if isinstance(step, np.ndarray):
            step = step.tolist()
        if not isinstance(step, (list, tuple)) or not 1 <= len(step) <= MAX_TERMS:
            raise ValueError(f"{where}: step {i} must be a tuple of 1 to {MAX_TERMS} coefficients, "
                             f"got {_describe(step)}")
        coeffs = []
        for c in step:
            if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)):
                raise ValueError(f"{where}: step {i} has a non-numeric coefficient {c!r}")
            c = float(c)
            if not np.isfinite(c) or abs(c) > MAX_ABS:
                raise ValueError(f"{where}: step {i} coefficient {c} is not finite or exceeds {MAX_ABS}")
            coeffs.append(c)
        schedule.append(tuple(coeffs))
    return schedule


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}{'...' if len(text) > 80 else ''}"


@lru_cache(maxsize=None)
def _hidden_shapes(task: str) -> tuple[tuple[int, int], ...]:
    hidden, _ = split_params(build_model(task, 0))
    return tuple((p.shape[0], int(np.prod(p.shape[1:]))) for p in hidden.values())


@lru_cache(maxsize=None)
def _test_matrices(seed: int) -> tuple[np.ndarray, ...]:
    """Gaussian and decaying-spectrum matrices, and real gradients of the three tasks' hidden
    weights at SGD steps 1 and 20 (float32)."""
    rng = np.random.default_rng(seed)
    mats = [rng.standard_normal(s) for s in ((32, 64), (64, 64), (128, 32))]
    for m, n in ((64, 64), (32, 96)):  # spectra decaying like 1/i: ill-conditioned, as gradients are
        U = np.linalg.qr(rng.standard_normal((m, min(m, n))))[0]
        V = np.linalg.qr(rng.standard_normal((n, min(m, n))))[0]
        mats.append(U @ np.diag(1.0 / np.arange(1, min(m, n) + 1)) @ V.T)
    with one_torch_thread():
        for task in ("digits_mlp", "digits_cnn", "markov_lm"):
            model = build_model(task, seed)
            hidden, _ = split_params(model)
            split, batch_rng = load_split(task, "train"), np.random.default_rng(seed)
            for step in range(1, 21):  # plain SGD steps, lr 0.1
                model.zero_grad()
                loss_of(model, *sample_batch(task, split, batch_rng, 32)).backward()
                if step in (1, 20):
                    mats.extend(_grad(p).reshape(p.shape[0], -1).numpy().copy() for p in hidden.values())
                with torch.no_grad():
                    for p in model.parameters():
                        p.sub_(0.1 * _grad(p))
    return tuple(np.asarray(a, dtype=np.float32) for a in mats)


def _grad(p: Any) -> Any:
    """The gradient a backward pass left on ``p`` (every parameter of the task models gets one)."""
    if p.grad is None:
        raise RuntimeError("a task model parameter got no gradient")
    return p.grad


@lru_cache(maxsize=None)
def _load(instance_set: str) -> tuple[NSInstance, ...]:
    specs = {"train": (("digits_mlp", 0, 100),),
             "test": (("digits_mlp", 1, 300), ("digits_cnn", 2, 300), ("markov_lm", 3, 300))}
    if instance_set not in specs:
        raise NewtonSchulzSchedule.unknown_instance_set(instance_set, specs)
    out = []
    for task, seed, steps in specs[instance_set]:
        shapes = tuple(a.shape for a in _test_matrices(seed))
        batch = 16 if task == "markov_lm" else 64
        run = TrainingRun.make(task, seed, steps, batch, 8.0 if instance_set == "train" else 30.0)
        out.append(NSInstance(f"{task}/seed{seed}", seed, tuple((int(m), int(n)) for m, n in shapes), run))
    return tuple(out)


class NewtonSchulzSchedule(Evaluator):
    """Orthogonality error, cost and Muon training loss of an evolved Newton–Schulz schedule.

    Instance sets: ``train`` (one instance: 21 matrices, digits MLP trained 100 steps) and
    ``test`` (three: digits MLP, digits CNN, Markov transformer, 300 steps, seeds 1-3, each with
    its own 21 matrices: 5 synthetic, 16 real gradients).

    The test set stays published (issue 28): the slot is asked ``ns_schedule(m, n)`` for matrix shapes only, and
    every instance, whatever its seeds, asks for the same 21 shapes (7 distinct) in the same order, so a candidate
    cannot tell the published instances from a redraw and its answer is one schedule per shape whatever it
    memorised. Measured (2026-12-07, pinned kernels): a per-shape step count of Muon's quintic tuned on the published
    test matrices lowers the objective by 0.028 on the published seeds 1-3 and by 0.021 and 0.026 on the redrawn
    seeds 4-6 and 7-9 (of which 0.021 is the fixed saving of 2.1 matrix products at 0.01 each), within the
    seed-to-seed spread of the baseline itself (1.074-1.101): tuning on the published set gains no more there than
    elsewhere (tests/evaluators/test_newton_schulz.py checks that every instance asks the same shapes).
    """

    name = "newton_schulz"
    description = (
        "Design the Newton-Schulz iteration that Muon uses to orthogonalise its update matrices: "
        "return, for a matrix shape, a list of steps, each an odd polynomial given by its "
        "coefficients (c0, c1, c2, ...) applied to the singular values, s -> c0 s + c1 s^3 + "
        "c2 s^5 + ..., starting from the matrix divided by its Frobenius norm (so singular values "
        "lie in (0, 1], and real gradients have many tiny ones). Minimise objective = mean RMS "
        "distance from 1 of the output singular values (on each matrix's nonzero directions) "
        "over test matrices + 0.01 x matrix "
        "products per orthogonalisation (a step with k coefficients costs k products) + the "
        "validation loss of a small network trained by Muon with your schedule. Muon's default "
        "is 5 steps of (3.4445, -4.7750, 2.0315); the classic cubic is (1.5, -0.5)."
    )
    direction = "minimize"
    primary_metric = "objective"
    timing_metrics = ("ns_ms",)  # the parent's wall time: informative, load-dependent, not part of any check
    # Measured 2026-12-06: on a 2-core AMD EPYC (AVX2, pinned kernels, one torch thread) the train figures were
    # bit-identical to the stored ones, but the test set's validation loss differed by up to 1.6 % (objective
    # 0.9 %; ortho_error exact) from the figures stored on another machine. Cause found: the digits CNN (test set
    # only) ran its convolutions on NNPACK, whose blocking follows the CPU's caches; NNPACK is now off
    # (problems/_repro.py::torch_portable_kernels) and the test figures re-measured. The tolerance stays declared
    # until a second CPU reproduces them exactly; evalkit.assert_figure warns (ToleranceUsed) when it is used.
    fitness_rtol = {"val_loss": 0.025, "objective": 0.015, "*": 0.0}
    template = _TEMPLATE
    instance_sets = ("train", "test")
    limits = Limits(timeout_s=180.0, cpu_s=240, memory_mb=8192)  # torch needs a large address space
    baselines = {"muon_quintic": _source(_TEMPLATE.baseline_body), "cubic": _source(_CUBIC_BODY),
                 "taylor_quintic": _source(_TAYLOR5_BODY)}
    # Measured in-process, one torch thread (train re-measured by
    # tests/evaluators/test_newton_schulz.py, test by its slow test).
    reference_figures = {  # measured on the pinned kernels (measured_figures, 6 decimals; issue 26)
        "muon_quintic": {"train": {"objective": 0.44286, "ortho_error": 0.217341, "val_loss": 0.075519},
                        "test": {"objective": 1.100943, "ortho_error": 0.214867, "val_loss": 0.736076}},
        "cubic": {"train": {"objective": 0.768556, "ortho_error": 0.573039, "val_loss": 0.095518},
                 "test": {"objective": 1.440476, "ortho_error": 0.587321, "val_loss": 0.753155}},
        "taylor_quintic": {"train": {"objective": 0.608211, "ortho_error": 0.380245, "val_loss": 0.077967},
                          "test": {"objective": 1.259464, "ortho_error": 0.385327, "val_loss": 0.724137}},
    }
    tags = ("optimizer", "muon", "newton-schulz", "orthogonalization", "torch")
    slot_process = True  # called once per matrix shape: the candidate runs in a process of its own (sandbox/_slotproc.py)

    def load_instances(self, instance_set: str) -> list[NSInstance]:
        return list(_load(instance_set))

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: NSInstance) -> dict[str, Any]:
        """Ask the candidate for every needed shape, train with Muon using those schedules."""
        torch.set_num_threads(1)
        schedules: dict[str, list[tuple[float, ...]]] = {}

        def schedule_for(m: int, n: int) -> list[tuple[float, ...]]:
            key = shape_key(m, n)
            if key not in schedules:
                small, large = sorted((int(m), int(n)))
                schedules[key] = check_schedule(heuristic(small, large), f"ns_schedule({small}, {large})")
            return schedules[key]

        for m, n in instance.shapes:
            schedule_for(m, n)

        def muon_rule(grad, momentum, weight, state, step, total_steps):  # noqa: ANN001 - RuleOptimizer's slot
            update = grad + MUON_BETA * (momentum - grad)  # Nesterov, as in the Muon reference
            O = newton_schulz(torch.from_numpy(update), None, schedule_for(*grad.shape)).numpy()
            return MUON_LR * max(1.0, grad.shape[0] / grad.shape[1]) ** 0.5 * O

        def optimizer_for(model: torch.nn.Module) -> RuleOptimizer:
            hidden, rest = split_params(model)
            return RuleOptimizer(muon_rule, hidden, rest, total_steps=instance.run.steps, beta=MUON_BETA)

        model, _ = instance.run.run(optimizer_for)
        return {"schedules": {k: [list(s) for s in v] for k, v in schedules.items()},
                "params": {n: p.detach().reshape(-1).tolist() for n, p in model.named_parameters()}}

    def score(self, instance: NSInstance, solution: Any) -> dict[str, float]:
        if not isinstance(solution, dict) or not isinstance(solution.get("schedules"), dict):
            raise InfeasibleSolution(f"{instance.name}: the solution must be a dict with 'schedules' and 'params'")
        needed = {shape_key(m, n) for m, n in instance.shapes} | {
            shape_key(m, n) for m, n in _hidden_shapes(instance.run.task)}
        missing = needed - set(solution["schedules"])
        if missing:
            raise InfeasibleSolution(f"{instance.name}: no schedule for shapes {sorted(missing)}")
        try:
            schedules = {k: check_schedule(solution["schedules"][k], f"schedule {k}") for k in needed}
        except ValueError as exc:
            raise InfeasibleSolution(f"{instance.name}: {exc}") from None
        errors, products, ns_s = [], [], 0.0
        for i, G in enumerate(_test_matrices(instance.matrix_seed)):
            schedule = schedules[shape_key(*G.shape)]
            with one_torch_thread():
                start = time.perf_counter()
                out = newton_schulz(torch.from_numpy(G), None, schedule)
                ns_s += time.perf_counter() - start
            err = polar_error(out, G)
            if not err <= DIVERGED:
                raise InfeasibleSolution(f"{instance.name}: the schedule for {shape_key(*G.shape)} diverges "
                                         f"on test matrix {i} (singular-value error {err:.3g})")
            errors.append(err)
            products.append(matmul_count(schedule))
        try:
            held = held_out_metrics(instance.run.task, solution.get("params"))
        except ValueError as exc:
            raise InfeasibleSolution(f"{instance.name}: {exc}") from None
        if not np.isfinite(held["val_loss"]):
            raise InfeasibleSolution(f"{instance.name}: the trained model's validation loss is not finite")
        ortho, cost = float(np.mean(errors)), float(np.mean(products))
        return {"objective": ortho + COST_WEIGHT * cost + held["val_loss"], "ortho_error": ortho,
                "max_ortho_error": float(np.max(errors)), "matmuls": cost, "ns_ms": 1000 * ns_s,
                "val_loss": held["val_loss"], "val_accuracy": held["val_accuracy"]}
