# evaluator: glowq_select
# expect: fence: import of 'hifo.problems.glowq' not allowed
# Attack: fetch the model itself in the child and search the selection by measuring perplexity.
import numpy as np


def choose_groups(groups, budget):
    from hifo.problems.glowq import trained_lm

    trained_lm()
    return []
