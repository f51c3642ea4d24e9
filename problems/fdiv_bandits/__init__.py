"""Offline f-divergence-regularised contextual bandits (tabular): KL-PCB and the plug-in learner."""

from ._core import (DIVERGENCES, Bandit, concentrability, divergence_value, greedy_policy, hoeffding_bonus,
                    kl_pcb, log_log_slope, make_bandit, objective, pessimistic_reward, plugin_policy,
                    regularised_optimum, sample, statistics, suboptimality)

__all__ = ["DIVERGENCES", "Bandit", "concentrability", "divergence_value", "greedy_policy", "hoeffding_bonus",
           "kl_pcb", "log_log_slope", "make_bandit", "objective", "pessimistic_reward", "plugin_policy",
           "regularised_optimum", "sample", "statistics", "suboptimality"]
