"""Evolving the spectrum of multiplicative GRAPE (RoPE's frequencies) for length extrapolation.

The candidate ``spectrum(n_planes, base, train_len)`` returns one rotation frequency per canonical
coordinate plane of an attention head (``G(n) = exp(n sum_m w_m L_m)``, RoPE when ``w_m = base^(-m/n_planes)``).
It never sees the model or the data. The parent checks the frequencies (``n_planes`` finite values in
``[0, pi]``), trains the tiny transformer of :mod:`hifo.problems.grape_pe` with them on *latest-value*
recall (every key written twice, the query asks for the later value) at length ``train_len``
(deterministic, one torch thread, seeded by the instance) and measures recall accuracy at 2x and 4x the
training length: ``acc_long`` (their mean; primary, maximised), ``acc_2x``, ``acc_4x`` and ``acc_train``
(at the training length).

Why latest-value recall: on plain recall (one write per key) a model without any position signal (NoPE,
all-zero frequencies) was the best baseline (0.837 against RoPE's 0.559), so the slot's easy optimum was
to switch rotary off. With two writes per key content alone cannot pick the later one, and NoPE loses
(the figures, their seed-to-seed noise and the baselines' train/test rank correlation are in
``data/grape_pe/reference_figures.json``; ``python -m hifo.evaluators.grape_spectrum`` re-measures them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits, measured_figures
from hifo.problems.grape_pe import accuracy, train_model
from hifo.problems._repro import one_torch_thread

_DOCSTRING = """Frequencies of the rotation planes of a rotary (multiplicative GRAPE) positional encoding.

Each attention head has n_planes coordinate planes; a token at position n has plane m of its query
and key rotated by the angle n * w_m, so attention depends only on the offset between positions.
RoPE uses w_m = base ** (-m / n_planes). The model is trained on sequences of length train_len and
judged on sequences 2x and 4x longer: every key is written twice with different values far back in the
sequence, and the model must recall the later value given the key (so it must tell which write is more
recent as well as reach far back).

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


WRITES = 2  # latest-value recall: every key written twice (hifo.problems.grape_pe.make_batch)
REFS = Path(__file__).parent / "data" / "grape_pe" / "reference_figures.json"


def _load_refs() -> dict[str, Any]:
    return json.loads(REFS.read_text()) if REFS.exists() else {}


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
    writes: int = WRITES


_SEEDS = {"train": (0,), "test": (1, 2)}


@lru_cache(maxsize=64)
def _measure(omegas: tuple[float, ...], seed: int, train_len: int, steps: int, writes: int) -> dict[str, float]:
    with one_torch_thread():  # one thread, taking turns with parallel scorers (issue 26)
        model = train_model("rope", seed, steps=steps, length=train_len, writes=writes,
                            omegas=torch.tensor(omegas, dtype=torch.float64))
        acc = {f: accuracy(model, f * train_len, seed=seed, writes=writes) for f in (1, 2, 4)}
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
    # Measured in-process, one torch thread, stored as data (``python -m hifo.evaluators.grape_spectrum``;
    # rope's train figures re-checked by tests/evaluators/test_grape_spectrum.py).
    reference_figures = {k: v for k, v in _load_refs().items() if not k.startswith("_")}
    seed_noise = _load_refs().get("_seed_noise", {})
    rank_agreement = _load_refs().get("_rank_agreement", {})
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
        return dict(_measure(tuple(float(w) for w in solution), instance.seed, instance.train_len, instance.steps,
                             instance.writes))


def make_refs() -> dict[str, Any]:
    """Every baseline's figures on both sets, the seed-to-seed noise of each baseline's ``acc_long`` over the
    three seeds (train 0, test 1 and 2) and the Spearman correlation of the baselines' train and test ranks."""
    from scipy.stats import spearmanr

    ev = GrapeSpectrum()
    out: dict[str, Any] = {}
    per_seed: dict[str, list[float]] = {}
    for name, source in ev.baselines.items():
        ns: dict[str, Any] = {}
        exec(source, ns)  # trusted: our own baselines
        out[name] = {s: measured_figures(ev, ns["spectrum"], s) for s in ev.instance_sets}
        per_seed[name] = [_measure(tuple(float(w) for w in ev.solve(ns["spectrum"], i)), i.seed, i.train_len, i.steps,
                                   i.writes)["acc_long"] for s in ev.instance_sets for i in ev.load_instances(s)]
    names = list(ev.baselines)
    train = [out[n]["train"]["acc_long"] for n in names]
    test = [out[n]["test"]["acc_long"] for n in names]
    rho = spearmanr(train, test).statistic
    out["_seed_noise"] = {n: {"acc_long_per_seed": [round(v, 6) for v in per_seed[n]],
                              "seed_sd": round(float(np.std(per_seed[n], ddof=1)), 6)} for n in names}
    out["_rank_agreement"] = {"baselines": names, "train": train, "test": test, "spearman": round(float(rho), 6)}
    return out


if __name__ == "__main__":
    REFS.parent.mkdir(parents=True, exist_ok=True)
    REFS.write_text(json.dumps(make_refs(), indent=1, sort_keys=True) + "\n")
    print(REFS.read_text())
    print(f"wrote {REFS}")
