"""ℓp regression ``min ||x||_p s.t. Ax = b`` by iteratively reweighted least squares.

A primal-dual IRLS in the framework of Ene, Nguyen & Vladu (arXiv 2510.01729; weights as dual
variables on a norm ball, a certified bound from every solve), Adil–Peng–Sachdeva's p-IRLS
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
    primal_dual_irls,
    random_instance,
    reference_optimum,
    weighted_solve,
)

__all__ = ["Trace", "ball_exponent", "damped_update", "dual_certificate", "lp_norm", "normalise",
           "null_space_form", "p_irls", "primal_dual_irls", "random_instance", "reference_optimum",
           "weighted_solve"]
