"""``hifo new-problem NAME``: a working evaluator skeleton (a greedy 0/1 knapsack whose item-scoring
rule is the heuristic slot) and a pytest file for it. Use it at once, without packaging:

    hifo evaluate --problem NAME.py:ClassName --heuristic my_rule.py
    hifo run --problem NAME.py:ClassName

then replace the knapsack with your own algorithm.
"""

from __future__ import annotations

from pathlib import Path

EVALUATOR = '''"""{cls}: a hifo evaluator written by `hifo new-problem {name}`. Replace the knapsack below by your
problem: load_instances (trusted), solve (runs in the sandbox with the candidate heuristic), score
(trusted: check the solution, then measure it). Use it with --problem {name}.py:{cls}."""

import random

from hifo.evaluators import Evaluator, FunctionTemplate, InfeasibleSolution


class {cls}(Evaluator):
    name = "{name}"
    description = ("Greedy 0/1 knapsack: the heuristic scores each item; items are taken by decreasing "
                   "score while they fit. Maximise the total value packed.")
    direction = "maximize"
    primary_metric = "value"
    template = FunctionTemplate(
        name="score_item",
        signature="def score_item(value: float, weight: float, capacity_left: float) -> float:",
        docstring="Return a priority for taking this item next (higher first).",
        baseline_body="    return value / weight\\n",
        imports="import math")
    instance_sets = ("train", "test")
    baselines = {{"ratio": "import math\\n\\n\\ndef score_item(value, weight, capacity_left):\\n"
                            "    return value / weight\\n"}}

    def load_instances(self, instance_set):
        if instance_set not in self.instance_sets:
            raise KeyError(instance_set)
        rng = random.Random(0 if instance_set == "train" else 1)
        out = []
        for _ in range(8):
            n = rng.randint(20, 40)
            w = [rng.randint(1, 30) for _ in range(n)]
            v = [rng.randint(1, 50) for _ in range(n)]
            out.append({{"w": w, "v": v, "cap": sum(w) // 3}})
        return out

    @staticmethod
    def solve(heuristic, instance):
        left, chosen = instance["cap"], []
        items = sorted(range(len(instance["w"])),
                       key=lambda i: -float(heuristic(instance["v"][i], instance["w"][i], instance["cap"])))
        for i in items:
            if instance["w"][i] <= left:
                chosen.append(i)
                left -= instance["w"][i]
        return chosen

    def score(self, instance, solution):
        if len(set(solution)) != len(solution) or any(not 0 <= i < len(instance["w"]) for i in solution):
            raise InfeasibleSolution("items must be distinct valid indices")
        if sum(instance["w"][i] for i in solution) > instance["cap"]:
            raise InfeasibleSolution("over capacity")
        return {{"value": float(sum(instance["v"][i] for i in solution))}}
'''

TEST = '''"""Tests of {cls}, written by `hifo new-problem {name}`. Run: pytest {test_file}"""

import os

import pytest

from hifo.agents.evaluation import CandidateEvaluator
from hifo.evaluators import get_evaluator
from hifo.sandbox import LocalExecutor

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "{name}.py") + ":{cls}"


def test_baseline_scores_in_the_sandbox():
    ev = get_evaluator(SPEC)
    with LocalExecutor(max_workers=1, isolation="minimal") as ex:
        score = CandidateEvaluator(ev, "train", ex).evaluate(ev.baselines["ratio"])
    assert score.feasible, score.error
    assert score.metrics["value"] > 0


def test_infeasible_solution_is_rejected():
    from hifo.evaluators import InfeasibleSolution

    ev = get_evaluator(SPEC)
    inst = ev.load_instances("train")[0]
    with pytest.raises(InfeasibleSolution):
        ev.score(inst, list(range(len(inst["w"]))))
'''


def class_name(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_") if p) or "MyProblem"


def scaffold(name: str, directory: Path) -> tuple[Path, Path, str]:
    """Write ``NAME.py`` and ``test_NAME.py`` into ``directory``; refuses to overwrite."""
    if not name.isidentifier() or not name.islower():
        raise ValueError(f"problem name {name!r} must be a lower-case Python identifier, e.g. my_problem")
    cls = class_name(name)
    directory.mkdir(parents=True, exist_ok=True)
    ev_file, test_file = directory / f"{name}.py", directory / f"test_{name}.py"
    for f in (ev_file, test_file):
        if f.exists():
            raise FileExistsError(f"{f} exists; not overwriting it")
    ev_file.write_text(EVALUATOR.format(name=name, cls=cls))
    test_file.write_text(TEST.format(name=name, cls=cls, test_file=test_file.name))
    return ev_file, test_file, cls
