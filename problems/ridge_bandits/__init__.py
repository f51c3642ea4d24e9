"""SGD for single-index (ridge) bandits: burn-in then learning, with schedule baselines and ETC."""

from ._core import (DEGREE, LINKS, Trace, explore_then_commit, first_time, fixed_schedule, make_instance, run_sgd,
                    two_phase_schedule)

__all__ = ["DEGREE", "LINKS", "Trace", "explore_then_commit", "first_time", "fixed_schedule", "make_instance",
           "run_sgd", "two_phase_schedule"]
