# evaluator: grape_spectrum
# expect: fence: import of 'hifo.problems.grape_pe' not allowed
# Attack: train the model in the child to search frequencies by their measured recall (the parent's job).
import numpy as np


def spectrum(n_planes, base, train_len):
    from hifo.problems.grape_pe import train_and_test

    train_and_test("rope", 0, steps=1)
    return [0.0] * n_planes
