"""Evolving GlowQ-S as a rank allocation: how much low-rank error correction each input-sharing group gets.

The model is the tiny char-level transformer of :mod:`hifo.problems.glowq`, trained here on generated
text and quantized to 3 or 4 bits by round-to-nearest. Giving a group (Q/K/V, O, up/gate or down of one
block) rank ``r`` adds the official GlowQ correction at that rank: the group's stacked error whitened by its
shrunk input covariance, one shared right factor and one left factor per layer, ``r (in + sum out)`` extra
parameters. The candidate ``choose_ranks(groups, budget, rank)`` sees per-group statistics only
(:func:`~hifo.problems.glowq.group_stats`: block, kind, sizes, parameters per unit of rank, ``||W||``,
``||E||`` and the top 16 singular values of the whitened stacked error), never the model, and returns a
rank from 0 to 16 per group. With 17 ranks for each of 8 groups there are ~7e9 allocations: the slot is
not answered by enumerating subsets (the former one was: 256 subsets).

The baselines are the official GlowQ-S rules (``gsvd``, ``norm_error``, ``layer_order``: restore the longest
prefix of the ranking, every restored group at the nominal ``rank``), a uniform rank, nothing, and this
project's water-filling (:func:`~hifo.problems.glowq.select_water_filling`).

The parent checks the ranks, counts the extra parameters itself (infeasible above the budget), builds the
corrected model and measures ``ppl`` (held-out perplexity; primary, minimised), ``ppl_gap`` (minus the
full-precision model's), ``extra_params`` and ``extra_kib`` (fp16 factors).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from hifo.evaluators.base import Evaluator, FunctionTemplate, InfeasibleSolution, Limits
from hifo.problems.glowq import MAX_RANK, autocorrelations, build_quantized, corpus, extra_params, group_stats, \
    model_groups, perplexity, trained_lm
from hifo.problems._repro import one_torch_thread

_DOCSTRING = """Chooses the rank of the low-rank error correction of each weight group of a quantized transformer.

Each group is a set of linear layers that read the same input (qkv, o, upgate, down of one block).
Giving a group rank r adds a correction whose right factor is shared by the group, at a cost of
r * params_per_rank extra parameters; a larger rank removes more of the group's quantization error.
The goal is the lowest perplexity of the quantized model within a budget of extra parameters.

