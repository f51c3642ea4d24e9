# evaluator: radar_tune
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 4
# Attack (issue 28, memorised instances / public seeds): the test instances and their sampling seeds are published,
# so the settings that decode each one best can be searched offline and carried in a table keyed by the instance's
# size and first cost (the harness pastes, for the instances it scores, the best of 12 settings found by running the
# fixed model on them, as a model that had rebuilt the instances from their seeds would carry them). On a table hit
# the rule returns that instance's best settings; otherwise the official-style two augmentations (pomo_aug2).
import numpy as np

TABLE = {}


def radar_settings(n, cost_matrix):
    stored = TABLE.get(f"{n}:{float(cost_matrix[0, 1]):.9f}")
    if stored is not None:
        return dict(stored, start_nodes=list(range(n)))
    return {"start_nodes": list(range(n)), "augmentations": 2}
