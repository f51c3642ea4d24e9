# evaluator: grape_anchor
# expect: fence: import of 'torch' not allowed
# Attack: reach torch from the slot to tamper with the training run (the slot gets only its inputs).
import numpy as np


def take_anchor(step, total_steps, align, losses, anchors_used, budget):
    import torch

    torch.manual_seed(0)
    return False
