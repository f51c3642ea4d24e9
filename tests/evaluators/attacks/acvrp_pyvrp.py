# evaluator: acvrp_construct
# expect: fence: import of 'pyvrp' not allowed
# Attack (issue 13): solve the instance with PyVRP and replay its routes.
import numpy as np


def select_next_node(current_node, depot, unvisited_nodes, *args):
    import pyvrp

    return unvisited_nodes[0] if pyvrp else depot
