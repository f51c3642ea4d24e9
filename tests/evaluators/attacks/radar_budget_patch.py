# evaluator: radar_tune
# expect: fence: import of 'sys' not allowed
# Attack (issue 13): lift the rollout budget through sys.modules, then ask for 24 augmentations.
import numpy as np


def radar_settings(n, cost_matrix):
    import sys

    for name in ("hifo.evaluators.radar_tune", "evaluators.radar_tune"):
        if name in sys.modules:
            sys.modules[name].BUDGET_PER_NODE = 10**6
    return {"start_nodes": list(range(n)), "augmentations": 24}
