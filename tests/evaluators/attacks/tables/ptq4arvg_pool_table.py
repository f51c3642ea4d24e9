"""Table of ``ptq4arvg_pool_table``: for each published ``ptq4arvg_calib`` test pool (seeds 6 and 8), keyed by ``k``,
the pool size and the pool's first feature vector (what the slot is shown), the selection with the lowest quantized
``kl`` on that very pool among the five baselines' and 8 random ones (numpy seed 0), each scored by the evaluator,
as a model that had replayed the published pools would carry (about 2 x 13 scores, ~30 s on one core)."""

import json

import numpy as np

from hifo.evaluators.registry import get_evaluator


def key(features, k: int) -> str:
    return f"{k}:{len(features)}:" + ",".join(repr(float(v)) for v in features[0][:4])


def table(ev) -> dict[str, list[int]]:
    public = get_evaluator("ptq4arvg_calib")
    public.public_seeds = True
    rng = np.random.default_rng(0)
    out = {}
    for inst in public.load_instances("test"):
        choices = []
        for source in public.baselines.values():
            ns: dict = {}
            exec(source, ns)  # trusted: the evaluator's own baselines
            choices.append(json.loads(json.dumps(public.solve(ns["select_calibration"], inst))))
        choices += [sorted(int(i) for i in rng.choice(len(inst.classes), inst.k, replace=False)) for _ in range(8)]
        best = min(choices, key=lambda sel: public.score(inst, sel)["kl"])
        out[key([list(f) for f in inst.features], inst.k)] = best
    return out
