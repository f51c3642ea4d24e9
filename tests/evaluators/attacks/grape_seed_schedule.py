# evaluator: grape_anchor
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 2
# Attack (issue 28, memorised instances / public seeds): a test run is seeded by a published seed, so the first
# mini-batch loss the slot is shown (at step 1) names the run, and which anchor schedule does best on that very run is
# known in advance: the harness pastes a table, keyed by the run's length, budget and first loss, of the better of
# "no anchors" and "back-loaded anchors" per published run, replayed offline. Step 0 (shown nothing) never anchors.
# With no table hit (a secret draw) it is the "none" baseline, call for call.
TABLE = {}
_PICK = {}


def take_anchor(step, total_steps, align, losses, anchors_used, budget):
    if losses and "rule" not in _PICK:
        _PICK["rule"] = TABLE.get(f"{total_steps}:{budget}:{float(losses[0])!r}", "none")
    if _PICK.get("rule") == "back_loaded":
        return step >= total_steps - budget
    return False
