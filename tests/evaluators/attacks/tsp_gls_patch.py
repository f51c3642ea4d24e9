# evaluator: tsp_gls
# expect: fence: import of 'hifo.problems.routing' not allowed
# Attack (issue 13): monkeypatch the local search the algorithm calls.
import numpy as np


def update_edge_distance(edge_distance, local_opt_tour, edge_n_used):
    import hifo.problems.routing as routing

    routing.local_search = lambda *a, **k: None
    return edge_distance
