"""Every model call of a run has a seed of its own: proposals, re-draws, error-feedback repairs and
runtime repairs never share one (a runtime repair of a re-draw once got the seed of that re-draw)."""

import itertools

import pytest

from agentkit import tiny_config
from hifo.agents.call_seeds import LANE_WIDTH, MAX_REDRAWS, call_seed, runtime_repair_seed
from hifo.agents.graph import start_run
from hifo.agents.llm.base import Completion
from hifo.sandbox import LocalExecutor

SAME = "def priority(item, bins):\n    gap = bins - item\n    return -gap\n"


def test_lanes_are_disjoint_over_a_long_run():
    seeds = [call_seed(7, g, i) for g in range(0, 400, 7) for i in range(0, 1000, 37)]
    seeds += [call_seed(7, g, i, "repair") for g in range(0, 400, 7) for i in range(0, 1000, 37)]
    seeds += [call_seed(7, g, i, "redraw", k) for g in range(0, 400, 7) for i in range(0, 1000, 37)
              for k in range(1, MAX_REDRAWS + 1)]
    seeds += [runtime_repair_seed(7, f"g{g}-{i:03d}{s}") for g in range(0, 400, 7) for i in range(0, 1000, 37)
              for s in ("", "d1", "d2")]
    seeds += [runtime_repair_seed(7, "g3-h01"), runtime_repair_seed(7, "g3-001r")]
    assert len(seeds) == len(set(seeds))
    assert call_seed(0, 3, 5) == 3 * 1_009 + 5  # proposals keep the seeds recorded runs were made with
    assert max(seeds) < 2**31 - 1_000 * 100_003 and call_seed(7, 0, 0, "repair") - call_seed(7, 0, 0) == LANE_WIDTH


def test_bad_indices_are_refused():
    with pytest.raises(ValueError):
        call_seed(0, 0, 1_009)
    with pytest.raises(KeyError):
        call_seed(0, 0, 0, "redraw", MAX_REDRAWS + 1)


class DuplicateThenCrashThenFix:
    """Writes the same program (Best Fit) at the run's temperature, a crashing new one when hotter (a re-draw), and a
    working one when shown its runtime error; records every call's seed."""

    style, model = "chat", "fake-seeds"

    def __init__(self):
        self.seeds = []

    def complete(self, messages, n=1, temperature=1.0, seed=None, max_tokens=512, stop=None):
        self.seeds.append(seed)
        if messages[-1]["content"].startswith("That code fails"):
            # a fix that behaves unlike Best Fit (and unlike the other fix), so the behaviour check keeps it
            code = f"def priority(item, bins):\n    return -np.abs(bins - item - {1 + seed % 89})\n"
        elif temperature <= 0.7:
            code = SAME
        else:
            code = f"def priority(item, bins):\n    return bins[len(bins) + {seed % 97}] - item\n"
        return [Completion(f"```python\nimport numpy as np\n{code}```", 10, 10, model=self.model)]


def test_a_run_with_redraws_and_runtime_repairs_never_reuses_a_seed(tmp_path):
    model = DuplicateThenCrashThenFix()
    cfg = tiny_config(tmp_path, init_samples=3, population=3, temperature=0.7, novelty_redraws=1, probe_novelty=True)
    with LocalExecutor(max_workers=1) as ex:
        start_run(cfg, client=model, executor=ex)
    # 3 proposals, each Best Fit again (a duplicate of the baseline by behaviour), so 3 re-draws, and
    # runtime repairs of the 3 crashing re-draws
    assert len(model.seeds) == 9
    assert len(set(model.seeds)) == len(model.seeds), sorted(model.seeds)
    assert not set(itertools.chain(model.seeds)) & {None}
