"""FMIP guidance slot: evolve the guidance weights and their schedule, with the trained model fixed.

The algorithm is FMIP's guided sampler (:mod:`hifo.problems.milp.fmip`, weights
``problems/milp/weights/fmip.pt`` trained by ``hifo data train-fmip``): at every flow
step the candidate's ``guidance(t, step, n_steps)`` returns the weights of the objective and of
the constraint violation in the energy that re-weights the integer candidates, the softmax
temperature of that re-weighting, and the step size of the gradient steps on the continuous
variables. The samples are then handed to HiGHS by the official neural diving (several dives,
each fixing a random 10 % of the integer variables to a sample's values, best kept; then the
full MIP from the best dive) under a CPU-time budget (the LP and the guidance's own calls count
against it; the network's forward passes do not: their number is the same for every guidance, their
CPU time is a fact about the machine). In the sandbox the guidance runs in a slot process of its own
(``slot_process``): it receives ``(t, step, n_steps)`` and returns four numbers; its CPU time there is read
by the algorithm's process from outside it (``SlotProxy.slot_cpu_s``) and charged like the calls' own. The
trusted side verifies the returned vector (rows, bounds, integrality) and computes the primal integral over
the CPU budget (primary) and the final primal gap against the stored best-known objective
(``evaluators/data/milp/best_known.json``, shared with ``milp_primal``). The integral's trajectory is
HiGHS's, timed on the CPU clock of the algorithm's process in the sandbox child, where no candidate code
runs: the candidate moves it only through the four numbers it returns and the CPU time it is charged. It
is still not the parent's clock (the parent could not time HiGHS's CPU), so the parent clamps each entry at
the verified objective.

Reference figures: both baselines measured in-process (:func:`hifo.evaluators.base.measured_figures`)
and stored in ``evaluators/data/milp/fmip_reference_figures.json``; ``python -m
hifo.evaluators.fmip_guidance`` rewrites them (rerun it after retraining the weights). CPU-time-limited
runs are not bit-reproducible (``load_dependent``): the tests compare with the declared, measured
``fitness_rtol``. The full-MIP stage never ends on the budget before it has a first incumbent (the time
it takes is charged by the primal integral), so "no solution" does not follow from the machine's load.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable


from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits, measured_figures
from hifo.problems.milp import (InfeasiblePoint, MILPInstance, check_solution, collection, primal_gap,
                                primal_integral)

DATA = Path(__file__).parent / "data" / "milp" / "best_known.json"
REFS = Path(__file__).parent / "data" / "milp" / "fmip_reference_figures.json"
MAKE_REFS = "python -m hifo.evaluators.fmip_guidance"
TIME_LIMIT = {"train": 1.0, "test": 2.0}  # CPU seconds per instance
N_STEPS, N_CANDIDATES, FIX_THRESHOLD, FIX_FRACTION = 10, 32, 0.0, 0.1
# accepted ranges of the guidance values (outside them the candidate fails: no silent clipping)
RANGES = {"weight_obj": (0.0, 1e3), "weight_viol": (0.0, 1e3), "temperature": (1e-3, 1e3),
          "step_size": (0.0, 10.0)}

_DOCSTRING = """Guidance of FMIP's flow-matching sampler at one step.

The sampler integrates the flow from t = 0 (noise) to t = 1 (a MILP solution) in n_steps steps.
At each step it draws 32 candidate integer assignments from the model and re-weights them by
softmax(-z / temperature), where z is the standardised energy (the official one)
    weight_obj * (c @ x, minimised) + weight_viol * ||relu(A x - b)||_2 (row violation);
continuous variables take gradient steps of size step_size on the same energy.

Args:
    t: flow time at the start of this step, in [0, 1).
    step: index of the step, 0 .. n_steps - 1.
    n_steps: number of steps.

Return:
    dict with float values for "weight_obj" (0..1000), "weight_viol" (0..1000),
    "temperature" (0.001..1000) and "step_size" (0..10).
