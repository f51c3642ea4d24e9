"""The MILP instance sets of ``milp_primal`` and ``fmip_guidance``: the published ones with their stored
figures, and the test set drawn per evaluator object from a secret (issue 28).

**Published sets** (``train``: seeds 100 of each family; ``test_published``: seeds 200-202): the instances of
:func:`hifo.problems.milp.collection`, each with the best-known objective and work budget stored in
``data/milp/best_known.json`` (HiGHS with ``REF_TIME_LIMIT`` CPU seconds; the budget is the number of work ticks
HiGHS alone spent in ``CALIBRATION_CPU_S[set]`` CPU seconds on the machine that stored it: measured once on a
load-dependent clock, then data). A candidate that reads the source can rebuild them (the seeds are public) and
answer from a table computed offline (``tests/evaluators/attacks/milp_published_points.py``,
``milp_seed_replay.py``).

**The secret test draw** (:func:`draw_test`): 3 instances of each of the six families, from the same generators
and sizes as the published sets (and as FMIP's training data, ``fmip_data``), seeded by
``Evaluator.secret_seed``. Everything the score needs is a deterministic function of the drawn data:

* the work budget, by a fixed rule from the published calibration: the **median of the stored budgets of the
  family's three published test instances** (:func:`family_budgets`), and the charge rate for a heuristic's own
  CPU time is that budget over the same 2 CPU s. No clock is read at draw time. On the published instances the
  rule is within 15 % of the stored budget on 15 of 18 (exact on 8); the outliers are ``indset_500_s201``
  (rule 53 vs stored 98 ticks), ``intcover_60x120_s202`` (2,362 vs 3,949) and ``fcmnf_20x100x25_s201`` (41 vs
  31): the stored figures vary that much within a family because a tick's CPU cost differs from instance to
  instance (0.4-34 ms measured) and the calibration itself was a CPU-time measurement on a shared machine.
  Left out of its own median (the mean of the family's other two, as for an instance the rule has not seen) the
  rule is within 15 % on 8 of 18, median error 16 %, worst 0.53x and 1.51x. Twice the train instance's 1-CPU-s
  budget, the other rule at hand, is worse: within 15 % on 7 of 18, and 0.04-0.07x for the general-integer
  cover, whose train instance HiGHS solves to optimality in under a second.
* the best-known objective: HiGHS alone (one thread, seed 0) for ``REF_WORK_MULTIPLE`` = 6 times the budget in
  work ticks (the published references had 12 CPU s, 6 times the test set's 2 CPU s calibration), on the
  work clock, so the same number on every machine. Measured on the published test instances (work clock, 6x the
  rule's budget): the same objective as the stored one on 13 of 18, worse on 5 (by 0.12-0.40 %, and 2.6 % on
  ``cauction_100x500_s202``): the stored references' 12 CPU s are 1.2-3 times as many ticks at the tick costs measured here.
  Computed in the parent when an instance is first scored (:func:`best_known_of`), cached per instance data:
  0.7-11.5 CPU s each, 117 CPU s for the 18 published test instances (2-core EPYC, load 0.5-6) and 109 CPU s
  (212 s wall at load 5-6) for one secret draw's 18, so scoring a slice of the draw costs only that slice's
  references (the attack tests score one instance). ``prepare_references`` (on both evaluators) computes them all
  ahead; a run's draw-ahead thread (``agents/run_kb.py::draw_secret_test_ahead``) does not call it yet, so until it
  does a run's final test evaluation includes those ~110 CPU s of reference solves.

The draw itself (the 18 generator calls) takes about 1.2-1.3 CPU s (1.9-2.9 s wall at load 4-6).
"""

from __future__ import annotations

import hashlib
import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from hifo.problems.milp import COLLECTIONS, FAMILIES, SIZES, MILPInstance, check_solution, collection, generate, \
    solve_highs

DATA = Path(__file__).parent / "data" / "milp" / "best_known.json"
CALIBRATION_CPU_S = {"train": 1.0, "test": 2.0}  # CPU s of HiGHS alone behind each published instance's budget
REF_TIME_LIMIT = 12.0  # HiGHS CPU seconds behind the stored best-known objectives
REF_WORK_MULTIPLE = REF_TIME_LIMIT / CALIBRATION_CPU_S["test"]  # a drawn instance's reference: 6 x its budget
# the evaluators' published sets -> the collections they are made of
PUBLISHED_SETS = {"train": "train", "test_published": "test"}

_REFERENCES: dict[tuple[str, float], float] = {}  # (fingerprint, ticks) -> objective; a pure function of both
_REFERENCE_LOCK = threading.Lock()


