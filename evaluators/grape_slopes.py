"""Evolving the slope schedule of additive GRAPE (GRAPE-A, the paper's eq. 4.6) for length extrapolation.

The candidate ``slopes(heads, layers, train_len)`` returns, for every layer and head of the tiny transformer of
:mod:`hifo.problems.grape_pe`, the slope ``s_(l,h) >= 0`` of its additive bias
``(j - i) w_(l,h) (softplus(v.q_i / sqrt(d)) + softplus(u.k_j / sqrt(d)))`` with ``w = softplus(r) s`` and
``softplus(r)`` starting at 1 (the official code's parameterisation; ALiBi's slopes are its default ``s``).
The gates and ``r`` are still learned in training; the schedule sets where each head starts and how far
training can move it (``w`` scales with ``s``). It never sees the model or the data. The parent checks the
slopes (finite, in ``[0, 4]``), trains the model on associative recall at length ``train_len``
(deterministic, one torch thread, seeded by the instance) and measures recall accuracy at 2x and 4x the
training length: ``acc_long`` (their mean; primary, maximised), ``acc_2x``, ``acc_4x``, ``acc_train``.

The trivial answer, all-zero slopes, removes every position signal (NoPE through the same module). This
slot replaces ``grape_spectrum``'s rotary spectrum, whose best baseline was that trivial answer (NoPE 0.837
against RoPE 0.559). Figures, seed-to-seed noise and the baselines' train/test rank correlation:
``data/grape_pe/slopes_reference_figures.json`` (``python -m hifo.evaluators.grape_slopes [JOBS]`` re-measures them).

The test set (seeds 1 and 2) stays published (issue 28): the slot is asked ``slopes(4, 2, 32)`` and nothing else,
the same question on every instance whatever its seed, so a candidate cannot tell the published instances from a
redraw and cannot answer them from a table: its answer is one schedule for every seed
(tests/evaluators/test_grape_slopes.py checks that every instance asks the same question). What remains is tuning
that one schedule on the published seeds, which is fitting the evaluator, not recognising instances (not measured).
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

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems._repro import one_torch_thread
from hifo.problems.grape_pe import accuracy, train_model

REFS = Path(__file__).parent / "data" / "grape_pe" / "slopes_reference_figures.json"
MAX_SLOPE = 4.0

_DOCSTRING = """Slopes of the additive (GRAPE-A) position bias of every attention head, per layer.

A head h of layer l adds to the score of query i for key j (j <= i) the bias
-(i - j) * w * (softplus(v.q_i / sqrt(d)) + softplus(u.k_j / sqrt(d))), with w = softplus(r) * s[l][h]:
a penalty that grows with distance, steeper for a larger slope s. v, u and r are learned in training
(softplus(r) starts at 1); s sets each head's starting slope and scales how far training moves it.
s = 0 switches the head's position signal off. ALiBi uses s[l][h] = 2 ** (-8 (h + 1) / heads) in every
layer. The model (2 layers, 4 heads) is trained on sequences of length train_len and judged on sequences
2x and 4x longer (recall of a value given its key, far back in the sequence).

Args:
    heads: attention heads per layer.
    layers: number of layers.
    train_len: training sequence length.

Return:
    A list of `layers` lists of `heads` floats, each finite and in [0, 4].