"""

_TEMPLATE = FunctionTemplate(
    name="guidance",
    signature="def guidance(t: float, step: int, n_steps: int) -> dict:",
    docstring=_DOCSTRING,
    baseline_body=('    # The official sampler\'s constants (weight_c=0.002, weight_f=1, tau=1, step 0.1).\n'
                   '    return {"weight_obj": 0.002, "weight_viol": 1.0, "temperature": 1.0, '
                   '"step_size": 0.1}\n'),
)
_UNGUIDED_BODY = ('    # No guidance: plain flow-matching samples.\n'
                  '    return {"weight_obj": 0.0, "weight_viol": 0.0, "temperature": 1.0, '
                  '"step_size": 0.0}\n')


@lru_cache(maxsize=None)
def _load(instance_set: str) -> tuple[dict, ...]:
    if instance_set not in TIME_LIMIT:
        raise FMIPGuidance.unknown_instance_set(instance_set, ("train", "test"))
    refs = json.loads(DATA.read_text())
    return tuple({"milp": inst, "time_limit": TIME_LIMIT[instance_set],
                  "best_known": float(refs[inst.name]["objective"])}
                 for inst in collection(instance_set))


def _load_refs() -> dict[str, dict[str, dict[str, float]]]:
    return json.loads(REFS.read_text()) if REFS.exists() else {}


def checked_guidance(fn: Callable[..., Any]) -> Callable[[float, int, int], dict]:
    def wrapped(t: float, step: int, n_steps: int) -> dict:
        out = fn(float(t), int(step), int(n_steps))
        if not isinstance(out, dict):
            raise TypeError("guidance must return a dict")
        vals = {}
        for key, (lo, hi) in RANGES.items():
            v = float(out[key])
            if not (math.isfinite(v) and lo <= v <= hi):
                raise ValueError(f"guidance {key}={v} outside [{lo}, {hi}]")
            vals[key] = v
        return vals
    return wrapped


class FMIPGuidance(Evaluator):
    """Evolve FMIP's guidance schedule; metric: primal gap after the hand-off to HiGHS."""

    name = "fmip_guidance"
    description = (
        "Tune the guidance of FMIP, a flow-matching generative model of MILP solutions (a "
        "graph neural network over the variable-constraint graph; integer variables follow a "
        "discrete flow, continuous ones a linear-path flow). Write a schedule that, at each of "
        "the sampler's 10 steps, sets how strongly the objective and the constraint violation "
        "re-weight the candidate solutions, the softmax temperature of that re-weighting and "
        "the gradient step on continuous variables. The samples seed the HiGHS solver "
        "(neural diving: random 10% subsets of their integer values are fixed in short dives, "
        "then the full problem is solved from the best) under a CPU-time budget; aim for a "
        "low primal gap. Families: set cover, combinatorial auction, independent "
        "set, a general-integer cover, GISP, fixed-charge multi-commodity network flow."
    )
    direction = "minimize"
    primary_metric = "primal_integral"
    template = _TEMPLATE
    instance_sets = ("train", "test")
    limits = Limits(timeout_s=120.0, cpu_s=240, memory_mb=8192)  # torch needs address space
    # The budget is CPU seconds (HiGHS offers no deterministic work limit for a MIP: node limits leave
    # presolve and the root unbounded, 9 s on one train instance): scores depend on the machine and its
    # load. Measured spread of the per-instance primal integral across reruns on a loaded 2-core machine
    # (`python -m hifo.evaluators.determinism fmip_guidance`): up to 0.15 relative when the sampling still
    # counted against the budget (now it does not: a CPU hog moved the train aggregate by 0.002); declared: 0.3.
    load_dependent = True
    fitness_rtol = {"primal_integral": 0.3}
    baselines = {
        "official_defaults": _TEMPLATE.baseline_source(),
        "unguided": _TEMPLATE.source(_UNGUIDED_BODY),
    }
    # Measured in-process with the committed weights and stored as data (``python -m
    # hifo.evaluators.fmip_guidance`` rewrites it); tests/evaluators/test_fmip_guidance.py re-checks
    # them within the declared fitness_rtol (CPU-time-limited runs are not bit-reproducible).
    reference_figures = _load_refs()
    tags = ("milp", "flow matching", "fmip", "guidance", "highs")
    # issue 28: the candidate in a process of its own, a fresh one per instance (sandbox/_slotproc.py); 40 calls
    # per instance (4 samples x 10 steps). Its CPU time there is read from outside it and charged to the budget.
    slot_process = True

    def load_instances(self, instance_set: str) -> list[dict]:
        return list(_load(instance_set))

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: dict) -> dict[str, Any]:
        import torch  # imported in the child only: the parent never needs torch

        from hifo.problems.milp import fmip

        torch.set_num_threads(1)
        net = _model()
        sample, res = fmip.fmip_solve(net, instance["milp"], time_limit=instance["time_limit"],
                                      n_steps=N_STEPS, n_candidates=N_CANDIDATES,
                                      guidance=checked_guidance(heuristic),
                                      fix_threshold=FIX_THRESHOLD, fix_fraction=FIX_FRACTION,
                                      seed=0, charge_sampling=False, slot_cpu=lambda: _slot_cpu(heuristic))
        return {"x": None if res.x is None else res.x.tolist(), "stage": res.stage,
                "n_fixed": res.n_fixed,
                "trajectory": [[float(t), float(o)] for t, o in res.trajectory],
                "sample_violation": float(instance["milp"].total_violation(sample.values))}

    def instance_time_limit(self, instance: dict) -> float:
        """Enforced by the parent: 3x the solver's budget, plus 10 s for loading the model on the
        first instance of a job (measured in the child around each solve; see issue 13)."""
        return 3.0 * float(instance["time_limit"]) + 10.0

    def score(self, instance: dict, solution: Any) -> dict[str, float]:
        inst: MILPInstance = instance["milp"]
        if not isinstance(solution, dict) or solution.get("x") is None:
            raise InfeasibleSolution(f"{inst.name}: no solution returned")
        try:
            x = check_solution(inst, solution["x"])
        except InfeasiblePoint as exc:
            raise InfeasibleSolution(f"{inst.name}: {exc}") from None
        obj = inst.objective(x)
        ref = min(obj, instance["best_known"])
        traj = []  # child-timed, so informative; no entry may claim better than the verified point
        for item in solution.get("trajectory") or []:
            t, o = float(item[0]), float(item[1])
            if math.isfinite(t) and math.isfinite(o):
                traj.append((t, max(o, obj)))
        horizon = float(instance["time_limit"])
        integral = primal_integral(sorted(traj) + [(horizon, obj)], ref, horizon) / horizon
        return {"primal_integral": integral, "primal_gap": primal_gap(obj, ref),
                "objective": inst.user_objective(x),
                "fixed_fraction": float(solution.get("n_fixed", 0)) / max(int(inst.is_int.sum()), 1),
                "fallback": float(solution.get("stage") != "dive")}


