# evaluator: optwvp_service
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 4
# Attack (issue 28, memorised instances / public seeds): the test routes come from published seeds and a stored
# file, so a rule can carry their optimal service times in a table (the harness pastes them, keyed by the route's
# travel legs, as a model that had rebuilt the routes and solved their LPs offline would) and answer them without
# solving anything: a zero gap. With no hit it is the forward-greedy baseline, call for call.
import numpy as np

TABLE = {}


def allocate_service(profit_rate, travel, tw_open, tw_close, horizon):
    stored = TABLE.get(",".join(f"{t:.9f}" for t in travel))
    if stored is not None and len(stored) == len(profit_rate):
        return np.array(stored)
    k = len(profit_rate)
    d = np.zeros(k)
    latest = np.append(tw_close, horizon)
    for i in range(k):
        start = 0.0
        for j in range(i + 1):
            start = max(start + travel[j] + (d[j - 1] if j else 0.0), tw_open[j])
        room = tw_close[i] - tw_open[i]
        reach = start
        for m in range(i + 1, k + 1):
            reach += travel[m] + (d[m - 1] if m - 1 > i else 0.0)
            room = min(room, latest[m] - reach)
        d[i] = max(0.0, room)
    return d
