# evaluator: acvrp_construct
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 3
# Attack (issue 28, memorised instances / public seeds): the test instances came from published seeds, so a rule
# can carry PyVRP's routes for them (the harness pastes the stored reference routes of the published test set, as a
# model that had rebuilt the instances and run PyVRP offline would). The fingerprint is the demand string and the
# capacity; on a hit the rule replays the routes without keeping any state: at the depot it starts the first
# carried route whose first customer is still unserved, elsewhere it goes to the current customer's successor on
# its route, or back to the depot after the route's last one. Otherwise it is nearest neighbour, the baseline.
import numpy as np

TABLE = {}


def select_next_node(current_node, depot, unvisited_nodes, rest_capacity, demands, distance_matrix):
    routes = TABLE.get("".join(str(int(q)) for q in demands[1:]) + f"/{len(demands)}")
    free = set(int(u) for u in unvisited_nodes)
    if routes is not None:
        if current_node == depot:
            for route in routes:
                if route[0] in free:
                    return route[0]
        for route in routes:
            if current_node in route:
                k = route.index(int(current_node))
                if k + 1 == len(route):
                    return depot
                if route[k + 1] in free:
                    return route[k + 1]
    costs = distance_matrix[current_node, unvisited_nodes]
    return int(unvisited_nodes[np.argmin(costs)])
