"""OPTWVP service-time allocation (DeCoST stage 2) as a heuristic slot.

For a fixed route, the candidate rule returns one service duration per customer. The trusted
parent rebuilds the earliest schedule from those durations, checks every window, width and the
horizon itself (:func:`hifo.problems.optwvp.check_schedule`) and computes the profit; the metric is
the gap, in percent, to the LP optimum of the same route (HiGHS; equal to the paper's STO
procedure, which sorts customers by profit rate and serves each as long as the later windows
allow — the optimal rule the agent can rediscover).

Sets. ``train`` and ``test_published`` read their routes from stored data (``data/optwvp/refs.json``,
written by ``hifo data optwvp-refs``): for every instance of the ``optwvp_route`` sets (published
seeds), its best route and the density-greedy route, with their LP optima. ``test`` (issue 28,
"memorisation cannot pay") is drawn per evaluator object from a secret key
(:meth:`~hifo.evaluators.base.Evaluator.secret_seed`): from the published seeds a rule can rebuild
each route, fingerprint it by its inputs and answer the stored optimal service times
(``tests/evaluators/attacks/optwvp_service_published_optima.py``: a zero gap there). A draw makes
instances of ``optwvp_route``'s test sizes (20 x n=20, 20 x n=50, 10 x n=100) on seeds of its own and,
as the stored data, two routes of each: the MILP-optimal route
(:func:`hifo.evaluators.optwvp_route.draw_reference`: HiGHS to a proved optimum, the same whatever the
load; its safety time limit was never reached) and the density-greedy route, each with its LP optimum
(exact, HiGHS), so the reference of every drawn route is exact. One draw costs 23-30 s of CPU (68 s wall
at a load of 5 on the 2-core machine; the n = 100 MILPs are most of it), once per evaluator object.
``test`` with ``public_seeds = True`` is ``test_published``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.optwvp import InfeasibleRoute, OPTWVPInstance, check_route, check_schedule, \
    construct_route, density_scorer, generate_instance, optimal_service_lp

DATA_DIR = Path(__file__).parent / "data" / "optwvp"
REFS_PATH = DATA_DIR / "refs.json"


@dataclass(frozen=True, eq=False)
class ServiceTask:
    """A route of an instance, and the LP optimum of its service times."""

    name: str
    instance: OPTWVPInstance
    route: tuple[int, ...]
    lp_optimum: float


_DOCSTRING = """Allocates service time to the customers of a fixed OPTWVP route.

The vehicle leaves the depot at time 0, visits the customers in the given order and must
be back by the horizon. Service at customer j starts at
s_j = max(s_{j-1} + d_{j-1} + travel[j], tw_open[j]) (s_0 = travel[0] for the first one) and
must start no later than tw_close[j]; it may end after tw_close[j]. Serving customer j for
d_j earns profit_rate[j] * d_j.

Args:
    profit_rate: Profit per unit of service time of each customer, in route order (np.ndarray, k).
    travel: Travel times of the k + 1 legs depot -> 1st, ..., k-th -> depot (np.ndarray).
    tw_open: Earliest service start of each customer (np.ndarray, k).
    tw_close: Latest service start of each customer (np.ndarray, k).
    horizon: Time by which the vehicle must be back at the depot (float).

Return:
    Service durations d (np.ndarray of float, length k) with 0 <= d_j <= tw_close[j] - tw_open[j]
    such that every service starts by its tw_close and the vehicle is back by the horizon.
    The goal is to maximise sum(profit_rate * d).
