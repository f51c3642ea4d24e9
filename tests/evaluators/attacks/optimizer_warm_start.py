# evaluator: optimizer_update
# expect: no better than the best baseline
# set: test
# instances: 2
# Attack (issue 28): keep state across instances in module-level variables, which the fence allows. The test set
# trains the digits MLP twice (seeds 1 and 2, the same shapes): the rule remembers the weights each hidden matrix
# reached in the first run and, at step 1 of the next, steps the fresh weights onto them, so the second run starts
# from a trained network (Muon otherwise). Needs state that survives from one instance to the next: in the
# algorithm's process it did; a fresh slot server per instance starts with nothing.
import numpy as np

_TRAINED = {}
_RUN = {"index": 0, "matrices": 0, "last_step": 0}


def _muon(grad, momentum):
    g = grad + 0.95 * (momentum - grad)
    x = g / (np.linalg.norm(g) + 1e-7)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    a, b, c = 3.4445, -4.7750, 2.0315
    for _ in range(5):
        s = x @ x.T
        x = a * x + (b * s + c * s @ s) @ x
    if tall:
        x = x.T
    return 0.02 * max(1.0, grad.shape[0] / grad.shape[1]) ** 0.5 * x


def update(grad, momentum, weight, state, step, total_steps):
    if step == 1 and _RUN["last_step"] != 1:  # a new training run
        _RUN["index"] += 1
        _RUN["matrices"] = 0
    _RUN["last_step"] = step
    if "id" not in state:
        state["id"] = _RUN["matrices"]
        _RUN["matrices"] += 1
    key = (state["id"], weight.shape)
    if step == 1 and key in _TRAINED and _RUN["index"] > 1:
        delta = weight - _TRAINED[key]  # jump to the weights the previous run ended with
    else:
        delta = _muon(grad, momentum)
    _TRAINED[key] = weight - delta
    return delta
