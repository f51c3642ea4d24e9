"""Evolving the server's aggregation rule in Byzantine-robust federated learning.

The algorithm is :func:`hifo.problems.byzantine_fl.run_fl`: federated softmax regression on digits,
20 clients with a Dirichlet(0.5) label split, 30 rounds; a share of the clients is malicious and
runs one attack (sign flip, ALIE, IPM, label flip). The candidate ``aggregate(updates, f, memory)``
turns each round's client updates (an (n, dim) array, nothing else: no data, no model, no client
identities beyond the row order, which is fixed across rounds) into the server step; ``f`` is the
number of malicious clients (told to the defender, as in the papers' baselines) and ``memory`` a
dict of the candidate's own, kept across the rounds of one run.

The child returns the server steps it took. The parent **replays** the deterministic run with
them: it recomputes every round's client updates itself, clips each step into the coordinate-wise
range of that round's updates (the algorithm does the same in the child, so an honest candidate
scores identically) and measures ``test_acc`` on the 400 held-out digits (primary, maximised) and
``train_loss`` (honest clients' cross-entropy). The child's metrics are never used.
Residual trust gap (as in :mod:`hifo.evaluators.lp_irls`): a candidate that broke the fence could
choose steps from data it is not given; the clip bounds every step by what the clients sent.
"""

from __future__ import annotations

import inspect
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits, measured_figures
from hifo.problems.byzantine_fl import RULES, FLConfig, run_fl

REFS = Path(__file__).parent / "data" / "byzantine_fl" / "reference_figures.json"
MAKE_REFS = "python -m hifo.evaluators.fl_aggregate"
_ATTACKS = ("sign_flip", "alie", "ipm", "label_flip")
# set -> (attack, fraction, seed): every instance its own seed, so its own client split, malicious clients and
# updates (a shared seed made the honest clients' round-0 updates identical across a set, and comparing them
# across instances gave the malicious rows away)
_SPECS = {
    "train": tuple((a, 0.3, i) for i, a in enumerate(_ATTACKS)),
    "test": tuple((a, fr, 100 + 4 * j + i) for j, fr in enumerate((0.1, 0.2, 0.4)) for i, a in enumerate(_ATTACKS)),
}

_DOCSTRING = """Aggregates one round of client updates into the server's model step (Byzantine-robust FL).

Some clients are malicious: they may send flipped, scaled, or subtly shifted updates (sign flip,
ALIE, inner-product manipulation) or train on wrong labels. Honest clients' data are label-skewed,
so honest updates differ too. The step you return is clipped into the coordinate-wise range of
the updates; the model is then moved by it. Goal: high test accuracy after 30 rounds.

Args:
    updates: (n_clients, dim) array, one row per client, the same client in the same row every round.
    f: the number of malicious clients (0 <= f < n_clients / 2).
    memory: a dict you own, empty at round 0 and kept across rounds (store arrays or numbers in it).

Return:
    (dim,) finite array: the server step.
"""


def _body(fn: Callable[..., Any]) -> str:
    """The body of a rule in problems/byzantine_fl/_rules.py (its lines after the ``def``)."""
    lines = inspect.getsource(fn).splitlines(keepends=True)
    return textwrap.indent(textwrap.dedent("".join(lines[1:])), "    ")


_TEMPLATE = FunctionTemplate(
    name="aggregate",
    signature="def aggregate(updates: np.ndarray, f: int, memory: dict) -> np.ndarray:",
    docstring=_DOCSTRING,
    baseline_body=_body(RULES["fedlaw"]),
)


@dataclass(frozen=True)
class FLInstance:
    name: str
    attack: str
    fraction: float
    seed: int

    @property
    def config(self) -> FLConfig:
        return FLConfig(self.attack, self.fraction, self.seed)


def _load_refs() -> dict[str, dict[str, dict[str, float]]]:
    return json.loads(REFS.read_text()) if REFS.exists() else {}


