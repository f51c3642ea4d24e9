"""Evolving GrAPE's anchor schedule: when to spend a true backprop step.

GrAPE (:mod:`hifo.problems.grape`) trains every hidden layer in parallel from its own aligned feedback
matrix; an *anchor* step replaces one mini-batch's update by exact backprop. The candidate
``take_anchor(step, total_steps, align, losses, anchors_used, budget)`` decides before each step
whether to anchor; it sees only the step counters, the recent per-layer alignment cosines
``cos(B_l, J_hat_l)`` (from the JVP estimates, no backprop needed), the recent mini-batch losses and
the anchors used so far. The trusted loop grants at most ``budget`` anchors.

The child returns the list of anchor steps it took. The parent counts them against the budget and
**replays** the deterministic training run (same seed, same mini-batches, same tangents) with exactly
those anchor steps, then measures on held-out digits: ``test_loss`` (cross-entropy; primary, minimised),
``test_acc``,
``anchors``, ``layer_parallel_fraction`` (steps without a backward pass through the network) and
``final_grad_cos`` (the cosine of the last update with the true gradient). Nothing the child reports
besides the schedule is used, so a candidate cannot report its own fitness.

Secret test set (issue 28): ``test``'s two training seeds are drawn per evaluator object from a secret
(:meth:`Evaluator.secret_seed`); model, steps and budget are the published set's. The slot sees the run's
mini-batch losses, so from the published seeds (2 and 3) a rule can recognise its run by the first loss it is shown
(at step 1) and play the schedule that did best on that very run (``tests/evaluators/attacks/grape_seed_schedule.py``:
back-loaded anchors on seed 2, none on seed 3, mean ``test_loss`` 0.2551 against the best baseline's (uniform)
0.2645, more than half the baselines' whole spread, 0.2645-0.2861; on one secret draw it is none's 0.2179, there the
best baseline). A draw costs nothing measurable (two keyed hashes; under 1 ms); there is no
reference to compute: ``test_loss`` is the trained network's own. The published seeds stay available as
``test_published`` (and as ``test`` with ``public_seeds = True``): the set of the stored figures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.grape import train
from hifo.problems._repro import one_torch_thread

_DOCSTRING = """Decides whether GrAPE takes a backprop anchor step at this training step.

GrAPE trains each hidden layer locally from a feedback matrix B_l aligned with the network's
Jacobian by forward-mode estimates; an anchor step uses the exact backprop gradient on this
mini-batch instead (costly: a full backward pass). At most `budget` anchors are granted.

Args:
    step: this step, 0 .. total_steps - 1.
    total_steps: the length of the run.
    align: up to 20 most recent steps, each a list of per-hidden-layer cosines between B_l and the
        JVP estimate of the Jacobian (near 1: the feedback is well aligned; noisy per step).
    losses: up to 50 most recent mini-batch training losses.
    anchors_used: anchors taken so far.
    budget: the most anchors the run may take.

Return:
    True to take an anchor step now, else False.
