# evaluator: fl_aggregate
# expect: fence: frame/code attribute 'f_back' not allowed
# Attack: walk up to run_fl's frame to read the malicious-client mask (the slot gets only the updates).
import numpy as np


def aggregate(updates, losses, f, memory):
    try:
        raise ValueError
    except ValueError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None and "setup" not in frame.f_locals:
        frame = frame.f_back
    return updates.mean(axis=0)
