"""Offline f-divergence-regularised contextual bandits (tabular): KL-PCB, the plug-in learner and LCB-greedy."""

from ._core import (COVERAGES, DIVERGENCES, Bandit, concentrability, divergence_value, greedy_policy,
                    hoeffding_bonus, kl_pcb, lcb_greedy_policy, log_log_slope, make_bandit, objective,
                    pessimistic_policy, pessimistic_reward, plugin_policy, regularised_optimum, sample, statistics,
                    suboptimality)

__all__ = ["COVERAGES", "DIVERGENCES", "Bandit", "concentrability", "divergence_value", "greedy_policy",
           "hoeffding_bonus", "kl_pcb", "lcb_greedy_policy", "log_log_slope", "make_bandit", "objective",
           "pessimistic_policy", "pessimistic_reward", "plugin_policy", "regularised_optimum", "sample", "statistics",
           "suboptimality"]
