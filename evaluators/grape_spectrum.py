"""Evolving the spectrum of multiplicative GRAPE (RoPE's frequencies) for length extrapolation.

The candidate ``spectrum(n_planes, base, train_len)`` returns one rotation frequency per canonical
coordinate plane of an attention head (``G(n) = exp(n sum_m w_m L_m)``, RoPE when ``w_m = base^(-m/n_planes)``).
It never sees the model or the data. The parent checks the frequencies (``n_planes`` finite values in
``[0, pi]``), trains the tiny transformer of :mod:`hifo.problems.grape_pe` with them on associative recall
at length ``train_len`` (deterministic, one torch thread, seeded by the instance) and measures recall
accuracy at 2x and 4x the training length: ``acc_long`` (their mean; primary, maximised), ``acc_2x``,
``acc_4x`` and ``acc_train`` (at the training length).

Known weakness (issue 30): the best baseline is the trivial answer, NoPE (all-zero frequencies, 0.837 against
RoPE's 0.559), so the easy optimum is to switch rotary off. A task where position matters (latest-value recall,
``make_batch(writes=2)``) was tried: RoPE does not learn it at this budget (0.27 at the training length), so
the slot stayed as it was; :mod:`hifo.evaluators.grape_slopes` (GRAPE-A's slope schedule, where zero slopes
are NoPE and lose) is the GRAPE slot to search.

The test set (seeds 1 and 2) stays published (issue 28): the slot is asked ``spectrum(8, 10000.0, 32)`` and nothing
else, the same question on every instance whatever its seed, so a candidate cannot tell the published instances
from a redraw and cannot answer them from a table: its answer is one spectrum for every seed
(tests/evaluators/test_grape_spectrum.py checks that every instance asks the same question).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import torch

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.grape_pe import accuracy, train_model
from hifo.problems._repro import one_torch_thread

_DOCSTRING = """Frequencies of the rotation planes of a rotary (multiplicative GRAPE) positional encoding.

Each attention head has n_planes coordinate planes; a token at position n has plane m of its query
and key rotated by the angle n * w_m, so attention depends only on the offset between positions.
RoPE uses w_m = base ** (-m / n_planes). The model is trained on sequences of length train_len and
judged on sequences 2x and 4x longer (recall of a value given its key, far back in the sequence).

Args:
    n_planes: number of planes per head (head dimension / 2).
    base: RoPE's base (10000.0), for reference.
    train_len: training sequence length.

Return:
    A list of n_planes floats, each finite and in [0, pi].
"""

_TEMPLATE = FunctionTemplate(
    name="spectrum",
    signature="def spectrum(n_planes: int, base: float, train_len: int) -> list:",
    docstring=_DOCSTRING,
    baseline_body="    # RoPE: log-uniform spectrum.\n    return [base ** (-m / n_planes) for m in range(n_planes)]\n",
)
_BODIES = {
    "nope": "    # No rotation at all (NoPE).\n    return [0.0] * n_planes\n",
    "low_band": ("    # Only frequencies whose period exceeds the training length ('slow' half of RoPE).\n"
                 "    return [min(base ** (-m / n_planes), 2 * np.pi / (4 * train_len)) for m in range(n_planes)]\n"),
    "linear": "    # Linearly spaced frequencies from pi/2 down to pi/(2 n_planes).\n"
              "    return [np.pi / 2 * (n_planes - m) / n_planes for m in range(n_planes)]\n",
}


def _source(body: str) -> str:
    return f"{_TEMPLATE.imports}\n\n\n{_TEMPLATE.render(body)}"


@dataclass(frozen=True)
class SpectrumInstance:
    name: str
    seed: int
    n_planes: int = 8
    base: float = 10000.0
    train_len: int = 32
    steps: int = 500


_SEEDS = {"train": (0,), "test": (1, 2)}


@lru_cache(maxsize=64)
def _measure(omegas: tuple[float, ...], seed: int, train_len: int, steps: int) -> dict[str, float]:
    with one_torch_thread():  # one thread, taking turns with parallel scorers (issue 26)
        model = train_model("rope", seed, steps=steps, length=train_len, omegas=torch.tensor(omegas, dtype=torch.float64))
        acc = {f: accuracy(model, f * train_len, seed=seed) for f in (1, 2, 4)}
    return {"acc_long": (acc[2] + acc[4]) / 2, "acc_2x": acc[2], "acc_4x": acc[4], "acc_train": acc[1]}


class GrapeSpectrum(Evaluator):
    """Recall accuracy beyond the training length of a transformer with the evolved rotary spectrum."""

    name = "grape_spectrum"
    description = ("Choose the rotation frequencies of a rotary (multiplicative GRAPE) positional encoding; a tiny "
                   "transformer is trained with them on associative recall and judged on sequences 2-4x longer "
                   "than in training; maximise the recall accuracy there.")
    direction = "maximize"
    primary_metric = "acc_long"
    template = _TEMPLATE
    limits = Limits(timeout_s=10.0, cpu_s=10, memory_mb=2048)
    baselines = {"rope": _source(_TEMPLATE.baseline_body), **{k: _source(v) for k, v in _BODIES.items()}}
    # Measured in-process, one torch thread (rope's re-checked by tests/evaluators/test_grape_spectrum.py).
    reference_figures = {  # measured on the pinned kernels (measured_figures, 6 decimals; issue 26)
        "rope": {"train": {"acc_long": 0.559082, "acc_2x": 0.791016, "acc_4x": 0.327148, "acc_train": 1.0},
                "test": {"acc_long": 0.611572, "acc_2x": 0.796875, "acc_4x": 0.42627, "acc_train": 1.0}},
        "nope": {"train": {"acc_long": 0.836914, "acc_2x": 0.838867, "acc_4x": 0.834961, "acc_train": 0.853516},
                "test": {"acc_long": 0.831299, "acc_2x": 0.837891, "acc_4x": 0.824707, "acc_train": 0.844727}},
        "low_band": {"train": {"acc_long": 0.41748, "acc_2x": 0.661133, "acc_4x": 0.173828, "acc_train": 0.879883}},
        "linear": {"train": {"acc_long": 0.287598, "acc_2x": 0.287109, "acc_4x": 0.288086, "acc_train": 0.295898}},
    }
    slot_process = True  # issue 28: the candidate in a process of its own, a fresh one per instance
    tags = ("positional-encoding", "transformer", "length-extrapolation", "torch")

    def load_instances(self, instance_set: str) -> list[SpectrumInstance]:
        if instance_set not in _SEEDS:
            raise self.unknown_instance_set(instance_set)
        return [SpectrumInstance(f"recall/seed{s}", s) for s in _SEEDS[instance_set]]

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: SpectrumInstance) -> list[float]:
        out = heuristic(instance.n_planes, instance.base, instance.train_len)
        return [float(w) for w in out]

    def score(self, instance: SpectrumInstance, solution: Any) -> dict[str, float]:
        if not isinstance(solution, list) or len(solution) != instance.n_planes:
            raise InfeasibleSolution(f"{instance.name}: expected a list of {instance.n_planes} frequencies")
        if not all(isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w)
                   and 0.0 <= w <= math.pi for w in solution):
            raise InfeasibleSolution(f"{instance.name}: frequencies must be finite and in [0, pi]")
        return dict(_measure(tuple(float(w) for w in solution), instance.seed, instance.train_len, instance.steps))
