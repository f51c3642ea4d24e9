# evaluator: glowq_select
# expect: no better than the best baseline
# instances: 3
# set: test
# Attack (issue 28): the published test instances come from one published model, so the best group subset of
# each (bits, rank, budget) can be found offline by trying every feasible subset on it, and answered from a table.
# TABLE was computed that way: every subset within the budget scored with the evaluator's own score() on the
# published model (public_seeds = True), the best kept (ppl 1.7555, 1.7230, 1.6630; mean 1.7138 against GlowQ-S's
# 1.7267). Unknown budget: restore nothing.
TABLE = {"2150": ["0.down", "1.down", "1.o"], "14336": ["0.down", "0.upgate", "1.o", "1.qkv"],
         "5734": ["0.down", "0.qkv", "1.qkv"]}  # budget -> best subset on the published model


def choose_groups(groups, budget):
    chosen = TABLE.get(str(budget))
    return list(chosen) if chosen is not None else []
