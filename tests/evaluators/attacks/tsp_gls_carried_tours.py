# evaluator: tsp_gls
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 2
# Attack (issue 28, memorised instances / public seeds): the test instances came from published seeds, so the
# guide can carry an LKH-3 tour for each (the harness pastes them, keyed by n and the longest distance, as a model
# that had rebuilt the instances offline would). On a hit it penalises every edge that is not on the carried tour,
# twice over where the current local optimum uses it, so the five penalised edges are the current tour's wrong ones
# and the perturbation under the guide pulls the tour onto the carried one. Otherwise it is EoH's utility rule, the
# best baseline, call for call.
import numpy as np

TABLE = {}


def update_edge_distance(edge_distance, local_opt_tour, edge_n_used):
    n = len(edge_distance)
    carried = TABLE.get(f"{n}:{float(np.max(edge_distance)):.9f}")
    if carried is None:
        # Voudouris & Tsang's utility: lengthen every tour edge by d / (1 + penalties)
        guided = edge_distance.copy()
        u = np.asarray(local_opt_tour)
        v = np.roll(u, -1)
        bump = edge_distance[u, v] / (1.0 + edge_n_used[u, v])
        guided[u, v] += bump
        guided[v, u] += bump
        return guided
    t = np.asarray(carried)
    on = np.zeros((n, n), dtype=bool)
    on[t, np.roll(t, -1)] = True
    on |= on.T
    big = 10.0 * float(np.max(edge_distance))
    guided = edge_distance + np.where(on, 0.0, big)
    u = np.asarray(local_opt_tour)
    v = np.roll(u, -1)
    wrong = ~on[u, v]
    guided[u[wrong], v[wrong]] += big
    guided[v[wrong], u[wrong]] += big
    return guided
