"""SGD for single-index (ridge) bandits: burn-in then learning, with schedule baselines, ETC, OFUL and GLM-UCB."""

from ._core import (DEGREE, LINKS, Trace, burn_in_length, explore_then_commit, first_time, fixed_schedule,
                    make_instance, mean_field_schedule, run_sgd, two_phase_schedule)
from ._ucb import run_ucb

__all__ = ["DEGREE", "LINKS", "Trace", "burn_in_length", "explore_then_commit", "first_time", "fixed_schedule",
           "make_instance", "mean_field_schedule", "run_sgd", "run_ucb", "two_phase_schedule"]