"""

_TEMPLATE = FunctionTemplate(
    name="slopes",
    signature="def slopes(heads: int, layers: int, train_len: int) -> list:",
    docstring=_DOCSTRING,
    baseline_body="    # ALiBi's geometric slopes in every layer (the official code's default).\n"
                  "    return [[2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)] for _ in range(layers)]\n",
)
_BODIES = {
    "zero": "    # No position signal at all (NoPE through the same module).\n"
            "    return [[0.0] * heads for _ in range(layers)]\n",
    "steep_then_flat": "    # A local first layer (4x ALiBi) and a far-reaching second one (ALiBi / 4).\n"
                       "    alibi = [2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)]\n"
                       "    return [[min(4.0, 4 * a) for a in alibi] if l == 0 else [a / 4 for a in alibi] "
                       "for l in range(layers)]\n",
}


def _source(body: str) -> str:
    return f"{_TEMPLATE.imports}\n\n\n{_TEMPLATE.render(body)}"


def _load_refs() -> dict[str, Any]:
    return json.loads(REFS.read_text()) if REFS.exists() else {}


@dataclass(frozen=True)
class SlopesInstance:
    name: str
    seed: int
    heads: int = 4
    layers: int = 2
    train_len: int = 32
    steps: int = 500


_SEEDS = {"train": (0,), "test": (1, 2)}


@lru_cache(maxsize=64)
def _measure(slopes: tuple[tuple[float, ...], ...], seed: int, train_len: int, steps: int) -> dict[str, float]:
    with one_torch_thread():  # one thread, taking turns with parallel scorers (issue 26)
        model = train_model("grape_a", seed, steps=steps, length=train_len,
                            slopes=torch.tensor(slopes, dtype=torch.float64))
        acc = {f: accuracy(model, f * train_len, seed=seed) for f in (1, 2, 4)}
    return {"acc_long": (acc[2] + acc[4]) / 2, "acc_2x": acc[2], "acc_4x": acc[4], "acc_train": acc[1]}


class GrapeSlopes(Evaluator):
    """Recall accuracy beyond the training length of a transformer with the evolved GRAPE-A slope schedule."""

    name = "grape_slopes"
    description = ("Choose the per-layer, per-head slopes of an additive (GRAPE-A) positional bias with the paper's "
                   "softplus query/key gates; a tiny transformer is trained with them on associative recall and "
                   "judged on sequences 2-4x longer than in training; maximise the recall accuracy there.")
    direction = "maximize"
    primary_metric = "acc_long"
    template = _TEMPLATE
    limits = Limits(timeout_s=10.0, cpu_s=10, memory_mb=2048)
    baselines = {"alibi": _source(_TEMPLATE.baseline_body), **{k: _source(v) for k, v in _BODIES.items()}}
    # Measured in-process, one torch thread, stored as data (``python -m hifo.evaluators.grape_slopes``).
    reference_figures = {k: v for k, v in _load_refs().items() if not k.startswith("_")}
    seed_noise = _load_refs().get("_seed_noise", {})
    rank_agreement = _load_refs().get("_rank_agreement", {})
    slot_process = True  # issue 28: the candidate in a process of its own, a fresh one per instance
    tags = ("positional-encoding", "transformer", "length-extrapolation", "torch")

    def load_instances(self, instance_set: str) -> list[SlopesInstance]:
        if instance_set not in _SEEDS:
            raise self.unknown_instance_set(instance_set)
        return [SlopesInstance(f"recall/seed{s}", s) for s in _SEEDS[instance_set]]

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: SlopesInstance) -> list[list[float]]:
        out = heuristic(instance.heads, instance.layers, instance.train_len)
        return [[float(s) for s in row] for row in out]

    def score(self, instance: SlopesInstance, solution: Any) -> dict[str, float]:
        if (not isinstance(solution, list) or len(solution) != instance.layers
                or not all(isinstance(row, list) and len(row) == instance.heads for row in solution)):
            raise InfeasibleSolution(f"{instance.name}: expected {instance.layers} lists of {instance.heads} slopes")
        if not all(isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s)
                   and 0.0 <= s <= MAX_SLOPE for row in solution for s in row):
            raise InfeasibleSolution(f"{instance.name}: slopes must be finite and in [0, {MAX_SLOPE}]")
        key = tuple(tuple(float(s) for s in row) for row in solution)
        return dict(_measure(key, instance.seed, instance.train_len, instance.steps))


def _baseline_on(job: tuple[str, str, int]) -> dict[str, float]:
    """One baseline on one instance, measured as the sandbox runs it (solve, JSON round trip, parent's score)."""
    name, instance_set, index = job
    torch.set_num_threads(1)
    ev = GrapeSlopes()
    ns: dict[str, Any] = {}
    exec(ev.baselines[name], ns)  # trusted: our own baselines
    instance = ev.load_instances(instance_set)[index]
    return ev.score(instance, json.loads(json.dumps(ev.solve(ns["slopes"], instance))))


def make_refs(jobs: int = 1) -> dict[str, Any]:
    """Every baseline's figures on both sets (``jobs`` processes, one torch thread each; every figure is one
    deterministic run, so the split changes nothing); the seed-to-seed noise of each baseline's ``acc_long``
    over the three seeds (train 0, test 1 and 2); the Spearman correlation of the baselines' train and test
    ranks."""
    from hifo.evaluators._seed_noise import baselines_per_instance, rank_agreement

    ev = GrapeSlopes()
    names = list(ev.baselines)
    out, results = baselines_per_instance(ev, _baseline_on, jobs)
    per_seed = {n: [v["acc_long"] for w, v in results.items() if w[0] == n] for n in names}
    out["_seed_noise"] = {n: {"acc_long_per_seed": [round(v, 6) for v in per_seed[n]],
                              "seed_sd": round(float(np.std(per_seed[n], ddof=1)), 6)} for n in names}
    out["_rank_agreement"] = rank_agreement(out, names, "acc_long")
    return out


if __name__ == "__main__":
    import sys

    REFS.parent.mkdir(parents=True, exist_ok=True)
    REFS.write_text(json.dumps(make_refs(int(sys.argv[1]) if len(sys.argv) > 1 else 1), indent=1, sort_keys=True) + "\n")
    print(REFS.read_text())
    print(f"wrote {REFS}")
