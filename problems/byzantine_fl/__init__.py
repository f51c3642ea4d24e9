"""Byzantine-robust federated learning with learnable aggregation weights, after Parsa, Daghestani,
Teixeira & Johansson, "Byzantine-Robust Federated Learning with Learnable Aggregation Weights"
(FedLAW, ICLR 2026, arXiv 2511.03529).

* :func:`run_fl` — federated softmax regression on scikit-learn's digits, 20 clients with a
  Dirichlet(0.5) label split, ``rounds`` rounds of 5 local gradient steps, with one of the attacks
  (:data:`ATTACKS`: sign flip, ALIE, IPM, label flip) on a share of malicious clients;
* :data:`RULES` — server aggregation rules: :func:`fedlaw` (alternating minimisation of the server
  step and simplex-constrained client weights) and the baselines FedAvg, Krum, coordinate median,
  trimmed mean and centred clipping.

What is reconstructed, not taken from the paper: the server sees only client updates, so the weight
subproblem uses the quadratic surrogate ``J(u, w) = sum_i w_i ||u - g_i||^2`` (the client losses'
quadratic model around the current model, with the per-client constants the server cannot observe
dropped); the weights live on the capped simplex ``{0 <= w_i <= 1/(n - f), sum w = 1}`` (sparsity
comes from the cap, there is no separate l0 step); the scale (a linear model, 20 clients, 30 rounds) is
far below the paper's MNIST/CIFAR-10 CNNs. Imports nothing else of ours (numpy; scikit-learn's
on-disk digits).
"""

from hifo.problems.byzantine_fl._fl import (
    ATTACKS,
    FLConfig,
    FLRun,
    accuracy,
    client_updates,
    clip_to_box,
    digits,
    dirichlet_split,
    make_setup,
    run_fl,
    softmax_loss_grad,
)
from hifo.problems.byzantine_fl._rules import (
    RULES,
    centered_clipping,
    coordinate_median,
    fedavg,
    fedlaw,
    krum,
    trimmed_mean,
)

__all__ = ["ATTACKS", "RULES", "FLConfig", "FLRun", "accuracy", "centered_clipping", "client_updates", "clip_to_box",
           "coordinate_median", "digits", "dirichlet_split", "fedavg", "fedlaw", "krum", "make_setup", "run_fl",
           "softmax_loss_grad", "trimmed_mean"]