class FLAggregate(Evaluator):
    """Test accuracy of federated digits classification under Byzantine attacks, by aggregation rule.

    Instance sets: ``train`` (the four attacks at 30 % malicious, seeds 0-3) and ``test`` (the four
    attacks at 10, 20 and 40 %, seeds 100-111): each instance its own client split and malicious clients.
    The slot runs in a fresh process per instance, so ``memory`` (or anything else it keeps) never
    survives from one instance to the next. Per instance ``test_acc``, ``train_loss``.
    """

    name = "fl_aggregate"
    description = (
        "Byzantine-robust federated learning: 20 clients with label-skewed data train a digits classifier "
        "for 30 rounds; 10-40 % of them are malicious (sign flip, ALIE, inner-product manipulation, label "
        "flip). Design the server's aggregation rule: from one round's client updates (an array, one row "
        "per client, plus the number f of malicious clients and a memory dict kept across rounds) return "
        "the model step. Maximise the final test accuracy. FedAvg collapses under sign flip; median-type "
        "rules lose accuracy on heterogeneous honest clients; learned client weights can do both.")
    direction = "maximize"
    primary_metric = "test_acc"
    template = _TEMPLATE
    instance_sets = ("train", "test")
    limits = Limits(timeout_s=120.0, cpu_s=180, memory_mb=2048)
    baselines = {name: _TEMPLATE.source(_body(fn)) for name, fn in RULES.items()}
    # Measured in-process and stored as data (``python -m hifo.evaluators.fl_aggregate`` rewrites it);
    # tests/evaluators/test_fl_aggregate.py re-checks them.
    reference_figures = _load_refs()
    slot_process = True  # 30 calls per instance: a process of its own, a fresh one per instance (sandbox/_slotproc.py)
    tags = ("federated learning", "byzantine robustness", "aggregation", "classification")

    def load_instances(self, instance_set: str) -> list[FLInstance]:
        if instance_set not in _SPECS:
            raise self.unknown_instance_set(instance_set, _SPECS)
        return [FLInstance(f"{a}/{int(round(100 * fr))}pct/seed{s}", a, fr, s) for a, fr, s in _SPECS[instance_set]]

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: FLInstance) -> dict[str, Any]:
        rule = heuristic
        keeping = getattr(heuristic, "call_returning_args", None)  # a slot process (sandbox/_slotproc.py)
        if keeping is not None:
            def rule(updates: np.ndarray, f: int, memory: dict) -> Any:
                # the slot's memory lives here, between the rounds; it comes back after each call
                value, args, _ = keeping(updates, f, memory)
                kept = args[2] if len(args) == 3 else None
                if not isinstance(kept, dict):
                    raise ValueError("memory must stay a dict")
                memory.clear()
                memory.update(kept)
                return value
        run = run_fl(instance.config, rule)
        return {"aggregates": [a.tolist() for a in run.aggregates]}

    def score(self, instance: FLInstance, solution: Any) -> dict[str, float]:
        steps = solution.get("aggregates") if isinstance(solution, dict) else None
        cfg = instance.config
        if not isinstance(steps, list) or len(steps) != cfg.rounds:
            raise InfeasibleSolution(f"{instance.name}: the solution must hold {cfg.rounds} server steps")
        try:
            arrays = [np.asarray(s, dtype=float) for s in steps]
            run = run_fl(cfg, aggregates=arrays)
        except (ValueError, TypeError) as exc:
            raise InfeasibleSolution(f"{instance.name}: {exc}") from None
        return {"test_acc": run.test_acc, "train_loss": run.train_loss}


def make_refs() -> dict[str, dict[str, dict[str, float]]]:
    """Every baseline's aggregate figures on every set, measured in-process the way the sandbox runs them."""
    ev = FLAggregate()
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, fn in RULES.items():
        out[name] = {}
        for instance_set in ev.instance_sets:
            out[name][instance_set] = measured_figures(ev, fn, instance_set)
    return out


if __name__ == "__main__":
    REFS.parent.mkdir(parents=True, exist_ok=True)
    REFS.write_text(json.dumps(make_refs(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFS}")
