"""Table of ``ptq4arvg_pool_table``: for each published ``ptq4arvg_calib`` test pool (seeds 6 and 8), keyed by ``k``,
the pool size and the pool's first feature vector (what the slot is shown), the selection with the lowest quantized
``kl`` on that very pool among the five baselines' and 8 random ones (numpy seed 0), each scored by the evaluator,
as a model that had replayed the published pools would carry (2 x 13 scores: 72-75 s on the shared 2-core machine at
load 3-5, 2026-12-07).

``python tests/evaluators/attacks/tables/ptq4arvg_pool_table.py [OUT.json]`` prints the attack's figures the way
``tests/evaluators/test_instance_secrecy.py`` runs it (through the sandbox, on the attack's first ``# instances:``
of ``# set:``): on the published pools and on one secret draw, beside every baseline on the same instances."""

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


def figures() -> dict:
    """``kl`` of the attack and of every baseline, through the sandbox, on the published pools and on a secret draw."""
    import importlib.util
    import time
    from pathlib import Path

    tests = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("instance_secrecy", tests / "test_instance_secrecy.py")
    assert spec is not None and spec.loader is not None
    tis = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tis)
    path = tests / "attacks" / "ptq4arvg_pool_table.py"
    out = {}
    for label, public in (("published", True), ("secret_draw", False)):
        ev = get_evaluator(tis._header(path, "evaluator", ""))
        ev.public_seeds = public
        instances = ev.load_instances(tis._header(path, "set", ev.default_train_set))[:int(tis._header(path, "instances", "1"))]
        t0 = time.perf_counter()
        code = tis.attack_source(path, ev)
        rows = {"attack": tis.sandboxed(ev, code, instances)}
        rows.update({name: tis.sandboxed(ev, src, instances) for name, src in sorted(ev.baselines.items())})
        out[label] = {"instances": [inst.name for inst in instances], "seconds": round(time.perf_counter() - t0, 1),
                      "kl": {name: s.metrics.get("kl") for name, s in rows.items()},
                      "kl_per_instance": {name: [p["kl"] for p in s.per_instance or []] for name, s in rows.items()},
                      "feasible": {name: s.feasible for name, s in rows.items()}}
    return out


if __name__ == "__main__":
    import sys

    result = figures()
    for label, res in result.items():
        print(label, res["instances"], f"{res['seconds']} s")
        for name, kl in res["kl"].items():
            print(f"  {name:14s} kl {kl:.6f}  per instance " + " / ".join(f"{v:.6f}" for v in res["kl_per_instance"][name]))
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            json.dump(result, fh, indent=1)
