"""Evolving the burn-in schedule of truncated BPTT for an RNN simulation model.

The algorithm is :func:`hifo.problems.tbptt.train_tbptt`: an LSTM (12 units; the official code's
cell) learns a simulated
Wiener-Hammerstein system from random windows of the training record, each started from a zero
state; the loss counts only the steps after the burn-in. The candidate
``burn_in(epoch, epochs, window, losses)`` picks each epoch's burn-in from the epoch counters, the
window length and the mean training loss of the finished epochs (nothing else: no data, no model).

The child returns the burn-ins it chose. The parent checks them (one int in ``[0, window)`` per
epoch) and **replays** the deterministic training run (same seed, same windows) with exactly
those burn-ins, then measures ``test_rmse`` of the free-run simulation on the held-out record
(primary, minimised) and ``train_rmse``. Every schedule gets the same number of Adam steps on the
same windows, so the burn-in changes only which steps count in the loss. Nothing the child reports
besides the schedule is used. Every set averages over data seeds and initialisation seeds (train:
2 x 3 runs at window 32; test: 2 x 3 x windows 32 and 48). Scale, stated: windows of 32 / 48, not
the paper's 100-1000, 300 Adam steps on 1,000 simulated samples (CPU budget); the real
Wiener-Hammerstein / Silverbox records are not shipped.

Secret test set (issue 28): ``test`` is drawn per evaluator object from a secret
(:meth:`Evaluator.secret_seed`): its two data seeds (the simulated records) are secret, and so is every training
seed (``1000 * data seed + init``), so neither the records nor the windows an instance trains on can be rebuilt
from the source. From the published seeds (data 2 and 3) a rule can recognise an instance by the loss of its first
epoch and play a burn-in schedule picked offline for it: ``tests/evaluators/attacks/tbptt_seed_table.py`` beats
every baseline there (the seed-to-seed spread, 0.037 RMSE, is ten times the gaps between the baselines). A draw
costs nothing measurable (two 63-bit keyed hashes; the records are simulated when first trained on, 0.05 s each);
the reference is no stored figure but the baselines themselves, scored on the same draw. The published set stays
available as ``test_published`` (and as ``test`` with ``public_seeds = True``): the set of the stored figures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.tbptt import make_data, train_stateful, train_tbptt
from hifo.problems._repro import one_torch_thread

REFS = Path(__file__).parent / "data" / "tbptt" / "reference_figures.json"
EPOCHS, STEPS, BATCH, HIDDEN, LR = 30, 10, 32, 12, 2e-2
CELL = "lstm"  # as in the official code (jdschille/rnn-training); GRU before issue 29
# set -> (data seed, initialisation seed, window): the fitness is averaged over data and initialisation
# seeds (issue 29: one seed's swing exceeded the gaps between schedules)
_SPECS = {"train": tuple((d, i, 32) for d in (0, 1) for i in (0, 1, 2)),
          "test": tuple((d, i, w) for d in (2, 3) for i in (0, 1, 2) for w in (32, 48))}

_DOCSTRING = """Chooses the burn-in of truncated BPTT for the next training epoch of an LSTM system model.

Every gradient step runs the LSTM from a zero state over windows of `window` consecutive samples;
the first `burn_in` steps of each window are not counted in the loss (the state is still wrong
there, since the true system has been running for a long time). Larger burn-in: fewer steps
counted, but the ones counted are not biased by the wrong initial state. Goal: low test error of
the trained model simulating a long held-out record.

Args:
    epoch: this epoch, 0 .. epochs - 1.
    epochs: the number of epochs.
    window: the window length (steps per training subsequence).
    losses: the mean training loss of each finished epoch (empty at epoch 0).

Return:
    an int in [0, window): the burn-in for this epoch.
