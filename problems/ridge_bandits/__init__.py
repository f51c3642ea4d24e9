"""SGD for single-index (ridge) bandits: burn-in then learning, with the paper authors' schedule (paper_schedule),
schedules of ours, ETC, OFUL and GLM-UCB."""

from ._core import (AUTHORS_CONSTANTS, DEGREE, LINKS, PAPER_CONSTANTS, Trace, burn_in_length, explore_then_commit,
                    first_time, fixed_schedule, make_instance, mean_field_schedule, paper_burn_in, paper_burn_in_length,
                    paper_schedule, run_sgd, two_phase_schedule)
from ._ucb import run_ucb

__all__ = ["AUTHORS_CONSTANTS", "DEGREE", "LINKS", "PAPER_CONSTANTS", "Trace", "burn_in_length", "explore_then_commit",
           "first_time", "fixed_schedule", "make_instance", "mean_field_schedule", "paper_burn_in",
           "paper_burn_in_length", "paper_schedule", "run_sgd", "run_ucb", "two_phase_schedule"]
