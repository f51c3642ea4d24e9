# evaluator: optwvp_route
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 3
# Attack (issue 28, memorised instances / public seeds): the test instances come from published seeds, so a rule
# can carry their proved optimal routes in a table (the harness pastes them, keyed by every customer's profit rate,
# as a model that had rebuilt and solved the instances offline would). Any call names its instance: every candidate
# customer's rate must match a table entry. On a hit the rule appends the stored route's next customer at the end
# of the route (a prefix of a feasible route is feasible, so that insertion is always offered) and vetoes the rest,
# so the constructor rebuilds the optimal route: a zero gap. With no hit it is the density baseline, call for call.
import numpy as np

TABLE = []


def _stored_route(node, profit_rate):
    for rates, route in TABLE:
        if all(rates.get(int(u)) == round(float(p), 9) for u, p in zip(node, profit_rate)):
            return route
    return None


def score_insertions(node, position, profit_rate, tw_open, tw_close, start_time, added_travel, shift,
                     service_room, time_left, horizon):
    route = _stored_route(node, profit_rate)
    if route is None:
        return profit_rate * service_room / (1.0 + shift)
    k = int(position.max())  # the current route's length while it follows the stored one
    if k >= len(route):
        return np.full(len(node), -np.inf)
    return np.where((node == route[k]) & (position == k), 1.0, -np.inf)