"""

_TEMPLATE = FunctionTemplate(
    name="burn_in",
    signature="def burn_in(epoch: int, epochs: int, window: int, losses: list) -> int:",
    docstring=_DOCSTRING,
    baseline_body="    # A fixed burn-in of half the window.\n    return window // 2\n",
)
_BODIES = {
    "no_burn_in": "    # Truncated BPTT without burn-in: every step counts.\n    return 0\n",
    "quarter": "    # A fixed burn-in of a quarter of the window.\n    return window // 4\n",
    "ramp": "    # Start without burn-in, grow linearly to 3/4 of the window.\n"
            "    return int(0.75 * (window - 1) * epoch / max(epochs - 1, 1))\n",
}


@dataclass(frozen=True)
class BurnInInstance:
    name: str
    seed: int      # data seed
    window: int
    init: int = 0  # initialisation (and window-sampling) seed


@lru_cache(maxsize=4)
def _data(seed: int) -> tuple[np.ndarray, ...]:
    return tuple(make_data(seed, n_train=1000, n_test=500))


def _train(instance: BurnInInstance, **kw: Any) -> Any:
    return train_tbptt(_data(instance.seed), window=instance.window, epochs=EPOCHS, steps=STEPS, batch=BATCH,
                       hidden=HIDDEN, lr=LR, seed=1000 * instance.seed + instance.init, cell=CELL, **kw)


def stateful_figures(instance_set: str) -> dict[str, float]:
    """The carried-state reference (not a burn-in schedule, so not a slot baseline): mean test /
    train RMSE of :func:`hifo.problems.tbptt.train_stateful` over the set, same steps and seeds."""
    runs = [train_stateful(_data(s), window=w, epochs=EPOCHS, steps=STEPS, batch=BATCH, hidden=HIDDEN, lr=LR,
                           seed=1000 * s + i, cell=CELL) for s, i, w in _SPECS[instance_set]]
    return {"test_rmse": float(np.mean([r.test_rmse for r in runs])),
            "train_rmse": float(np.mean([r.train_rmse for r in runs]))}


def _load_refs() -> dict[str, dict[str, dict[str, float]]]:
    return json.loads(REFS.read_text()) if REFS.exists() else {}


class TBPTTBurnIn(Evaluator):
    """Held-out simulation error of an LSTM trained by truncated BPTT under an evolved burn-in schedule."""

    name = "tbptt_burnin"
    description = (
        "Truncated backpropagation through time for an LSTM that learns a simulated Wiener-Hammerstein "
        "system: every step trains on short windows started from a zero state, and the first burn-in steps "
        "of each window are left out of the loss. Choose the burn-in for each epoch (from the epoch, the "
        "window length and the training losses so far) to minimise the RMSE of the trained model simulating "
        "a long held-out record.")
    direction = "minimize"
    primary_metric = "test_rmse"
    template = _TEMPLATE
    limits = Limits(timeout_s=300.0, cpu_s=400, memory_mb=4096)
    baselines = {"half": _TEMPLATE.source(), **{k: _TEMPLATE.source(v) for k, v in _BODIES.items()}}
    # the carried-state reference (stored beside the figures, not a slot baseline: it is no burn-in schedule)
    stateful_reference = {k: v for k, v in _load_refs().pop("stateful_reference", {}).items()}
    # Measured in-process, one torch thread, stored as data (``python -m hifo.evaluators.tbptt_burnin``).
    # (the "test" figures are those of the published seeds: also stored under "test_published")
    reference_figures = {k: {**v, "test_published": v["test"]} if "test" in v else v
                         for k, v in _load_refs().items() if k in ("half", *_BODIES)}
    seed_noise = _load_refs().get("_seed_noise", {})
    slot_process = True  # issue 28: the candidate in a process of its own, a fresh one per instance
    tags = ("training", "recurrent networks", "system identification", "torch")

    instance_sets = ("train", "test", "test_published")
    # the test instances' data seeds (hence their records and training seeds) are drawn per evaluator object from
    # a secret: from the published data seeds 2 and 3 a rule can fingerprint an instance by its first epoch's loss
    # and answer from a table of schedules tuned offline on it (tests/evaluators/attacks/tbptt_seed_table.py)
    secret_sets = ("test",)

    def load_instances(self, instance_set: str) -> list[BurnInInstance]:
        if instance_set == "test_published":
            instance_set = "test"
        elif instance_set == "test" and self.seeds_secret("test"):
            # a 31-bit data seed: torch.manual_seed and numpy take 1000 * seed + init; 2^31 records, no table
            published = sorted({s for s, _, _ in _SPECS["test"]})
            data = {s: self.secret_seed(s, "test", "data", s) % 2 ** 31 for s in published}
            return [BurnInInstance(f"wh/secret{published.index(s)}/init{i}/window{w}", data[s], w, i)
                    for s, i, w in _SPECS["test"]]
        if instance_set not in _SPECS:
            raise self.unknown_instance_set(instance_set)
        return [BurnInInstance(f"wh/data{s}/init{i}/window{w}", s, w, i) for s, i, w in _SPECS[instance_set]]

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: BurnInInstance) -> dict[str, Any]:
        torch.set_num_threads(1)

        def rule(epoch: int, losses: list[float]) -> int:
            return heuristic(epoch, EPOCHS, instance.window, losses)

        return {"burn_ins": _train(instance, burn_in=rule).burn_ins}

    def score(self, instance: BurnInInstance, solution: Any) -> dict[str, float]:
        ms = solution.get("burn_ins") if isinstance(solution, dict) else None
        if (not isinstance(ms, list) or len(ms) != EPOCHS
                or not all(isinstance(m, int) and not isinstance(m, bool) and 0 <= m < instance.window for m in ms)):
            raise InfeasibleSolution(f"{instance.name}: the solution must hold {EPOCHS} burn-ins in "
                                     f"[0, {instance.window})")
        with one_torch_thread():  # one thread, taking turns with parallel scorers (issue 26)
            run = _train(instance, burn_ins=ms)
        return {"test_rmse": run.test_rmse, "train_rmse": run.train_rmse, "mean_burn_in": float(np.mean(ms))}


def make_refs() -> dict[str, Any]:
    ev = TBPTTBurnIn()
    ev.public_seeds = True  # the stored figures are those of the published seeds
    out: dict[str, Any] = {}
    noise: dict[str, dict[str, dict[str, float]]] = {}
    torch.set_num_threads(1)
    for name, source in ev.baselines.items():
        ns: dict[str, Any] = {}
        exec(source, ns)  # trusted: our own baselines
        out[name] = {}
        for instance_set in _SPECS:
            per = [ev.score(i, json.loads(json.dumps(ev.solve(ns["burn_in"], i))))
                   for i in ev.load_instances(instance_set)]
            out[name][instance_set] = {k: round(v, 6) for k, v in ev.aggregate(per).items()}
            # seed-to-seed noise: the sd of test_rmse over the set's (data, init) seeds, and the sd of their mean
            sd = float(np.std([r["test_rmse"] for r in per], ddof=1))
            noise.setdefault(name, {})[instance_set] = {"seed_sd": round(sd, 6),
                                                        "sd_of_mean": round(sd / np.sqrt(len(per)), 6)}
    out["stateful_reference"] = {s: {k: round(v, 6) for k, v in stateful_figures(s).items()} for s in _SPECS}
    out["_seed_noise"] = noise
    return out


if __name__ == "__main__":
    REFS.parent.mkdir(parents=True, exist_ok=True)
    REFS.write_text(json.dumps(make_refs(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFS}")
