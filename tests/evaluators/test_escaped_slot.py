"""The slot process holds where the fence does not (issue 28): attacks written for a candidate that escaped it.

Every file in ``attacks/`` with a header ``# escaped: no better than the best baseline`` uses what issue 28's
``__array_interface__`` escape gave a candidate (``sys``, frames, the algorithm's modules, other libraries).
With the fence on, ``tests/evaluators/test_fair_fitness.py`` sees it refused (its ``# expect:`` line). Here it
runs through the real sandbox twice, with the fence gone (``escaped_fence.py``, preloaded by the warm worker):

* in the algorithm's process (a job without a slot process): the attack works, far better than every baseline
  (it is a real attack, and this is what the escape was worth before the slot process);
* in a slot process (the evaluator's own setting): it scores exactly as the baseline it falls back on (``#
  fallback:``; within the evaluator's declared ``fitness_rtol`` where the budget is CPU time) and no better than
  the best baseline: the patch, the frame walk and the instance are in different processes.

One train instance per attack (``# instance: K``, default the first: one where the baselines leave room), with the
evaluator's per-instance wall-clock limits off (tested elsewhere; a loaded machine trips fmip_guidance's first).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from hifo.agents.evaluation import make_job, score_result
from hifo.evaluators.registry import get_evaluator
from hifo.sandbox import run_job

HERE = Path(__file__).resolve().parent
ESCAPED = sorted(p for p in (HERE / "attacks").glob("*.py") if re.search(r"^# escaped: ", p.read_text(), re.M))
SLOW = ("optimizer_", "fmip_")  # torch in the worker, a training run / a CPU budget and the model per job: 30-60 s
# the four evaluators whose slot ran in the algorithm's process until issue 28
MOVED = {"tsp_gls", "surface_recon", "optimizer_update", "fmip_guidance"}


def _header(path: Path, key: str, default: str | None = None) -> str:
    found = re.search(rf"^# {key}: (.+)$", path.read_text(), re.M)
    assert found or default is not None, f"{path.name} lacks its '# {key}:' header"
    return found.group(1).strip() if found else str(default)


def attack_instances(ev, path: Path) -> list:
    """One instance of the train set: ``# instance: K`` (default 0), one where the baselines leave room."""
    k = int(_header(path, "instance", "0"))
    return ev.load_instances(ev.default_train_set)[k:k + 1]


def unlimited(name: str):
    """The evaluator without its per-instance wall-clock limits (this object only; the limits are tested
    elsewhere: on a loaded shared machine they end fmip_guidance's first instance, model load included, before
    it says anything here)."""
    ev = get_evaluator(name)
    ev.instance_time_limit = lambda instance: None
    return ev


def job_for(ev, code: str, instances: list):
    return make_job(ev, code, instances)


def escaped_job(ev, code: str, instances: list, slot_process: bool):
    """The evaluator's job with the fence gone in the worker's children; ``slot_process`` False puts the
    candidate in the algorithm's process (no fence at all: the job's ``fence`` is None)."""
    job = job_for(ev, code, instances)
    job = dataclasses.replace(job, sys_path=(*job.sys_path, str(HERE)), preload=(*job.preload, "escaped_fence"))
    return job if slot_process else dataclasses.replace(job, fence=None)


def _score(ev, job, instances):
    return score_result(ev, instances, run_job(job))


def _tolerance(ev, value: float) -> float:
    return abs(value) * ev.metric_rtol(ev.primary_metric) + 1e-12


def test_every_moved_evaluator_has_an_escaped_attack():
    assert {_header(p, "evaluator") for p in ESCAPED} >= MOVED
    assert all(get_evaluator(name).slot_process for name in MOVED)


@pytest.mark.parametrize("path", [pytest.param(p, marks=[pytest.mark.slow] if p.stem.startswith(SLOW) else [])
                                  for p in ESCAPED], ids=[p.stem for p in ESCAPED])
def test_escaped_attack_wins_in_process_and_not_from_a_slot_process(path):
    ev = unlimited(_header(path, "evaluator"))
    instances = attack_instances(ev, path)
    code = path.read_text()
    baselines = {name: _score(ev, job_for(ev, source, instances), instances) for name, source in ev.baselines.items()}
    assert all(s.feasible for s in baselines.values()), {n: s.error for n, s in baselines.items()}
    best = max(s.fitness for s in baselines.values())

    in_process = _score(ev, escaped_job(ev, code, instances, slot_process=False), instances)
    assert in_process.feasible, in_process.error
    assert in_process.fitness > best + 2 * _tolerance(ev, best), (in_process.metrics, best)

    slot = _score(ev, escaped_job(ev, code, instances, slot_process=True), instances)
    assert slot.feasible, slot.error  # the fence is really gone there: with it, `import sys` is refused
    fallback = baselines[_header(path, "fallback")]
    if ev.metric_rtol(ev.primary_metric) == 0.0:
        assert slot.per_instance == fallback.per_instance
    else:  # a CPU-time budget: the same guidance, scored within the declared tolerance
        assert abs(slot.fitness - fallback.fitness) <= 2 * _tolerance(ev, fallback.fitness), (slot.metrics, fallback.metrics)
    assert slot.fitness <= best + 2 * _tolerance(ev, best), (slot.metrics, best)


def test_the_escape_emulation_is_confined_to_jobs_that_name_it():
    """A job without the preload meets the fence as always (warm workers are keyed by their preload list)."""
    ev = get_evaluator("tsp_gls")
    instances = ev.load_instances("train")[:1]
    code = (HERE / "attacks" / "tsp_gls_escaped_budget.py").read_text()
    assert _score(ev, escaped_job(ev, code, instances, slot_process=True), instances).feasible
    fenced = _score(ev, make_job(ev, code, instances), instances)
    assert not fenced.feasible and "fence: import of 'sys' not allowed" in fenced.error
