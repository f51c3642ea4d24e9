"""Novelty before evaluation, by behaviour (issue 27, item 4).

Normalised code catches a reply that repeats an earlier program; it misses the common case of a small
model that rewrites the parent with other names, reordered terms or a dead branch: a different program that
makes the same decisions. Before a new candidate is evaluated, :class:`BehaviourProbe` runs it in the
sandbox (the same job as an evaluation, the same limits) on the evaluator's probe instances
(:meth:`Evaluator.probe_instances`: a few small, public, fixed instances that are never scored), and
fingerprints the solutions it returns (SHA-256 of their canonical JSON). Two candidates with the same
fingerprint made the same decision on every probe instance; the later one is recorded as a duplicate of
the earlier and its prompt is asked again (`SearchNodes._redraw`, within ``--max-calls``).

What the probe can and cannot say: equal fingerprints mean equal behaviour *on the probe*, not everywhere
(two rules may differ only on items the probe never shows), so the probe is kept small but varied, and a
candidate that differs from an earlier one only outside it is lost; unequal fingerprints always mean
different programs. A candidate that fails on the probe (an exception, a timeout, a refusal) gets no
fingerprint and goes to its evaluation, which reports the failure as usual. The probe is candidate output,
so a candidate could make itself look new (random noise in its scores): that costs it an evaluation and
gains it nothing, since fitness comes from the evaluation alone.

Off by default (``probe_novelty = true`` in the run's TOML, or ``hifo run --probe``, turns it on): with the embedded
model a short search's re-draws of Best Fit's rewrites were often unparsable, so a run can end with fewer valid
candidates; the discovery benchmark (``--probe``) is to show whether it pays before it becomes the default.
Whether a candidate finishes its probe
within :data:`PROBE_TIMEOUT_S` depends on the machine's load, and a probe that gives up decides "new" where
another would have said "duplicate"; so a recording run writes each verdict into its cassette (a ``probe`` line:
the candidate's normalised code hash and its fingerprint or null) and a replay takes the recorded verdict instead
of running the probe (:meth:`BehaviourProbe.verdict`), which keeps a replay exact on any machine. A replay of a
cassette recorded without verdicts runs the probe live.

Fingerprints are kept in the run store (``behaviours``: fingerprint -> the first candidate), so a resumed
run judges novelty as the uninterrupted one would.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from typing import Any

from hifo.agents.evaluation import fence_refusal, make_job

# The probe's instances are small: an honest candidate answers them in milliseconds. One that takes longer
# gets no fingerprint and goes to its evaluation, whose own limits report what it does.
PROBE_TIMEOUT_S = 5.0


class BehaviourProbe:
    """Runs candidates on ``evaluator``'s probe instances through ``executor``."""

    def __init__(self, evaluator: Any, executor: Any, instances: list[Any]):
        if not instances:
            raise ValueError(f"{evaluator.name}: the probe needs at least one instance")
        self.evaluator = evaluator
        self.executor = executor
        self.instances = instances
        self.runs = 0
        self.seconds = 0.0
        self.replayed = 0  # verdicts taken from a replayed cassette instead of a run

    @classmethod
    def for_evaluator(cls, evaluator: Any, executor: Any) -> "BehaviourProbe | None":
        """The probe of ``evaluator``, or None when it declares no probe instances."""
        instances = evaluator.probe_instances()
        return cls(evaluator, executor, list(instances)) if instances else None

    def verdict(self, code: str, code_hash: str, client: Any, job_id: str = "",
                wall_left: float | None = None) -> str | None:
        """:meth:`fingerprint`, taken from the cassette when ``client`` replays one that recorded it, and written
        into the cassette when ``client`` records (module docstring)."""
        from hifo.agents.llm.replay import RecordingClient, ReplayClient
        from hifo.agents.run_kb import find_in_chain

        replay = find_in_chain(client, ReplayClient)
        if replay is not None:
            found, fp = replay.recorded_probe(code_hash)
            if found:
                self.replayed += 1
                return fp
        fp = self.fingerprint(code, job_id, wall_left=wall_left)
        recorder = find_in_chain(client, RecordingClient)
        if recorder is not None:
            recorder.write_probe(code_hash, fp)
        return fp

    def fingerprint(self, code: str, job_id: str = "", wall_left: float | None = None) -> str | None:
        """The behaviour fingerprint of ``code``, or None when it did not run cleanly on the probe (within
        :data:`PROBE_TIMEOUT_S`, and within a quarter of ``wall_left``, the run's wall-clock budget left: the probe
        runs before evaluation, in the propose step, so a candidate that spins must neither hold the run past its
        budget nor take the time the evaluations already started need)."""
        if fence_refusal(self.evaluator, code) is not None:
            return None
        timeout = min(self.evaluator.limits.timeout_s, PROBE_TIMEOUT_S)
        if wall_left is not None:
            if wall_left <= 0.5:
                return None
            timeout = min(timeout, wall_left / 4)
        job = make_job(self.evaluator, code, self.instances, f"probe-{job_id}")
        job = dataclasses.replace(job, limits=dataclasses.replace(job.limits, timeout_s=timeout,
                                                                  cpu_s=min(job.limits.cpu_s, max(1, math.ceil(timeout)))))
        res = self.executor.submit(job).result()
        self.runs += 1
        self.seconds += float(res.wall_s or 0.0)
        sols = res.solutions
        if not res.ok or not isinstance(sols, list) or len(sols) != len(self.instances):
            return None
        try:
            canon = json.dumps(sols, sort_keys=True, separators=(",", ":"), allow_nan=True)
        except (TypeError, ValueError):
            return None
        return hashlib.sha256(canon.encode()).hexdigest()
