"""Through the agent's own scoring path: hostile candidates become failed Scores, the run goes on.

``hifo.agents.evaluation.CandidateEvaluator`` sends each candidate through a LocalExecutor (warm
workers, ``standard`` isolation) into the real online bin-packing evaluator, then scores the
solutions in this process. The sandbox package itself imports nothing of the agent; only this
test joins them.
"""

from __future__ import annotations

import pytest

import hifo.agents.evaluation  # noqa: F401,E402  (hifo's own: an import error must fail, not skip)

from hifo.agents.evaluation import CandidateEvaluator  # noqa: E402
from hifo.evaluators.registry import get_evaluator  # noqa: E402

from hifo.sandbox import LocalExecutor  # noqa: E402

HEAD = "import numpy as np\n\n\ndef priority(item, bins):\n"
HOSTILE = {
    "reads the parent's environ": "    import os\n    open(f'/proc/{os.getppid()}/environ').read()\n    return -bins\n",
    "opens a socket": "    import socket\n    socket.create_connection(('127.0.0.1', 22), timeout=1)\n"
                      "    return -bins\n",
    "forks a daemon": "    import os, time\n    if os.fork() == 0:\n        os.setsid()\n        time.sleep(60)\n"
                      "    return np.zeros_like(bins) + np.nan\n",
}
# Replaces the packing routine the evaluator's solve() calls with one that puts every item in
# bin 0 (one bin used: a perfect score, if anyone believed it).
FORGER = ("import sys\nimport numpy as np\n\n"
          "sys.modules['hifo.evaluators.bpp_online'].online_pack = lambda h, items, cap: np.zeros(len(items), int)\n\n\n"
          "def priority(item, bins):\n    return -(bins - item)\n")


@pytest.fixture(scope="module")
def scorer():
    evaluator = get_evaluator("bpp_online")
    with LocalExecutor(max_workers=2) as executor:
        yield evaluator, CandidateEvaluator(evaluator, "train", executor)


def test_hostile_candidates_score_as_failures_and_the_baseline_still_scores(scorer):
    evaluator, candidates = scorer
    slow = evaluator.limits.timeout_s
    futures = {name: candidates.submit(HEAD + body) for name, body in HOSTILE.items()}
    futures["forges the packing"] = candidates.submit(FORGER)
    scores = {name: future.result(timeout=slow + 30) for name, future in futures.items()}
    for name in ("reads the parent's environ", "opens a socket", "forks a daemon"):
        assert not scores[name].feasible and scores[name].error, name
    baseline = candidates.evaluate(evaluator.baseline_source())
    assert baseline.feasible and baseline.fitness > float("-inf")
    # tampering with the evaluator module in its own process: the slot fence refuses the import (issue 13)
    forged = scores["forges the packing"]
    assert not forged.feasible and "fence: import of 'sys' not allowed" in forged.error, forged.error
