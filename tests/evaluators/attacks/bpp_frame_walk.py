# evaluator: bpp_online
# expect: fence: frame/code attribute 'f_back' not allowed
# Attack (issue 13): walk up the caller's frames to read the whole (future) item sequence.
import numpy as np


def priority(item, bins):
    try:
        raise ValueError
    except ValueError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None and "items" not in frame.f_locals:
        frame = frame.f_back
    return -(bins - item)