"""

# The baseline: serve customers in route order, each as long as the later ones still allow.
_FORWARD_BODY = '''    k = len(profit_rate)
    d = np.zeros(k)
    latest = np.append(tw_close, horizon)  # latest start of each later node, then the return
    for i in range(k):
        start = 0.0
        for j in range(i + 1):
            start = max(start + travel[j] + (d[j - 1] if j else 0.0), tw_open[j])
        room = tw_close[i] - tw_open[i]
        reach = start
        for m in range(i + 1, k + 1):
            reach += travel[m] + (d[m - 1] if m - 1 > i else 0.0)
            room = min(room, latest[m] - reach)
        d[i] = max(0.0, room)
    return d
'''

_TEMPLATE = FunctionTemplate(
    name="allocate_service",
    signature=("def allocate_service(profit_rate: np.ndarray, travel: np.ndarray, tw_open: np.ndarray, "
               "tw_close: np.ndarray, horizon: float) -> np.ndarray:"),
    docstring=_DOCSTRING,
    baseline_body=_FORWARD_BODY,
)

_EQUAL_SHARE_BODY = '''    # Spread the idle time before the horizon evenly, capped by each window width.
    k = len(profit_rate)
    slack = horizon - max(0.0, float(np.sum(travel)))
    d = np.minimum(tw_close - tw_open, max(slack, 0.0) / max(k, 1))
    # shrink until the schedule is feasible
    for _ in range(60):
        t, ok = 0.0, True
        for j in range(k):
            t = max(t + travel[j], tw_open[j])
            ok &= t <= tw_close[j]
            t += d[j]
        if ok and t + travel[k] <= horizon:
            return d
        d = d * 0.8
    return np.zeros(k)
'''


@lru_cache(maxsize=None)
def _load(instance_set: str) -> tuple[ServiceTask, ...]:
    if instance_set == "test_published":
        instance_set = "test"
    if instance_set not in ("train", "test"):
        raise OPTWVPService.unknown_instance_set(instance_set)
    if not REFS_PATH.exists():
        raise FileNotFoundError(f"{REFS_PATH} is missing: run `hifo data optwvp-refs`")
    refs = json.loads(REFS_PATH.read_text())["instances"]
    tasks = []
    for name, rec in refs.items():
        if rec["set"] != instance_set:
            continue
        inst = generate_instance(rec["n"], rec["seed"], name=name)
        if abs(float(inst.coords.sum()) - rec["coords_sum"]) > 1e-6:
            raise RuntimeError(f"{name}: the generator no longer reproduces the stored instance")
        for k, svc in enumerate(rec["service_routes"]):
            route = tuple(int(v) for v in check_route(inst, svc["route"]))
            tasks.append(ServiceTask(f"{name}/route{k}", inst, route, float(svc["lp_optimum"])))
    return tuple(tasks)


class OPTWVPService(Evaluator):
    """Service-time allocation rule for fixed OPTWVP routes, scored against the LP optimum.

    Sets: ``train`` (32 routes of the 16 ``optwvp_route`` training instances), ``test`` (100 routes of 50
    instances of its test sizes drawn per evaluator object from a secret, with their LP optima computed at
    draw time: module docstring) and ``test_published`` (the 100 stored routes of its 50 published test
    instances: the set of the reference figures, and ``test`` with ``public_seeds = True``). Per route: ``profit``,
    ``lp_optimum``, ``gap_percent``; aggregated: their means.
    """

    name = "optwvp_service"
    description = (
        "Service-time allocation on a fixed route of the orienteering problem with time windows "
        "and variable profits. A vehicle visits given customers in a given order, leaving the "
        "depot at time 0 and returning by a horizon; each customer's service must start inside "
        "its time window, may last at most the window's width, and earns its profit rate times "
        "its duration. Longer service at one customer delays all later ones, which may then "
        "miss their windows or the horizon. Design the rule that chooses the service durations "
        "so that the total profit is as large as possible."
    )
    direction = "minimize"
    primary_metric = "gap_percent"
    template = _TEMPLATE
    instance_sets = ("train", "test", "test_published")
    secret_sets = ("test",)
    limits = Limits(timeout_s=30.0, cpu_s=60, memory_mb=2048)
    baselines = {
        "forward_greedy": _TEMPLATE.baseline_source(),
        "equal_share": _TEMPLATE.source(_EQUAL_SHARE_BODY),
    }
    # Measured by tests/evaluators/test_optwvp_service.py (gap to the LP optimum, %).
    reference_figures = {
        "forward_greedy": {"train": {"gap_percent": 7.428}, "test": {"gap_percent": 5.104},  # published seeds
                           "test_published": {"gap_percent": 5.104}},
        "equal_share": {"train": {"gap_percent": 57.426}},
    }
    tags = ("routing", "orienteering", "scheduling", "linear programming", "decost")
    slot_process = True  # called once per route: the candidate runs in a process of its own (sandbox/_slotproc.py)

    def load_instances(self, instance_set: str) -> list[ServiceTask]:
        if instance_set == "test" and self.seeds_secret("test"):
            return self.drawn_once("test", self._draw_test)
        return list(_load(instance_set))

    def _draw_test(self) -> list[ServiceTask]:
        from hifo.evaluators.optwvp_route import draw_instances

        tasks = []
        for inst, ref in draw_instances(self, "test"):
            greedy, _ = construct_route(inst, density_scorer)
            for k, route in enumerate(r for r in (ref["route"], [int(v) for v in greedy]) if r):
                route = tuple(int(v) for v in check_route(inst, route))
                tasks.append(ServiceTask(f"{inst.name}/route{k}", inst, route, optimal_service_lp(inst, route)[1]))
        return tasks

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: ServiceTask) -> list[float]:
        """The service durations the rule chooses, in route order."""
        inst, route = instance.instance, np.asarray(instance.route, dtype=np.int64)
        path = np.concatenate(([0], route, [0]))
        d = heuristic(profit_rate=inst.profit[route].copy(), travel=inst.travel[path[:-1], path[1:]].copy(),
                      tw_open=inst.tw_open[route].copy(), tw_close=inst.tw_close[route].copy(),
                      horizon=float(inst.horizon))
        return [float(x) for x in np.asarray(d, dtype=float).ravel()]

    def score(self, instance: ServiceTask, solution: Any) -> dict[str, float]:
        try:
            profit = check_schedule(instance.instance, instance.route, solution)
        except InfeasibleRoute as exc:
            raise InfeasibleSolution(f"{instance.name}: {exc}") from None
        opt = instance.lp_optimum
        gap = (opt - profit) / opt * 100.0 if opt > 0 else 0.0
        return {"profit": profit, "lp_optimum": opt, "gap_percent": gap}
