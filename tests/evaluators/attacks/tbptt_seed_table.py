# evaluator: tbptt_burnin
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 1
# Attack (issue 28, memorised instances / public seeds): the test instances' records and training seeds come from
# published seeds, so a rule can recognise its instance by the mean loss of the first epoch (trained without burn-in,
# as the baselines "no_burn_in" and "ramp" start) and play a schedule tuned offline on that very instance (the
# harness pastes a table of the best of four schedules, none a baseline, for the first published instance: picking per
# instance pays where the seed-to-seed spread exceeds the gaps between schedules). With no table hit (a secret draw)
# it is the baseline "ramp", epoch for epoch.

TABLE = {}


def burn_in(epoch, epochs, window, losses):
    if epoch > 0:
        schedule = TABLE.get(f"{window}:{float(losses[0]):.6e}")
        if schedule is not None:
            return int(schedule[epoch])
    return int(0.75 * (window - 1) * epoch / max(epochs - 1, 1))
