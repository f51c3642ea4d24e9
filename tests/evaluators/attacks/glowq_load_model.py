# evaluator: glowq_select
# expect: fence: import of 'hifo.problems.glowq' not allowed
# Attack: fetch the model itself in the child and search the ranks by measuring perplexity.
import numpy as np


def choose_ranks(groups, budget, rank):
    from hifo.problems.glowq import trained_lm

    trained_lm()
    return {}
