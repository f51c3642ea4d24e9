"""ℓp regression ``min ||x||_p s.t. Ax = b`` by iteratively reweighted least squares.

Our damped IRLS (a damped classic IRLS with its weights projected onto a norm ball, so every
solve gives a Hölder bound; not the algorithm of Ene, Nguyen & Vladu, arXiv 2510.01729,
whose rule we could not recover), Adil–Peng–Sachdeva's p-IRLS
(NeurIPS 2019) and a scipy reference optimum; see :mod:`._irls` for the algorithms and where they
depart from the papers. numpy/scipy only; imports nothing else of ours.
"""

from hifo.problems.lp_regression._irls import (
    Trace,
    ball_exponent,
    damped_update,
    dual_certificate,
    lp_norm,
    normalise,
    null_space_form,
    p_irls,
    damped_irls,
    random_instance,
    reference_optimum,
    weighted_solve,
)

__all__ = ["Trace", "ball_exponent", "damped_update", "dual_certificate", "lp_norm", "normalise",
           "null_space_form", "p_irls", "damped_irls", "random_instance", "reference_optimum",
           "weighted_solve"]