"""

_TEMPLATE = FunctionTemplate(
    name="take_anchor",
    signature="def take_anchor(step: int, total_steps: int, align: list, losses: list, anchors_used: int, "
              "budget: int) -> bool:",
    docstring=_DOCSTRING,
    baseline_body="    # Spread the budget uniformly over the run.\n"
                  "    every = max(1, total_steps // max(budget, 1))\n"
                  "    return step % every == 0\n",
)
_BODIES = {
    "none": "    # Pure GrAPE: never anchor.\n    return False\n",
    "front_loaded": "    # Spend the whole budget at the start, while the feedback is still unaligned.\n"
                    "    return step < budget\n",
    "back_loaded": "    # Spend the whole budget at the end, to correct what drifted during the run.\n"
                   "    return step >= total_steps - budget\n",
}


def _source(body: str) -> str:
    return f"{_TEMPLATE.imports}\n\n\n{_TEMPLATE.render(body)}"


@dataclass(frozen=True)
class AnchorInstance:
    name: str
    model: str
    seed: int
    steps: int
    budget: int


# issue 30: the 8-layer MLP (64-wide tanh, where DFA's fixed feedback falls behind and GrAPE's feedback has to
# keep up with the weights), 200 steps, a budget of 5 % anchors, two training seeds per set. Earlier instances
# (2-layer MLP/CNN, 60-80 steps) never drifted, so anchors only acted as a backprop warm-up.
_SPECS = {"train": (("mlp8", 0, 200, 10), ("mlp8", 1, 200, 10)),
          "test": (("mlp8", 2, 200, 10), ("mlp8", 3, 200, 10))}
REFS = Path(__file__).parent / "data" / "grape" / "reference_figures.json"


def _load_refs() -> dict[str, Any]:
    return json.loads(REFS.read_text()) if REFS.exists() else {}


class GrAPEAnchor(Evaluator):
    """Held-out loss of GrAPE training on digits under an evolved backprop-anchor schedule."""

    name = "grape_anchor"
    description = ("Schedule the backprop anchor steps of GrAPE, a backprop-free trainer whose layers learn "
                   "in parallel from feedback matrices aligned with the Jacobian by forward-mode estimates. "
                   "Each step you decide whether to spend one of a few anchor steps (an exact backprop "
                   "update); minimise the held-out cross-entropy of the trained digits classifier.")
    direction = "minimize"
    primary_metric = "test_loss"
    template = _TEMPLATE
    instance_sets: tuple[str, ...] = ("train", "test", "test_published")
    limits = Limits(timeout_s=300.0, cpu_s=240, memory_mb=8192)
    baselines = {"uniform": _source(_TEMPLATE.baseline_body), **{k: _source(v) for k, v in _BODIES.items()}}
    # Measured in-process, one torch thread, stored as data (``python -m hifo.evaluators.grape_anchor``;
    # train figures re-checked by tests/evaluators/test_grape_anchor.py).
    # the "test" figures are those of the published seeds: also stored under "test_published"
    reference_figures = {k: {**v, "test_published": v["test"]} for k, v in _load_refs().items() if not k.startswith("_")}
    seed_noise = _load_refs().get("_seed_noise", {})
    rank_agreement = _load_refs().get("_rank_agreement", {})
    slot_process = True  # issue 28: the candidate in a process of its own, a fresh one per instance
    tags = ("training", "feedback-alignment", "forward-gradient", "torch")
    # the test runs' training seeds are drawn per evaluator object from a secret: from the published seeds a rule can
    # recognise its run by its first loss and play the schedule that did best on that very run
    secret_sets = ("test",)

    def load_instances(self, instance_set: str) -> list[AnchorInstance]:
        secret = instance_set == "test" and self.seeds_secret("test")
        if instance_set == "test_published":
            instance_set = "test"
        if instance_set not in _SPECS:
            raise self.unknown_instance_set(instance_set)
        if secret:
            return [AnchorInstance(f"{m}/secret{j}", m, self.secret_seed(s, "test", j), n, b)
                    for j, (m, s, n, b) in enumerate(_SPECS[instance_set])]
        return [AnchorInstance(f"{m}/seed{s}", m, s, n, b) for m, s, n, b in _SPECS[instance_set]]

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: AnchorInstance) -> dict[str, Any]:
        torch.set_num_threads(1)

        def rule(step: int, total: int, align: list, losses: list, used: int) -> bool:
            out = heuristic(step, total, align, losses, used, instance.budget)
            if not isinstance(out, (bool, np.bool_, int, np.integer)) or out not in (0, 1):
                raise ValueError(f"take_anchor must return a bool, got {type(out).__name__} {out!r}")
            return bool(out)

        run, _ = train("grape", instance.model, instance.steps, instance.seed, anchor_rule=rule,
                       budget=instance.budget, log_every=0)
        return {"anchors": run.anchors}

    def score(self, instance: AnchorInstance, solution: Any) -> dict[str, float]:
        anchors = solution.get("anchors") if isinstance(solution, dict) else None
        if not isinstance(anchors, list) or not all(isinstance(a, int) and not isinstance(a, bool) for a in anchors):
            raise InfeasibleSolution(f"{instance.name}: the solution must be {{'anchors': [int, ...]}}")
        if len(set(anchors)) != len(anchors) or any(not 0 <= a < instance.steps for a in anchors):
            raise InfeasibleSolution(f"{instance.name}: anchor steps must be distinct and in [0, {instance.steps})")
        if len(anchors) > instance.budget:
            raise InfeasibleSolution(f"{instance.name}: {len(anchors)} anchors exceed the budget {instance.budget}")
        with one_torch_thread():  # one thread, taking turns with parallel scorers (issue 26)
            run, _ = train("grape", instance.model, instance.steps, instance.seed, anchor_steps=anchors,
                           log_every=instance.steps - 1)
        d = run.to_dict()
        return {"test_acc": run.test_acc, "test_loss": run.test_loss, "anchors": float(len(anchors)),
                "layer_parallel_fraction": d["layer_parallel_fraction"],
                "final_grad_cos": float(run.curve[-1]["grad_cos"])}


def _baseline_on(job: tuple[str, str, int]) -> dict[str, float]:
    """One baseline on one instance, measured as the sandbox runs it (solve, JSON round trip, parent's replay)."""
    name, instance_set, index = job
    torch.set_num_threads(1)
    ev = GrAPEAnchor()
    ev.public_seeds = True  # the stored figures are the published seeds'
    ns: dict[str, Any] = {}
    exec(ev.baselines[name], ns)  # trusted: our own baselines
    instance = ev.load_instances(instance_set)[index]
    return ev.score(instance, json.loads(json.dumps(ev.solve(ns["take_anchor"], instance))))


def make_refs(jobs: int = 1) -> dict[str, Any]:
    """Every baseline's figures on both sets (``jobs`` processes, one torch thread each; every figure is one
    deterministic run, so the split changes nothing); per seed, each baseline's ``test_loss`` and its difference
    from ``none`` (no anchors, the trivial answer) with their seed-to-seed standard deviations; the Spearman
    correlation of the baselines' train and test ranks."""
    from hifo.evaluators._seed_noise import baselines_per_instance, rank_agreement

    ev = GrAPEAnchor()
    ev.public_seeds = True  # the stored figures are the published seeds'
    ev.instance_sets = ("train", "test")  # test_published is test with public seeds: measured once
    names = list(ev.baselines)
    out, results = baselines_per_instance(ev, _baseline_on, jobs)
    per_seed = {n: [v["test_loss"] for w, v in results.items() if w[0] == n] for n in names}
    diff = {n: [a - b for a, b in zip(per_seed[n], per_seed["none"])] for n in names}
    out["_seed_noise"] = {n: {"test_loss_per_seed": [round(v, 6) for v in per_seed[n]],
                              "seed_sd": round(float(np.std(per_seed[n], ddof=1)), 6),
                              "minus_none_per_seed": [round(v, 6) for v in diff[n]],
                              "minus_none_sd": round(float(np.std(diff[n], ddof=1)), 6)} for n in names}
    out["_rank_agreement"] = rank_agreement(out, names, "test_loss")
    return out


if __name__ == "__main__":
    import sys

    REFS.parent.mkdir(parents=True, exist_ok=True)
    REFS.write_text(json.dumps(make_refs(int(sys.argv[1]) if len(sys.argv) > 1 else 1), indent=1, sort_keys=True) + "\n")
    print(REFS.read_text())
    print(f"wrote {REFS}")
