"""Min-max, SmoothQuant-style and PTQ4ARVG post-training quantization of a tiny autoregressive image generator.

    python -m benchmarks.ptq4arvg            # W8A8, W6A6, W4A4; 3 calibration draws + DGC (a few minutes)
    python -m benchmarks.ptq4arvg --quick    # W4A4 only, one calibration draw
    python -m benchmarks.ptq4arvg --slot     # the ptq4arvg_calib slot's baselines over several pool draws

The generator (2 adaLN blocks, d = 48, learned positions; :mod:`hifo.problems.ptq4arvg`) is trained here on
generated 8x8 images of 4 classes. Every block linear layer and the output head are quantized. Methods:
``minmax``, ``smoothquant``, ``ptq4arvg`` (the official placement: GPS on qkv/fc1/head, grouped token-wise
percentile ranges on proj/fc2) and ``ptq4arvg_v1`` (this project's first version). Each is calibrated on 16
sequences: the first 16 of three pools of 192 real images (three random draws; mean and standard deviation),
and on the official DGC's choice of 16 from a pool of 64 images sampled with classifier-free guidance
(scale 1.5, each after its class token and after the null token). Scores: held-out next-pixel NLL (nats/token;
512 images, no guidance) and ``kl``, the KL divergence (nats/token) of the quantized model's guided (1.5)
next-pixel distribution from the full-precision one on those images. ``diff`` columns: PTQ4ARVG minus min-max
and minus SmoothQuant (negative: PTQ4ARVG better). Results: ``benchmarks/results/ptq4arvg.json``
(``--quick``: ``ptq4arvg_quick.json``; ``--slot``: ``ptq4arvg_slot.json``, each ``ptq4arvg_calib`` baseline
on the train and published test instances and on the slot's instances over further pool draws, the
train-test Spearman correlation of the baselines and their spread against the draw-to-draw noise).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from hifo.problems.ptq4arvg import (METHODS, cfg_kl, cfg_pool, dgc_calibration, nll, outlier_stats, quantize_model,
                                    sample_features, sequences, trained_arvg)

RESULTS = Path(__file__).parent / "results"
POOLS = (5, 6, 8)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--slot", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.slot:
        return slot()
    t0 = time.perf_counter()
    model = trained_arvg()
    val = sequences(512, 7)
    pools = {seed: sequences(192, seed) for seed in (POOLS[:1] if args.quick else POOLS)}
    fp = nll(model, val)
    first = pools[POOLS[0]]
    out: dict = {"fp_nll": fp, "params": sum(p.numel() for p in model.parameters()),
                 "outliers": outlier_stats(model, first[:64]), "rows": [], "summary": []}
    print(f"full precision NLL {fp:.4f} nats/token; outliers {out['outliers']}")
    gpool = cfg_pool(model, 64, 1.5, POOLS[0])
    dgc = dgc_calibration(sample_features(model, gpool), 16)
    out["dgc_conditional"] = sum(i < 64 for i in dgc)
    print(f"DGC: {out['dgc_conditional']} conditional of 16")
    print(f"{'bits':>4} {'method':12} {'first16 mean':>12} {'sd':>7} {'dgc':>8} {'kl mean':>8} {'kl dgc':>8}")
    for bits in ((4,) if args.quick else (8, 6, 4)):
        means = {}
        for method in METHODS:
            draws, kls = [], []
            for seed, pool in pools.items():
                q = quantize_model(model, method, bits, pool[:16])
                draws.append(nll(q, val))
                kls.append(cfg_kl(model, q, val, 1.5))
                out["rows"].append({"bits": bits, "method": method, "calib": f"first16/pool{seed}", "nll": draws[-1],
                                    "kl": kls[-1]})
            q = quantize_model(model, method, bits, gpool[dgc])
            value, kl = nll(q, val), cfg_kl(model, q, val, 1.5)
            out["rows"].append({"bits": bits, "method": method, "calib": f"dgc/cfgpool{POOLS[0]}", "nll": value,
                                "kl": kl})
            sd = statistics.stdev(draws) if len(draws) > 1 else 0.0
            means[method] = statistics.fmean(draws)
            out["summary"].append({"bits": bits, "method": method, "nll_mean": means[method], "nll_sd": sd,
                                   "nll_dgc": value, "kl_mean": statistics.fmean(kls), "kl_dgc": kl})
            print(f"{bits:>4} {method:12} {means[method]:12.4f} {sd:7.4f} {value:8.4f} {statistics.fmean(kls):8.5f} "
                  f"{kl:8.5f}", flush=True)
        diff = {"bits": bits, "ptq4arvg_minus_minmax": means["ptq4arvg"] - means["minmax"],
                "ptq4arvg_minus_smoothquant": means["ptq4arvg"] - means["smoothquant"]}
        out.setdefault("diffs", []).append(diff)
        print(f"     diff vs min-max {diff['ptq4arvg_minus_minmax']:+.4f}, vs SmoothQuant "
              f"{diff['ptq4arvg_minus_smoothquant']:+.4f}")
    out["wall_s"] = time.perf_counter() - t0
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / ("ptq4arvg_quick.json" if args.quick else "ptq4arvg.json")
    path.write_text(json.dumps(out, indent=1))
    print(f"results: {path} ({out['wall_s']:.0f} s)")
    return out


SLOT_DRAWS = (11, 12, 13, 14)  # further pool seeds: the draw-to-draw noise of each baseline


def _spearman(a: list[float], b: list[float]) -> float:
    def ranks(x):  # average ranks on ties
        order = sorted(range(len(x)), key=lambda i: x[i])
        r = [0.0] * len(x)
        i = 0
        while i < len(x):
            j = i
            while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
                j += 1
            for t in range(i, j + 1):
                r[order[t]] = (i + j) / 2
            i = j + 1
        return r
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")


def slot() -> dict:
    """The ``ptq4arvg_calib`` baselines: train, published test, and each test spec over :data:`SLOT_DRAWS`."""
    import json as _json

    from hifo.evaluators.ptq4arvg_calib import _SPECS, CalibInstance, PTQ4ARVGCalib, _pool
    from hifo.problems._repro import one_torch_thread

    t0 = time.perf_counter()
    ev = PTQ4ARVGCalib()
    fns = {}
    for name, source in ev.baselines.items():
        ns: dict = {}
        exec(source, ns)  # trusted: the evaluator's own baselines
        fns[name] = ns["select_calibration"]
    model = trained_arvg()
    specs = sorted({(bits, k) for bits, k, _ in _SPECS["train"] + _SPECS["test"]}, reverse=True)

    def run(inst) -> dict[str, float]:
        return {n: ev.score(inst, _json.loads(_json.dumps(ev.solve(f, inst))))["kl"] for n, f in fns.items()}

    out: dict = {"sets": {}, "draws": []}
    with one_torch_thread():
        for s in ("train", "test_published"):
            per = [run(i) for i in ev.load_instances(s)]
            out["sets"][s] = {n: statistics.fmean(p[n] for p in per) for n in fns}
            print(s, {n: round(v, 5) for n, v in out["sets"][s].items()}, flush=True)
        for seed in SLOT_DRAWS:
            pool = _pool(seed)
            feats = sample_features(model, pool)
            for bits, k in specs:
                inst = CalibInstance(f"w{bits}a{bits}/k{k}/pool{seed}", bits, k, seed,
                                     tuple(tuple(round(float(v), 6) for v in f) for f in feats),
                                     tuple(int(c) - 8 if int(c) < 12 else -1 for c in pool[:, 0]))
                row = run(inst)
                out["draws"].append({"instance": inst.name, "bits": bits, "k": k, "kl": row})
                print(inst.name, {n: round(v, 5) for n, v in row.items()}, flush=True)
    names = list(fns)
    out["spearman_train_test"] = _spearman([out["sets"]["train"][n] for n in names],
                                           [out["sets"]["test_published"][n] for n in names])
    noise = {}
    for bits, k in specs:
        rows = [d["kl"] for d in out["draws"] if d["bits"] == bits and d["k"] == k]
        noise[f"w{bits}a{bits}/k{k}"] = {
            "mean": {n: statistics.fmean(r[n] for r in rows) for n in names},
            "sd": {n: statistics.stdev(r[n] for r in rows) for n in names},
            "spread": max(statistics.fmean(r[n] for r in rows) for n in names)
            - min(statistics.fmean(r[n] for r in rows) for n in names)}
    out["by_spec"] = noise
    out["wall_s"] = time.perf_counter() - t0
    print(f"train-test Spearman {out['spearman_train_test']:+.3f}")
    for spec, v in noise.items():
        print(spec, "mean", {n: round(x, 5) for n, x in v["mean"].items()}, "sd",
              {n: round(x, 5) for n, x in v["sd"].items()}, f"spread {v['spread']:.5f}")
    path = RESULTS / "ptq4arvg_slot.json"
    path.write_text(_json.dumps(out, indent=1))
    print(f"results: {path} ({out['wall_s']:.0f} s)")
    return out


if __name__ == "__main__":
    main()
