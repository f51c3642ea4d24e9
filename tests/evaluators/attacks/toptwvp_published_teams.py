# evaluator: toptwvp_route
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 3
# Attack (issue 28, memorised instances / public seeds): the test instances come from published seeds, so a rule
# can carry their proved optimal teams in a table (the harness pastes the stored MILP routes, keyed by the opening
# times of every customer's window, as a model that had rebuilt and solved the instances offline would). A call
# names its instance when every candidate's window opening matches an entry. The stored routes are rebuilt one
# insertion at a time, route after route, each customer appended at the end of its route: the next move is the
# first stored customer still offered (customers already placed are no longer candidates), and every other
# candidate is vetoed: a zero gap. With no hit it is the cheapest-insertion baseline, call for call.
import numpy as np

TABLE = []


def _stored_team(node, tw_open):
    for opens, routes in TABLE:
        if all(opens.get(int(u)) == round(float(e), 9) for u, e in zip(node, tw_open)):
            return routes
    return None


def score_insertions(node, position, profit_rate, tw_open, tw_close, start_time, added_travel, shift,
                     service_room, time_left, horizon, vehicle, vehicles):
    routes = _stored_team(node, tw_open)
    if routes is None:
        return -added_travel
    offered = set(int(u) for u in node)
    for v, route in enumerate(routes):
        for i, u in enumerate(route):
            if u in offered:
                return np.where((node == u) & (vehicle == v) & (position == i), 1.0, -np.inf)
    return np.full(len(node), -np.inf)
