"""Evolving PTQ4ARVG's calibration-sample selection (distribution-guided calibration is the seed).

The model is the tiny class-conditional autoregressive image-token generator of :mod:`hifo.problems.ptq4arvg`,
trained here. From a pool of candidate calibration sequences, the candidate
``select_calibration(features, classes, k)`` sees one mean final feature vector and the class of each pool
sequence (never the model or the images) and returns ``k`` distinct indices. The parent checks them,
quantizes the model with PTQ4ARVG in the official placement (gain-projected scaling on qkv/fc1/head, grouped
token-wise percentile ranges on proj/fc2, W``b``A``b``) calibrated on exactly those sequences, and measures
``nll`` (held-out next-pixel negative log-likelihood, nats/token; primary, minimised) and ``nll_gap`` (minus
the full-precision model's).

Partial (issue 30): the slot is the former one. Its signal is small (the baselines differ by a few thousandths
of a nat) and the official DGC (a conditional/unconditional mix under classifier-free guidance, chosen from
Mahalanobis distances) cannot be expressed because the tiny generator has no CFG; the ``dgc`` baseline is this
project's farthest-k reading of it.

Secret test set (issue 28): ``test``'s two candidate pools are drawn per evaluator object from a secret
(:meth:`Evaluator.secret_seed`); bits, ``k``, the trained model and the held-out sequences are the published ones. The
slot sees the pool's features, so from the published pool seeds (6 and 8) a rule can recognise its pool by its first
feature vector and answer with a selection found offline by scoring many on that very pool
(``tests/evaluators/attacks/ptq4arvg_pool_table.py``: the best of the baselines and 8 random selections per published
pool, mean ``nll`` 0.40296 against the best baseline's (dgc) 0.40358, more than the baselines' whole spread,
0.40358-0.40398; on one secret draw it is dgc's 0.40531, the best baseline there 0.40448; pinned kernels, one torch
thread). A draw costs 0.13-0.26 s (two pools of 192 sequences and their features, measured under load 3-4 on 2
cores); there is no reference to compute:
``nll`` is the quantized model's own. The published pools stay available as ``test_published`` (and as ``test``
with ``public_seeds = True``): the set of the stored figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import torch

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.ptq4arvg import nll, quantize_model, sample_features, sequences, trained_arvg
from hifo.problems._repro import one_torch_thread

_DOCSTRING = """Chooses the calibration samples for post-training quantization of an image generator.

The model generates 8x8 images token by token (class token first). Its activations are quantized with
static ranges fixed from the chosen calibration sequences; the goal is the lowest held-out
negative log-likelihood of the quantized model.

