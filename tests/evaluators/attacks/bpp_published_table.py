# evaluator: bpp_online
# expect: no better than the best baseline
# wins on the published seeds
# set: test
# instances: 2
# Attack (issue 28, memorised instances): FunSearch's Weibull 5k set is published, so a priority function can
# carry its items in a table (the harness pastes them into TABLE, as a model that had read the file would).
# The first three items of an instance name it; from then on the rule knows every item still to come, packs them
# offline (first fit decreasing into the bins already used and new ones) and sends each arriving item to its
# planned bin, keeping a mirror of the loop's remaining capacities to find it among the feasible bins: far below
# Best Fit on the published instances. On a test set drawn from a secret no table entry matches and it is Best
# Fit, call for call.
import numpy as np

TABLE = []
KNOWN = 3
_STATE = {}


def _plan(items, start, rem, cap):
    """First fit decreasing for items[start:]: into the bins already used (their room from the mirror), then new
    ones. Returns each item's bin as ("used", actual index) or ("new", label)."""
    used = [int(b) for b in np.flatnonzero(rem < cap)]
    room = np.concatenate([rem[used], np.full(len(items), cap)])
    where = {}
    for i in sorted(range(start, len(items)), key=lambda i: -items[i]):
        b = int(np.flatnonzero(room >= items[i])[0])
        room[b] -= items[i]
        where[i] = ("used", used[b]) if b < len(used) else ("new", b)
    return where


def priority(item, bins):
    s = _STATE
    if not s:
        s.update(cap=float(bins[0]), rem=np.full(len(bins), float(bins[0])), seen=[], mirror=True, plan=None, new={})
    i = len(s["seen"])
    s["seen"].append(int(item))
    rem, cap = s["rem"], s["cap"]
    feasible = np.flatnonzero(rem >= item)
    if len(feasible) != len(bins):
        s["mirror"] = False  # lost track: plain Best Fit from here
    if not s["mirror"]:
        return -(bins - item)
    if s["plan"] is None and i + 1 >= KNOWN:
        hits = [t for t in TABLE if len(t) == len(rem) and list(t[:i + 1]) == s["seen"]]
        if len(hits) == 1:
            s["plan"] = _plan(hits[0], i, rem, cap)
    if s["plan"] is not None and i in s["plan"]:
        kind, b = s["plan"][i]
        if kind == "new" and b not in s["new"]:
            s["new"][b] = int(np.flatnonzero(rem == cap)[0])
        target = b if kind == "used" else s["new"][b]
    else:
        target = int(feasible[int(np.argmax(-(bins - item)))])  # Best Fit
    rem[target] -= item
    scores = np.zeros(len(bins))
    scores[int(np.searchsorted(feasible, target))] = 1.0
    return scores
