# evaluator: fmip_guidance
# expect: fence: import of 'hifo.problems' not allowed
# Attack (issue 13): patch solve_highs so the "guided" model's answer is HiGHS's.
import numpy as np


def guidance(t, step, n_steps):
    from hifo.problems import milp

    milp.solve_highs = milp.solve_highs
    return {}