def fingerprint(inst: MILPInstance) -> str:
    """Short hash of the instance data, so stored references cannot drift from the generator."""
    h = hashlib.sha256()
    for arr in (inst.c, inst.A.data, inst.A.indices, inst.A.indptr, inst.row_lo, inst.row_hi,
                inst.lb, inst.ub, inst.is_int):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()[:16]


@lru_cache(maxsize=1)
def best_known() -> dict[str, dict]:
    return json.loads(DATA.read_text())


def published_instances(collection_name: str) -> list[dict]:
    """The instances of a published collection with their stored best-known objective and work budget."""
    refs = best_known()
    out = []
    for inst in collection(collection_name):
        ref = refs[inst.name]
        if ref["fingerprint"] != fingerprint(inst):
            raise RuntimeError(f"{inst.name}: generator output differs from the stored reference; "
                               "rerun `python -m hifo.evaluators.milp_primal`")
        if "work_limit" not in ref:
            raise RuntimeError(f"{inst.name}: no stored work budget; run `python -m hifo.evaluators.milp_primal "
                               "--work-limits`")
        out.append({"milp": inst, "work_limit": float(ref["work_limit"]), "best_known": float(ref["objective"]),
                    "work_per_cpu_s": float(ref["work_limit"]) / float(ref["work_calibration_cpu_s"])})
    return out


@lru_cache(maxsize=1)
def family_budgets() -> dict[str, float]:
    """A drawn instance's work budget: the median stored budget of its family's published test instances
    (read from the stored data by name and seed, so the rule needs no generator call and no clock)."""
    refs = best_known()
    base, per = COLLECTIONS["test"]
    by_family: dict[str, list[float]] = {f: [] for f in FAMILIES}
    for name, ref in refs.items():
        family = _family_of(name)
        seed = int(name.rsplit("_s", 1)[1])
        if family is not None and base <= seed < base + per:
            by_family[family].append(float(ref["work_limit"]))
    if any(len(v) != per for v in by_family.values()):
        raise RuntimeError(f"{DATA}: not {per} published test budgets per family: {by_family}")
    return {f: float(np.median(v)) for f, v in by_family.items()}


_NAME_PREFIX = {"setcover": "setcover_", "cauctions": "cauction_", "indset": "indset_", "intcover": "intcover_",
                "gisp": "gisp_", "fcmnf": "fcmnf_"}


def _family_of(name: str) -> str | None:
    return next((f for f, p in _NAME_PREFIX.items() if name.startswith(p)), None)


def draw_test(secret_seed: Callable[..., int]) -> list[dict]:
    """The secret test set: per family, ``COLLECTIONS["test"]`` instances of the published sizes, instance k
    seeded by ``secret_seed(published seed, "test", family, k)``; budgets by :func:`family_budgets`, best-known
    objectives left to :func:`best_known_of` (``best_known`` None, ``reference_work`` the ticks it will take)."""
    base, per = COLLECTIONS["test"]
    budgets = family_budgets()
    out = []
    for family in FAMILIES:
        for k in range(per):
            inst = generate(family, secret_seed(base + k, "test", family, k), **SIZES[family])
            inst.name = f"{inst.name.rsplit('_s', 1)[0]}_secret{k}"  # the generator's name holds the seed
            budget = budgets[family]
            out.append({"milp": inst, "work_limit": budget, "best_known": None,
                        "work_per_cpu_s": budget / CALIBRATION_CPU_S["test"],
                        "reference_work": REF_WORK_MULTIPLE * budget})
    return out


def reference_objective(inst: MILPInstance, work: float) -> float:
    """HiGHS alone (one thread, seed 0) for ``work`` ticks on the work clock: the same number on every machine."""
    r = solve_highs(inst, time_limit=work, clock="work", seed=0, require_incumbent=True)
    return inst.objective(check_solution(inst, r.x))


def best_known_of(instance: dict) -> float:
    """The instance's best-known objective: stored for a published instance, computed once (and cached by the
    instance's data and ticks) for a drawn one."""
    if instance.get("best_known") is not None:
        return float(instance["best_known"])
    inst: MILPInstance = instance["milp"]
    key = (fingerprint(inst), float(instance["reference_work"]))
    with _REFERENCE_LOCK:  # a run may score from several threads; one solve per instance
        if key not in _REFERENCES:
            _REFERENCES[key] = reference_objective(inst, key[1])
        return _REFERENCES[key]


def prepare_references(instances: Iterable[dict[str, Any]]) -> None:
    """Compute every drawn instance's best-known objective now (e.g. while a search runs) rather than at scoring."""
    for instance in instances:
        best_known_of(instance)