def _slot_cpu(heuristic: Any) -> float:
    """CPU seconds the sandbox's slot process has spent (0 for an in-process function; the same rule as
    ``milp_primal``'s, kept local: evaluators import only problems/ and evaluators.base). The caller charges
    its growth during each call, clamped at 0, so only the proxy's own clock counts."""
    try:
        return float(getattr(heuristic, "slot_cpu_s", 0.0))
    except Exception:
        return 0.0


@lru_cache(maxsize=1)
def _model():
    from hifo.problems.milp import fmip

    if not fmip.WEIGHTS.exists():
        raise FileNotFoundError(f"{fmip.WEIGHTS} is missing; run `hifo data train-fmip`")
    return fmip.load_model()


def make_refs(instance_sets: tuple[str, ...] = ("train",)) -> dict[str, dict[str, dict[str, float]]]:
    """Both baselines' aggregate figures on ``instance_sets``, measured in-process the way the sandbox runs them."""
    import torch

    torch.set_num_threads(1)
    ev = FMIPGuidance()
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, source in ev.baselines.items():
        ns: dict[str, Any] = {}
        exec(source, ns)  # trusted: our own baselines
        out[name] = {s: measured_figures(ev, ns[ev.template.name], s) for s in instance_sets}
    return out


if __name__ == "__main__":
    import sys

    sets = tuple(sys.argv[1:]) or ("train",)
    REFS.parent.mkdir(parents=True, exist_ok=True)
    REFS.write_text(json.dumps(make_refs(sets), indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFS}")
