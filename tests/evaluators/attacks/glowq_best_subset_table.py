# evaluator: glowq_select
# expect: no better than the best baseline
# wins on the published seeds
# instances: 3
# set: test
# Attack (issue 28; the slot is a per-group rank allocation since issue 30): the published test instances come
# from one published model, so good allocations for each (bits, budget) can be searched offline on it and
# answered from a table whenever the published model is recognised (by its statistics). TABLE was computed
# that way: from the uniform-rank baseline's allocation, 40 one-unit rank moves per instance scored with the
# evaluator's own score() on the published model (public_seeds = True), improvements kept (ppl 1.71470,
# 1.69240, 1.65481 against uniform's 1.71704, 1.69506, 1.65630). Another model: correct nothing.
TABLE = {"3584": {"0.qkv": 3, "0.o": 2, "0.upgate": 1, "0.down": 3, "1.qkv": 2, "1.o": 2, "1.upgate": 2, "1.down": 1},
         "8601": {"0.qkv": 6, "0.o": 3, "0.upgate": 4, "0.down": 4, "1.qkv": 4, "1.o": 4, "1.upgate": 4, "1.down": 3},
         "7168": {"0.qkv": 6, "0.o": 5, "0.upgate": 5, "0.down": 2, "1.qkv": 4, "1.o": 4, "1.upgate": 2, "1.down": 4}}
PUBLISHED = 12.002239227294922  # the published model's ||W|| of its first group (0.qkv)


def choose_ranks(groups, budget, rank):
    if abs(groups[0]["weight_norm"] - PUBLISHED) > 1e-4:
        return {}
    return dict(TABLE.get(str(budget), {}))