Args:
    features: list of pool samples, each a list of floats (the model's mean final feature).
    classes: list of int, the class (0-3) of each pool sample.
    k: how many samples to choose.

Return:
    A list of k distinct indices into the pool.
"""

_TEMPLATE = FunctionTemplate(
    name="select_calibration",
    signature="def select_calibration(features: list, classes: list, k: int) -> list:",
    docstring=_DOCSTRING,
    baseline_body=("    # Distribution-guided calibration: the k samples farthest (Mahalanobis) from the pool's Gaussian fit.\n"
                   "    F = np.asarray(features, dtype=float)\n"
                   "    d = F - F.mean(0)\n"
                   "    C = np.cov(F.T) + 1e-3 * np.eye(F.shape[1])\n"
                   "    m = np.einsum('ij,ij->i', d @ np.linalg.inv(C), d)\n"
                   "    return sorted(int(i) for i in np.argsort(-m)[:k])\n"),
)
_BODIES = {
    "first": "    # The first k samples (a random draw: the pool is in random order).\n    return list(range(k))\n",
    "class_balanced": ("    # Round-robin over classes, in pool order.\n    by = {}\n"
                       "    for i, c in enumerate(classes):\n        by.setdefault(c, []).append(i)\n"
                       "    out, queues = [], [list(v) for _, v in sorted(by.items())]\n"
                       "    while len(out) < k:\n        for q in queues:\n            if q and len(out) < k:\n"
                       "                out.append(q.pop(0))\n    return out\n"),
    "nearest": ("    # The k samples closest to the pool mean (most typical).\n    F = np.asarray(features, dtype=float)\n"
                "    return sorted(int(i) for i in np.argsort(((F - F.mean(0)) ** 2).sum(1))[:k])\n"),
}


def _source(body: str) -> str:
    return f"{_TEMPLATE.imports}\n\n\n{_TEMPLATE.render(body)}"


@dataclass(frozen=True)
class CalibInstance:
    name: str
    bits: int
    k: int
    pool_seed: int
    features: tuple[tuple[float, ...], ...]
    classes: tuple[int, ...]


_POOL = 192
_SPECS = {"train": ((4, 16, 5),), "test": ((6, 16, 6), (4, 8, 8))}


@lru_cache(maxsize=16)
def _pool(seed: int) -> torch.Tensor:
    return sequences(_POOL, seed)


@lru_cache(maxsize=None)
def _val() -> torch.Tensor:
    return sequences(512, 7)


class PTQ4ARVGCalib(Evaluator):
    """Held-out likelihood of the PTQ4ARVG-quantized image generator calibrated on the evolved selection."""

    name = "ptq4arvg_calib"
    description = ("Choose the calibration samples for post-training quantization (PTQ4ARVG: gain-projected scaling, "
                   "static token-wise ranges) of a small autoregressive image-token generator; minimise the held-out "
                   "negative log-likelihood of the quantized model.")
    direction = "minimize"
    primary_metric = "nll"
    template = _TEMPLATE
    instance_sets = ("train", "test", "test_published")
    limits = Limits(timeout_s=20.0, cpu_s=30, memory_mb=2048)
    baselines = {"dgc": _source(_TEMPLATE.baseline_body), **{k: _source(v) for k, v in _BODIES.items()}}
    # Measured in-process, one torch thread (dgc's train re-checked by tests/evaluators/test_ptq4arvg_calib.py).
    reference_figures = {  # measured on the pinned kernels (measured_figures, 6 decimals; issue 26)
        "dgc": {"train": {"nll": 0.406808, "nll_gap": 0.008196},
               "test": {"nll": 0.403578, "nll_gap": 0.004966}},
        "first": {"train": {"nll": 0.409087, "nll_gap": 0.010475},
                 "test": {"nll": 0.403708, "nll_gap": 0.005096}},
        "class_balanced": {"train": {"nll": 0.408134, "nll_gap": 0.009522},
                          "test": {"nll": 0.403978, "nll_gap": 0.005367}},
        "nearest": {"train": {"nll": 0.409464, "nll_gap": 0.010853},
                   "test": {"nll": 0.403903, "nll_gap": 0.005291}},
    }
    # the "test" figures are those of the published pools: also stored under "test_published"
    reference_figures = {k: {**v, "test_published": v["test"]} for k, v in reference_figures.items()}
    slot_process = True  # issue 28: the candidate in a process of its own, a fresh one per instance
    tags = ("quantization", "image-generation", "calibration", "torch")
    # the test pools are drawn per evaluator object from a secret: from the published pool seeds a rule can recognise
    # its pool by its features and answer from a table of selections scored offline on that very pool
    secret_sets = ("test",)

    def load_instances(self, instance_set: str) -> list[CalibInstance]:
        secret = instance_set == "test" and self.seeds_secret("test")
        if instance_set == "test_published":
            instance_set = "test"
        if instance_set not in _SPECS:
            raise self.unknown_instance_set(instance_set)
        model = trained_arvg()
        out = []
        for j, (bits, k, public) in enumerate(_SPECS[instance_set]):
            seed = self.secret_seed(public, "test", j) if secret else public
            pool = _pool(seed)
            feats = sample_features(model, pool)
            name = f"w{bits}a{bits}/k{k}/" + (f"secret{j}" if secret else f"pool{seed}")
            out.append(CalibInstance(name, bits, k, seed,
                                     tuple(tuple(round(float(v), 6) for v in f) for f in feats),
                                     tuple(int(c) - 8 for c in pool[:, 0])))
        return out

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: CalibInstance) -> list[int]:
        out = heuristic([list(f) for f in instance.features], list(instance.classes), instance.k)
        return [int(i) for i in out]

    def score(self, instance: CalibInstance, solution: Any) -> dict[str, float]:
        if (not isinstance(solution, list) or len(solution) != instance.k or len(set(solution)) != instance.k
                or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < _POOL for i in solution)):
            raise InfeasibleSolution(f"{instance.name}: expected {instance.k} distinct pool indices in [0, {_POOL})")
        with one_torch_thread():  # one thread, taking turns with parallel scorers (issue 26)
            model = trained_arvg()
            q = quantize_model(model, "ptq4arvg", instance.bits, _pool(instance.pool_seed)[sorted(solution)])
            val = _val()
            value, fp = nll(q, val), nll(model, val)
        return {"nll": value, "nll_gap": value - fp}
