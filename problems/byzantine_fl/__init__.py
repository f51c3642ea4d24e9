"""Byzantine-robust federated learning with learnable aggregation weights, after Parsa, Daghestani,
Teixeira & Johansson, "Byzantine-Robust Federated Learning with Learnable Aggregation Weights"
(ICLR 2026, arXiv 2511.03529; the paper calls its method FedLAW, a name Li et al., ICML 2023, already
gave to a different learnable-weights method, so ours is called ``learnable_weights``).

* :func:`run_fl` — federated softmax regression on scikit-learn's digits, 20 clients with a
  Dirichlet(0.5) label split, ``rounds`` rounds of 5 local gradient steps, with one of the attacks
  (:data:`ATTACKS`: sign flip, ALIE, IPM, label flip, and the adaptive min-max / min-sum of Shejwalkar &
  Houmansadr 2021) on a share of malicious clients; clients send updates and training losses
  (:func:`client_round`), and a rule may ask for one probe round per round (the clients at a tentative model);
* :data:`RULES` — server aggregation rules: :func:`learnable_weights` (the paper's alternating
  minimisation of sum_i w_i f_i(theta) over the model and the weights on the sparse unit-capped simplex)
  and the baselines FedAvg, Krum, Multi-Krum, Bulyan, geometric median, coordinate median, trimmed mean
  and centred clipping.

Scale and departures (no official code found; a third-party reproduction, github.com/NamanKu-tech/dissertation,
was read to recover the paper's Algorithms 1-3 and Table 1): a linear model, 20 clients and 30 rounds instead of
the paper's MLP/CNNs on MNIST/CIFAR-10 with up to 200 clients; the weight step size beta, the cap's slack
scaled to n = 20 and an oracle-free clipping radius are ours (see the rule's comments). Imports nothing else of
ours (numpy; scikit-learn's on-disk digits).
"""

from hifo.problems.byzantine_fl._fl import (
    ATTACKS,
    FLConfig,
    FLRun,
    accuracy,
    client_round,
    clip_to_box,
    digits,
    dirichlet_split,
    make_setup,
    run_fl,
    softmax_loss_grad,
)
from hifo.problems.byzantine_fl._rules import (
    RULES,
    bulyan,
    centered_clipping,
    coordinate_median,
    fedavg,
    geometric_median,
    krum,
    learnable_weights,
    multi_krum,
    trimmed_mean,
)

__all__ = ["ATTACKS", "RULES", "FLConfig", "FLRun", "accuracy", "bulyan", "centered_clipping", "client_round",
           "clip_to_box", "coordinate_median", "digits", "dirichlet_split", "fedavg",
           "geometric_median", "krum", "learnable_weights", "make_setup", "multi_krum", "run_fl",
           "softmax_loss_grad", "trimmed_mean"]
