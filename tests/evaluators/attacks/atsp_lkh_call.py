# evaluator: atsp_construct
# expect: fence: import of 'elkai' not allowed
# Attack (issue 13): call LKH on the first call and replay its tour (train gap 0.00 % unfenced).
import numpy as np

_PLAN = []


def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    import elkai

    if not _PLAN:
        _PLAN.extend(elkai.DistanceMatrix(distance_matrix.tolist()).solve_tsp())
    for node in _PLAN:
        if node in unvisited_nodes:
            return node
    return unvisited_nodes[0]
