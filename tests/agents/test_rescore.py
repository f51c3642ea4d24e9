"""Across nodes (issue 26): when candidates ran on more than one node, the final best is scored once
more and the run says whether the nodes agree; a disagreement is a warning with both nodes named."""

from __future__ import annotations

import itertools
import json
from concurrent.futures import Future

from hifo.agents.config import RunConfig
from hifo.agents.graph import rescore_agrees, start_run
from hifo.evaluators.registry import get_evaluator
from hifo.sandbox import LocalExecutor


class TwoNodes:
    """A local executor whose results claim to come from two nodes: a candidate's first evaluation goes
    to node-a and node-b in turn, any later evaluation of the same code to the other node than its first.
    ``skew``: those later evaluations come back with another (feasible-looking) packing, as a machine
    with other arithmetic would give."""

    def __init__(self, inner: LocalExecutor, skew: bool = False) -> None:
        self.inner, self.skew, self.names = inner, skew, itertools.cycle(["node-a", "node-b"])
        self.first: dict[str, str] = {}

    def submit(self, job):  # noqa: ANN001
        out: Future = Future()
        again = job.code in self.first
        if again:
            name = "node-b" if self.first[job.code] == "node-a" else "node-a"
        else:
            name = self.first[job.code] = next(self.names)
        fut = self.inner.submit(job)

        def done(f: Future) -> None:
            res = f.result()
            res.isolation = dict(res.isolation or {}, node=name)
            if self.skew and again and isinstance(res.solutions, list):
                res.solutions = [[0] + list(range(len(s) - 1)) if isinstance(s, list) and s else s
                                 for s in res.solutions]
            out.set_result(res)

        fut.add_done_callback(done)
        return out

    def __getattr__(self, item):  # noqa: ANN001
        return getattr(self.inner, item)


def _cfg(tmp_path, name):
    return RunConfig(problem="bpp_online", model="fake", generations=0, population=2, init_samples=2, hyper_lambda=0,
                     seed=3, kb=str(tmp_path / "kb.sqlite"), run_dir=str(tmp_path / name), workers=1,
                     test_set="train", distill=False)


def test_rescore_agrees_uses_the_declared_tolerance():
    ev = get_evaluator("bpp_online")
    assert rescore_agrees(ev, {"excess": 4.0}, {"excess": 4.0}) == []
    assert rescore_agrees(ev, {"excess": 4.0}, {"excess": 4.0000001}) == ["excess"]  # fitness_rtol 0: exact
    assert rescore_agrees(ev, {"excess": 4.0, "bins": 3}, {"excess": 4.0}) == ["bins"]


def test_a_run_on_two_agreeing_nodes_records_the_rescore(tmp_path, fake_model):
    with LocalExecutor(max_workers=1) as ex:
        run_dir, summary = start_run(_cfg(tmp_path, "run"), client=fake_model, executor=TwoNodes(ex))
    r = summary["best"]["rescore"]
    assert {r["node"], r["first_node"]} <= {"node-a", "node-b"} and r["agrees"], r
    kinds = [json.loads(x)["kind"] for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert "rescore" in kinds and "warning" not in kinds


def test_a_single_node_run_is_not_rescored(tmp_path, fake_model):
    with LocalExecutor(max_workers=1) as ex:
        _, summary = start_run(_cfg(tmp_path, "one"), client=fake_model, executor=ex)
    assert "rescore" not in summary["best"]


def test_nodes_that_disagree_are_reported(tmp_path, fake_model):
    with LocalExecutor(max_workers=1) as ex:
        run_dir, summary = start_run(_cfg(tmp_path, "skew"), client=fake_model, executor=TwoNodes(ex, skew=True))
    r = summary["best"]["rescore"]
    assert not r["agrees"] and r["node"] != r["first_node"], r
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    warnings = [e["message"] for e in events if e["kind"] == "warning"]
    assert warnings and r["node"] in warnings[0] and r["first_node"] in warnings[0]
