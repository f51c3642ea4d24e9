"""Matrix optimizers and zeroth-order federated optimisation, at small CPU scale.

A plain library (it imports nothing else from this repository; needs numpy, torch and, for the
digits data only, scikit-learn):

Orthogonalisation (:mod:`._newton_schulz`)
    :func:`newton_schulz` (q steps of an odd polynomial; one tuple or a per-step schedule),
    :data:`MUON_QUINTIC`, :data:`CUBIC`, :func:`taylor_coefficients` (degree ``2 kappa + 1``),
    :func:`polar_svd` (exact ``U V^T``), :func:`singular_value_map`, :func:`ns_error_bound`
    (``delta^((kappa+1)^q)``), :func:`orthogonality_error`, :func:`polar_error`, :func:`matmul_count`.
Optimizers (``torch.optim.Optimizer``)
    :class:`Muon` (momentum, Nesterov, NS or SVD orthogonalisation, shape scaling, AdamW for
    non-matrix groups), :func:`muon_update`; :class:`COSMOS` (SOAP-like update on a tracked
    rank-r eigensubspace, Muon-like update on the residual). Also :class:`RuleOptimizer` (not a
    torch optimizer, to stay cheap to start): the matrix update is a plain numpy function — the
    ``optimizer_update`` evaluator's slot.
Zeroth-order federated learning (:mod:`._hiso`, :mod:`._zo_problems`)
    :class:`ZOConfig`, :class:`Client`, :class:`Server`, :class:`Channel` (every message, for
    size checks), :func:`centralized_zo_round`, :func:`run_federated`;
    ``hessian_smooth=None`` is DeComFL, a float is HiSo. Problems:
    :func:`least_squares_problem`, :func:`logistic_problem`.
Tasks (:mod:`._tasks`, :mod:`._data`)
    ``digits_mlp``, ``digits_cnn`` (sklearn digits) and ``markov_lm`` (tiny transformer on an
    order-2 Markov corpus with known entropy rate): :func:`build_model`, :func:`split_params`,
    :func:`load_split`, :func:`train`, :func:`evaluate`; :class:`TrainingRun` (a budget plus the
    training split only, safe to send to a sandbox) and :func:`held_out_metrics` (the trusted
    check of returned parameters on the validation split).

Example::

    import torch
    from hifo.problems.optimizers import Muon, build_model, split_params, load_split, train, evaluate

    model = build_model("digits_mlp", seed=0)
    hidden, rest = split_params(model)
    opt = Muon([dict(params=list(hidden.values()), use_muon=True, lr=0.02),
                dict(params=list(rest.values()), use_muon=False, lr=3e-3)])
    train("digits_mlp", model, opt, load_split("digits_mlp", "train"), steps=200, batch_size=64, seed=0)
    print(evaluate("digits_mlp", model, load_split("digits_mlp", "val")))
"""

from ._cosmos import COSMOS, cosmos_direction, track_subspace
from ._data import Split, markov_entropy_rate, markov_transitions
from ._hiso import (
    Channel,
    Client,
    Message,
    Server,
    ZOConfig,
    apply_round,
    centralized_zo_round,
    directional_derivatives,
    perturbation,
    reconstruct_gradient,
)
from ._muon import Muon, adamw_update, as_matrix, muon_update, orthogonalize, shape_scale
from ._newton_schulz import (
    CUBIC,
    MUON_QUINTIC,
    as_schedule,
    matmul_count,
    matmul_flops,
    newton_schulz,
    ns_error_bound,
    orthogonality_error,
    polar_error,
    polar_svd,
    singular_value_band,
    singular_value_map,
    taylor_coefficients,
)
from ._rule import InvalidUpdate, RuleOptimizer, check_update
from ._tasks import (
    TASKS,
    BudgetExceeded,
    TrainingRun,
    build_model,
    evaluate,
    held_out_metrics,
    load_lists,
    load_split,
    loss_of,
    one_torch_thread,
    sample_batch,
    split_params,
    state_to_lists,
    train,
)
from ._zo_problems import FLResult, ZOProblem, least_squares_problem, logistic_problem, run_federated

__all__ = [
    "BudgetExceeded", "COSMOS", "CUBIC", "Channel", "Client", "FLResult", "InvalidUpdate",
    "MUON_QUINTIC", "Message", "Muon", "RuleOptimizer", "Server", "Split", "TASKS", "ZOConfig",
    "TrainingRun", "ZOProblem", "adamw_update", "apply_round", "as_matrix", "as_schedule", "build_model",
    "centralized_zo_round", "check_update", "cosmos_direction", "directional_derivatives",
    "evaluate", "held_out_metrics", "least_squares_problem", "load_lists", "load_split", "logistic_problem",
    "loss_of", "markov_entropy_rate", "markov_transitions", "matmul_count", "matmul_flops",
    "muon_update", "newton_schulz", "one_torch_thread", "ns_error_bound", "orthogonality_error", "orthogonalize",
    "perturbation", "polar_error", "polar_svd", "reconstruct_gradient", "run_federated", "sample_batch",
    "shape_scale", "singular_value_band", "singular_value_map", "split_params", "state_to_lists",
    "taylor_coefficients", "track_subspace", "train",
]
