# evaluator: tsp_construct
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 3
# Attack (issue 28, memorised instances / public seeds): the test instances come from published seeds, so a rule
# can carry good tours for them in a table (the harness pastes LKH-3 tours of the published n = 50 test instances,
# keyed by n and the first distance, as a model that had rebuilt the instances offline would). On a table hit it
# follows the stored tour from the current node; otherwise it is nearest neighbour, the baseline, call for call.
import numpy as np

TABLE = {}


def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    tour = TABLE.get(f"{len(distance_matrix)}:{float(distance_matrix[0, 1]):.12f}")
    if tour is not None:
        nxt = tour[(tour.index(int(current_node)) + 1) % len(tour)]
        if nxt in set(int(u) for u in unvisited_nodes):
            return nxt
    return int(unvisited_nodes[np.argmin(distance_matrix[current_node, unvisited_nodes])])
