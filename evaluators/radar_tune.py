"""RADAR inference tuning: evolve the decoding settings of a trained, fixed RADAR model.

The algorithm is RADAR (ICLR 2026; :mod:`hifo.problems.routing._radar`) on the asymmetric TSP:
SVD node embeddings, Sinkhorn mixed-score attention, POMO decoding. The weights are fixed
(trained by ``hifo data train-radar``, stored in ``problems/routing/weights/``);
the heuristic chooses, per instance, the inference-time settings and decoding rule: Sinkhorn
rounds in the encoder, logit clipping, softmax temperature, a cost bias added to the
decoder's logits, the POMO start nodes, test-time augmentations (random SVD sign flips)
and greedy or sampled decoding, within a budget of ``2 n`` rollouts per instance. The best
rollout's tour is returned; the metric is its mean gap (%) to LKH-3 (tmat) or to the
proven optimum (TSPLIB):

* ``train`` — 16 tmat instances, n = 20, model ``radar_atsp20_radar`` (published seeds);
* ``test`` — 32 tmat n = 20 (model ``radar_atsp20_radar``) and 16 tmat n = 50 (model
  ``radar_atsp50_radar``), drawn per evaluator object from a secret key (issue 28, "memorisation
  cannot pay"; :meth:`~hifo.evaluators.base.Evaluator.secret_seed`). The settings are chosen per
  instance from its cost matrix, so a rule can fingerprint a published instance and answer the
  settings an offline search found best for it: over 12 settings (cost bias, clipping, sampling
  temperatures) the per-instance best cuts the gap of ``pomo_aug2`` on the first six published n = 20
  test instances from 3.94 % to 0.92 % and on two n = 50 ones from 18.8 % to 10.9 %
  (``tests/evaluators/attacks/radar_published_settings.py``). Each drawn instance's reference is
  LKH-3 run at draw time as for the stored ones (elkai, 10 runs, on the exact integer matrix; LKH's
  seed is fixed, so it is the same whatever the load); its sampling seed is its secret seed. One draw
  costs about 4 s of CPU (4.6 s wall on the 2-core machine at a load of 4);
* ``test_published`` — the same groups on the published seeds 8100-8131 and 8200-8215 with the stored LKH-3
  lengths: the set of the reference figures, and ``test`` itself with ``public_seeds = True``;
* ``tsplib`` — the 15 TSPLIB ATSP instances with n <= 171 (model ``radar_atsp50_radar``;
  far outside its training distribution; public, as TSPLIB is).

Sampling is seeded per instance, so a candidate's score is reproducible.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.evaluators._data import checked_reference, load_refs
from hifo.problems.routing import (
    InvalidTour,
    TSPInstance,
    array_digest,
    gap_percent,
    TMAT_SCALE,
    random_tmat_instance,
    read_tsplib_atsp,
    tour_length,
)

DATA_DIR = Path(__file__).parent / "data" / "routing"
REFS_PATH = DATA_DIR / "refs.json"
# (n, count, first seed, model): instance k of a group uses seed first_seed + k.
RANDOM_SETS: dict[str, tuple[tuple[int, int, int, str], ...]] = {
    "train": ((20, 16, 8000, "radar_atsp20_radar"),),
    "test": ((20, 32, 8100, "radar_atsp20_radar"), (50, 16, 8200, "radar_atsp50_radar")),
}
TSPLIB_NAMES = ("br17", "ftv33", "ftv35", "ftv38", "p43", "ftv44", "ftv47", "ry48p", "ft53", "ftv55",
                "ftv64", "ft70", "ftv70", "kro124p", "ftv170")
TSPLIB_MODEL = "radar_atsp50_radar"
BUDGET_PER_NODE = 2  # rollouts allowed per instance: BUDGET_PER_NODE * n


class InvalidSettings(ValueError):
    """The heuristic returned settings that are not allowed."""


_DOCSTRING = """Chooses how a trained RADAR neural solver decodes tours for one asymmetric
TSP instance.

Args:
    n: Number of nodes (int).
    cost_matrix: Costs between all pairs of nodes (np.ndarray, n x n, float, NOT symmetric):
        cost_matrix[i, j] is the cost of going from i to j.

Return:
    A dict of settings; a missing key keeps its default:
    - "sinkhorn_iters" (int, 1..50, default 10): Sinkhorn normalisation rounds in each
      encoder attention layer (the model was trained with 10);
    - "logit_clipping" (float, 0 < c <= 100, default 10): the decoder's logits are
      c * tanh(score);
    - "temperature" (float, 0.05..20, default 1): softmax temperature of the decoder
      (changes nothing unless "sampling" is True);
    - "cost_weight" (float, -20..20, default 0): subtracts cost_weight times the
      standardised cost of going from the current node to each candidate from the logits;
    - "start_nodes" (list of distinct node indices, default all n nodes): one rollout
      starts from each (POMO);
    - "augmentations" (int >= 1, default 1): the instance is encoded this many times, the
      extra ones with random sign flips of its SVD embedding; every encoding decodes from
      every start node;
    - "sampling" (bool, default False): sample each next node from the softmax instead of
      taking the most likely one.
    Budget: len(start_nodes) * augmentations <= 2 * n rollouts. The best tour found counts.
