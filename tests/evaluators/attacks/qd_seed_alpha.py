# evaluator: qd_dms
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 2
# Attack (issue 28, memorised instances / public seeds): a test instance's search is seeded by a published seed, so
# its first batch of solutions (hence the measures the rule is shown first) is known in advance, and so is
# which learning rate happens to do best on that very run: the harness pastes a table of the best of three alphas per
# published instance, keyed by the first solution's measures (not its objective: on the flat objective every
# objective is 1, and a key on it fired on secret flat runs too). The search is chaotic, so a per-run pick beats any
# one rule. With no table hit (a secret draw) it is the paper's rule, alpha = 0.1, call for call.
import numpy as np

TABLE = {}
_ALPHA = {}


def discount_rule(objective, discount, measures, progress):
    if "alpha" not in _ALPHA:
        key = f"{measures.shape[1]}:{len(objective)}:{float(measures[0, 0]):.9e}:{float(measures[0, 1]):.9e}"
        _ALPHA["alpha"] = TABLE.get(key, 0.1)
    alpha = _ALPHA["alpha"]
    ranking = objective - discount
    targets = np.where(objective > discount, (1.0 - alpha) * discount + alpha * objective, discount)
    return ranking, targets
