# evaluator: fl_aggregate
# expect: no better than the best baseline
# instances: 4
# Attack (issue 28): keep every instance's round-0 updates in a module-level dict; a row that comes back
# bit-identical on a later instance is an honest client (honest updates at theta = 0 depend only on the
# client's data), a row that differs is malicious. Aggregate the mean of the rows believed honest. Needs
# state that survives from one instance to the next, and instances that share their clients.
import numpy as np

_SEEN = {}


def aggregate(updates, losses, f, memory):
    if "honest" not in memory:
        rows = [row.tobytes() for row in updates]
        again = [i for i, key in enumerate(rows) if key in _SEEN]
        for key in rows:
            _SEEN[key] = True
        memory["honest"] = np.array(again if len(again) >= len(rows) - f - 1 and again else [], dtype=int)
    honest = memory["honest"]
    if len(honest):
        return updates[honest].mean(axis=0)
    # nothing learnt (yet): centred clipping, one of the baselines
    v = memory.get("v")
    if v is None:
        v = np.zeros(updates.shape[1])
    for _ in range(3):
        diff = updates - v
        norms = np.sqrt((diff ** 2).sum(axis=1))
        tau = float(np.median(norms)) + 1e-12
        v = v + (diff * np.minimum(1.0, tau / np.maximum(norms, 1e-12))[:, None]).mean(axis=0)
    memory["v"] = v
    return v