Args:
    groups: list of dicts, one per group, with keys
        name (str, e.g. '1.qkv'), block (int), kind ('qkv', 'o', 'upgate', 'down'),
        in_dim (int), out_dims (list of int), params_per_rank (int, extra parameters per unit of rank),
        weight_norm (float, Frobenius norm of the group's stacked weights),
        error_norm (float, Frobenius norm of their quantization error),
        singular_values (list of 16 floats, descending: of the quantization error whitened by the
        group's input covariance; rank r removes the sum of the first r squared values from the
        group's output-error proxy).
    budget: the most extra parameters the ranks may add together.
    rank: the rank the published GlowQ-S gives every group it restores (a hint; any rank may be used).

Return:
    A dict {group name: rank} with integer ranks from 0 to 16 (groups left out get 0) and
    sum(rank * params_per_rank) at most budget.
"""

_TEMPLATE = FunctionTemplate(
    name="choose_ranks",
    signature="def choose_ranks(groups: list, budget: int, rank: int) -> dict:",
    docstring=_DOCSTRING,
    baseline_body=("    # GlowQ-S (official gsvd rule): rank groups by the sum of their top-`rank` singular values\n"
                   "    # and restore the longest prefix of that ranking that fits, each at `rank`.\n"
                   "    order = sorted(groups, key=lambda g: -sum(g['singular_values'][:rank]))\n"
                   "    chosen, used = {}, 0\n"
                   "    for g in order:\n"
                   "        if used + rank * g['params_per_rank'] > budget:\n"
                   "            break\n"
                   "        chosen[g['name']] = rank\n"
                   "        used += rank * g['params_per_rank']\n"
                   "    return chosen\n"),
)


def _prefix_body(comment: str, order: str) -> str:
    return (f"    # {comment}\n    order = {order}\n    chosen, used = {{}}, 0\n    for g in order:\n"
            "        if used + rank * g['params_per_rank'] > budget:\n            break\n"
            "        chosen[g['name']] = rank\n        used += rank * g['params_per_rank']\n    return chosen\n")


_BODIES = {
    "none": "    # Plain round-to-nearest: correct nothing.\n    return {}\n",
    "uniform": ("    # The same rank for every group: the largest that fits.\n"
                "    per = sum(g['params_per_rank'] for g in groups)\n    r = min(16, budget // per)\n"
                "    return {g['name']: r for g in groups} if r > 0 else {}\n"),
    "norm_error": _prefix_body("GlowQ-S (official norm_error rule): largest ||E|| / ||W|| first, prefix at `rank`.",
                               "sorted(groups, key=lambda g: -g['error_norm'] / g['weight_norm'])"),
    "layer_order": _prefix_body("GlowQ-S (official layer_order rule): model order, prefix at `rank`.", "groups"),
    "water_filling": ("    # One unit of rank at a time to the group whose next singular value removes the most\n"
                      "    # whitened error energy per extra parameter, while it fits.\n"
                      "    ranks = {g['name']: 0 for g in groups}\n    used = 0\n    while True:\n"
                      "        best, gain = None, 0.0\n        for g in groups:\n            r = ranks[g['name']]\n"
                      "            if r < 16 and used + g['params_per_rank'] <= budget:\n"
                      "                value = g['singular_values'][r] ** 2 / g['params_per_rank']\n"
                      "                if value > gain:\n                    best, gain = g, value\n"
                      "        if best is None:\n            return {k: v for k, v in ranks.items() if v}\n"
                      "        ranks[best['name']] += 1\n        used += best['params_per_rank']\n"),
}


def _source(body: str) -> str:
    return f"{_TEMPLATE.imports}\n\n\n{_TEMPLATE.render(body)}"


@dataclass(frozen=True)
class SelectInstance:
    name: str
    bits: int
    rank: int  # the nominal rank of the official rules
    budget: int
    groups: tuple[dict, ...]
    model_seed: int = 0  # the LM, its calibration and its held-out text (0: the published model)


# (bits, nominal rank, budget as a fraction of restoring every group at the nominal rank)
_SPECS = {"train": ((3, 8, 0.5),), "test": ((3, 4, 0.5), (3, 16, 0.3), (4, 8, 0.5))}


@lru_cache(maxsize=None)
def _full_precision_ppl(model_seed: int = 0) -> float:
    return perplexity(trained_lm(model_seed), corpus(model_seed)["val"])


@lru_cache(maxsize=None)
def _autocorrelations(model_seed: int):
    with one_torch_thread():
        return autocorrelations(trained_lm(model_seed), corpus(model_seed)["calib"])


class GlowQSelect(Evaluator):
    """Perplexity of the GlowQ-corrected quantized LM with the evolved per-group ranks.

    Instance sets: ``train`` (the published model, seed 0) and ``test`` (a model trained for this evaluator
    object from a secret seed, with its own calibration and held-out text; ``public_seeds = True``: the
    published model, on which the stored test figures were measured)."""

    name = "glowq_select"
    description = ("Choose the rank of GlowQ's group-shared low-rank error correction for each weight group of a "
                   "low-bit quantized transformer language model, under a budget of extra parameters; "
                   "minimise the perplexity on held-out text.")
    direction = "minimize"
    primary_metric = "ppl"
    # float32 torch in the parent's score: with 2 BLAS/OpenMP threads in the parent the perplexity moved by
    # 1.2e-7 relative and its gap to the full-precision model by 2.2e-6 (`python -m
    # hifo.evaluators.determinism glowq_select`; pinned kernels otherwise bit-identical); declared 10x that.
    # Re-checked for the rank slot (issue 30, `--configs plain threads`): bit-identical (max rel diff 0).
    fitness_rtol = {"ppl": 1e-6, "ppl_gap": 2e-5}
    template = _TEMPLATE
    limits = Limits(timeout_s=30.0, cpu_s=60, memory_mb=4096)
    baselines = {"gsvd": _source(_TEMPLATE.baseline_body), **{k: _source(v) for k, v in _BODIES.items()}}
    # Measured in-process, one torch thread (train re-checked by tests/evaluators/test_glowq_select.py).
    reference_figures = {  # measured on the pinned kernels (measured_figures, 6 decimals; issue 26)
        "gsvd": {"train": {"ppl": 1.725027, "extra_params": 6144.0},
                "test": {"ppl": 1.713028}},
        "none": {"train": {"ppl": 1.762918, "extra_params": 0.0},
                "test": {"ppl": 1.730751}},
        "uniform": {"train": {"ppl": 1.695063, "extra_params": 7168.0},
                   "test": {"ppl": 1.689466}},
        "norm_error": {"train": {"ppl": 1.734638, "extra_params": 6144.0},
                      "test": {"ppl": 1.717778}},
        "layer_order": {"train": {"ppl": 1.718906, "extra_params": 7168.0},
                       "test": {"ppl": 1.713045}},
        "water_filling": {"train": {"ppl": 1.713689, "extra_params": 7168.0},
                         "test": {"ppl": 1.696763}},
    }
    tags = ("quantization", "low-rank", "llm", "torch")
    # the test model (its training seed, calibration and held-out text) is drawn per evaluator object from a
    # secret (Evaluator.secret_seed): with one published model a table of the best ranks per (bits, rank,
    # budget), computed offline, would answer the test set; training it costs about a minute on 2 cores
    secret_sets = ("test",)
    slot_process = True  # called once per instance: the candidate runs in a process of its own

    def load_instances(self, instance_set: str) -> list[SelectInstance]:
        if instance_set not in _SPECS:
            raise KeyError(f"unknown instance set {instance_set!r} for glowq_select; known: {', '.join(_SPECS)}")
        model_seed = self.secret_seed(0, instance_set, "model") % (1 << 31) if instance_set == "test" else 0
        model = trained_lm(model_seed)
        R = _autocorrelations(model_seed)
        out = []
        for bits, rank, frac in _SPECS[instance_set]:
            with one_torch_thread():
                stats = group_stats(model, bits, R)
            budget = int(frac * rank * sum(g["params_per_rank"] for g in stats))
            out.append(SelectInstance(f"w{bits}/r{rank}/budget{budget}", bits, rank, budget, tuple(stats), model_seed))
        return out

    @staticmethod
    def solve(heuristic: Callable[..., Any], instance: SelectInstance) -> dict[str, int]:
        groups = [dict(g, out_dims=list(g["out_dims"]), singular_values=list(g["singular_values"]))
                  for g in instance.groups]
        chosen = heuristic(groups, instance.budget, instance.rank)
        if not isinstance(chosen, dict):
            raise ValueError("choose_ranks must return a dict {group name: rank}")
        # numpy integers become ints; anything else is passed on for score() to reject
        return {str(k): int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
                for k, v in chosen.items()}

    def score(self, instance: SelectInstance, solution: Any) -> dict[str, float]:
        if not isinstance(solution, dict):
            raise InfeasibleSolution(f"{instance.name}: the solution must be a dict {{group name: rank}}")
        model = trained_lm(instance.model_seed)
        names = {g.name for g in model_groups(model)}
        if not set(solution) <= names:
            raise InfeasibleSolution(f"{instance.name}: names must be groups of {sorted(names)}")
        if not all(type(r) is int and 0 <= r <= MAX_RANK for r in solution.values()):
            raise InfeasibleSolution(f"{instance.name}: ranks must be integers from 0 to {MAX_RANK}")
        cost = extra_params(model, solution, "glowq")
        if cost > instance.budget:
            raise InfeasibleSolution(f"{instance.name}: {cost} extra parameters exceed the budget {instance.budget}")
        with one_torch_thread():  # one thread, taking turns with parallel scorers (issue 26)
            q, extra = build_quantized(model, "glowq", solution, bits=instance.bits,
                                       R=_autocorrelations(instance.model_seed))
            ppl = perplexity(q, corpus(instance.model_seed)["val"])
        assert extra == cost
        return {"ppl": ppl, "ppl_gap": ppl - _full_precision_ppl(instance.model_seed), "extra_params": float(cost),
                "extra_kib": 2.0 * cost / 1024}
