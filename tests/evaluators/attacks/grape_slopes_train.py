# evaluator: grape_slopes
# expect: fence: import of 'hifo.problems.grape_pe' not allowed
# Attack: train the model in the child to search slopes by their measured recall (the parent's job).
import numpy as np


def slopes(heads, layers, train_len):
    from hifo.problems.grape_pe import train_and_test

    train_and_test("grape_a", 0, steps=1)
    return [[0.0] * heads for _ in range(layers)]
