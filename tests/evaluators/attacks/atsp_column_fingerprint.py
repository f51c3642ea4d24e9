# evaluator: atsp_construct
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 3
# Attack (issue 28, memorised instances / public seeds): the tmat test instances came from published seeds, so a
# rule can carry LKH-3 tours for them (the harness pastes the stored tours of the published test set, as a model
# that had rebuilt the instances offline would). The fingerprint is the total cost of arriving at the depot (the
# sum of column 0, which no two instances share) and the table maps each node to its successor on the tour; on a
# hit the rule walks the stored tour, otherwise it is nearest neighbour, the baseline, call for call.
import numpy as np

TABLE = {}


def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    key = f"{len(distance_matrix)}:{float(np.sum(distance_matrix[:, 0])):.9f}"
    nxt = TABLE.get(key, {}).get(int(current_node))
    if nxt is not None and nxt in set(int(u) for u in unvisited_nodes):
        return nxt
    costs = distance_matrix[current_node, unvisited_nodes]
    return int(unvisited_nodes[np.argmin(costs)])