"""

_TEMPLATE = FunctionTemplate(
    name="radar_settings",
    signature="def radar_settings(n: int, cost_matrix: np.ndarray) -> dict:",
    docstring=_DOCSTRING,
    baseline_body=('    return {"sinkhorn_iters": 10, "logit_clipping": 10.0, "temperature": 1.0,\n'
                   '            "cost_weight": 0.0, "start_nodes": list(range(n)), "augmentations": 1,\n'
                   '            "sampling": False}\n'),
)

_AUGMENTED_BODY = ('    # Official-style test-time augmentation: two encodings x all n start nodes.\n'
                   '    return {"start_nodes": list(range(n)), "augmentations": 2}\n')

_RANGES = {"sinkhorn_iters": (1, 50), "logit_clipping": (1e-6, 100.0), "temperature": (0.05, 20.0),
           "cost_weight": (-20.0, 20.0)}


@dataclass(frozen=True, eq=False)
class RadarTask:
    """One instance with the model that decodes it and its sampling seed."""

    instance: TSPInstance
    model: str
    seed: int

    @property
    def name(self) -> str:
        return self.instance.name


def parse_settings(value: Any, n: int, budget_per_node: int = BUDGET_PER_NODE) -> dict[str, Any]:
    """Check a heuristic's settings (types, ranges, budget); return keyword arguments for
    :class:`hifo.problems.routing.RadarSettings`. Raises :class:`InvalidSettings`."""
    if not isinstance(value, dict):
        raise InvalidSettings(f"radar_settings must return a dict, got {type(value).__name__}")
    unknown = set(value) - set(_RANGES) - {"start_nodes", "augmentations", "sampling"}
    if unknown:
        raise InvalidSettings(f"unknown setting(s): {', '.join(sorted(map(str, unknown)))}")
    out: dict[str, Any] = {}
    for key, (lo, hi) in _RANGES.items():
        if key not in value:
            continue
        v = value[key]
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)):
            raise InvalidSettings(f"{key} must be a finite number, got {v!r}")
        if key == "sinkhorn_iters" and int(v) != v:
            raise InvalidSettings(f"sinkhorn_iters must be an integer, got {v!r}")
        if not lo <= float(v) <= hi:
            raise InvalidSettings(f"{key}={v!r} is outside [{lo}, {hi}]")
        out[key] = int(v) if key == "sinkhorn_iters" else float(v)
    starts = value.get("start_nodes", list(range(n)))
    try:
        arr = np.asarray(starts)
    except Exception as exc:
        raise InvalidSettings(f"start_nodes must be a list of node indices ({exc})") from None
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise InvalidSettings("start_nodes must be a non-empty list of integer node indices")
    if (arr < 0).any() or (arr >= n).any() or np.unique(arr).size != arr.size:
        raise InvalidSettings(f"start_nodes must be distinct indices in 0..{n - 1}")
    out["start_nodes"] = tuple(int(x) for x in arr)
    aug = value.get("augmentations", 1)
    if isinstance(aug, bool) or not isinstance(aug, numbers.Integral) or aug < 1:
        raise InvalidSettings(f"augmentations must be an integer >= 1, got {aug!r}")
    out["augmentations"] = int(aug)
    if arr.size * out["augmentations"] > budget_per_node * n:  # bound at import: a patch cannot lift it
        raise InvalidSettings(f"{arr.size} start nodes x {aug} augmentations exceeds the budget of "
                              f"{budget_per_node * n} rollouts")
    sampling = value.get("sampling", False)
    if not isinstance(sampling, (bool, np.bool_)):
        raise InvalidSettings(f"sampling must be True or False, got {sampling!r}")
    out["sampling"] = bool(sampling)
    return out


def random_set_specs(instance_set: str) -> list[tuple[str, int, int, str]]:
    """``(name, n, seed, model)`` of every instance of a random set, in order."""
    return [(f"tmat{n}_seed{first + k}", n, first + k, model)
            for n, count, first, model in RANDOM_SETS[instance_set] for k in range(count)]


@lru_cache(maxsize=1)
def _refs() -> dict[str, Any]:
    return load_refs(REFS_PATH, "hifo data routing-refs")


@lru_cache(maxsize=None)
def _load(instance_set: str) -> tuple[RadarTask, ...]:
    if instance_set == "tsplib":
        refs = _refs()["tsplib_atsp"]
        return tuple(RadarTask(read_tsplib_atsp(DATA_DIR / f"{name}.atsp", refs[name]["optimum"]),
                               TSPLIB_MODEL, k) for k, name in enumerate(TSPLIB_NAMES))
    if instance_set == "test_published":
        instance_set = "test"
    if instance_set not in RANDOM_SETS:
        raise RadarTune.unknown_instance_set(instance_set)
    refs = _refs()["tmat"]
    out = []
    for name, n, seed, model in random_set_specs(instance_set):
        inst = random_tmat_instance(n, seed, name)
        ref = checked_reference(refs, name, array_digest(inst.distance_matrix),
                                remake="hifo data routing-refs", n=n, seed=seed)
        out.append(RadarTask(TSPInstance(name, inst.distance_matrix, None, float(ref["length"]), "lkh3"),
                             model, seed))
    return tuple(out)


@lru_cache(maxsize=4)
def _model(name: str):
    # imported here so the trusted parent never loads torch just to score tours
    from hifo.problems.routing import WEIGHTS_DIR, load_radar

    if not (WEIGHTS_DIR / f"{name}.pt").exists():
        raise FileNotFoundError(f"{WEIGHTS_DIR / (name + '.pt')} is missing; run `hifo data train-radar`")
    return load_radar(name)


class RadarTune(Evaluator):
    """RADAR inference tuning on the ATSP (module docstring). Per instance: ``length``,
    ``gap_percent``; aggregated: their means."""

    name = "radar_tune"
    description = (
        "Asymmetric travelling salesman problem solved by RADAR, a trained neural solver: an "
        "attention encoder reads the cost matrix (through its SVD and Sinkhorn-normalised "
        "attention) and a decoder builds tours node by node, one rollout per start node, "
        "keeping the best. The network's weights are fixed. Design the function that chooses, "
        "for each instance, how the network decodes: Sinkhorn rounds, logit clipping, softmax "
        "temperature, a bias towards cheap next arcs, which start nodes to use, how many "
        "augmented encodings to decode, and greedy or sampled decoding, within a budget of "
        "2 n rollouts, so that the best tour is as cheap as possible. Training instances: 20 "
        "nodes, random 'tmat' costs in [0, 1) obeying the triangle inequality."
    )
    direction = "minimize"
    primary_metric = "gap_percent"
    template = _TEMPLATE
    instance_sets = ("train", "test", "test_published", "tsplib")
    secret_sets = ("test",)
    default_train_set = "train"
    default_test_set = "test"
    # torch reserves a large address space at import: RLIMIT_AS must be generous
    limits = Limits(timeout_s=60.0, cpu_s=120, memory_mb=8192)
    baselines = {
        "pomo_greedy": _TEMPLATE.baseline_source(),
        "pomo_aug2": _TEMPLATE.source(_AUGMENTED_BODY),
    }
    # Measured with these baselines (tests/evaluators re-measure the train figures); gap in %.
    reference_figures = {
        "pomo_greedy": {"train": {"gap_percent": 7.53}, "test": {"gap_percent": 8.82},  # test: published seeds
                        "test_published": {"gap_percent": 8.82}, "tsplib": {"gap_percent": 33.4}},
        "pomo_aug2": {"train": {"gap_percent": 6.25}, "test": {"gap_percent": 7.01},
                      "test_published": {"gap_percent": 7.01}, "tsplib": {"gap_percent": 30.91}},
    }
    tags = ("routing", "atsp", "asymmetric", "neural", "radar", "hyperparameters")
    slot_process = True  # called once per instance: the candidate runs in a process of its own (sandbox/_slotproc.py)

    def load_instances(self, instance_set: str) -> list[RadarTask]:
        if instance_set == "test" and self.seeds_secret("test"):
            return self.drawn_once("test", self._draw_test)
        return list(_load(instance_set))

    def _draw_test(self) -> list[RadarTask]:
        from hifo.problems.routing import lkh_tour

        out = []
        for k, (_, n, public, model) in enumerate(random_set_specs("test")):
            seed = self.secret_seed(public, "test", k)
            inst = random_tmat_instance(n, seed, f"tmat{n}_secret{k}")
            d = inst.distance_matrix
            length = float(tour_length(lkh_tour(d, runs=10, scale=TMAT_SCALE), d))
            out.append(RadarTask(TSPInstance(inst.name, d, None, length, "lkh3"), model, seed))
        return out

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: RadarTask) -> list[int]:
        """The best tour RADAR decodes with the settings ``heuristic`` chooses."""
        import torch

        from hifo.problems.routing import RadarSettings, radar_solve

        torch.set_num_threads(1)
        d = instance.instance.distance_matrix
        settings = RadarSettings(**parse_settings(heuristic(d.shape[0], d.copy()), d.shape[0]))
        tour, _ = radar_solve(_model(instance.model), d, settings, seed=instance.seed)
        return tour.tolist()

    def score(self, instance: RadarTask, solution: Any) -> dict[str, float]:
        inst = instance.instance
        try:
            length = tour_length(solution, inst.distance_matrix)
        except InvalidTour as exc:
            raise InfeasibleSolution(f"{inst.name}: {exc}") from None
        if inst.best_known is None:
            raise ValueError(f"{inst.name} has no reference length")
        return {"length": length, "gap_percent": gap_percent(length, inst.best_known)}
