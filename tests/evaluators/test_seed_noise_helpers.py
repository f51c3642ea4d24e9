"""The shared reference-figure helpers of evaluators/_seed_noise.py (used by grape_anchor and grape_slopes)."""

import pytest

from hifo.evaluators._seed_noise import baselines_per_instance, rank_agreement


class Toy:
    baselines = {"a": "", "b": "", "c": ""}
    instance_sets = ("train", "test")

    def load_instances(self, instance_set):
        return [1.0, 2.0] if instance_set == "train" else [3.0, 4.0, 5.0]

    def aggregate(self, per):
        return {"m": sum(p["m"] for p in per) / len(per)}


def _on(job):
    name, instance_set, index = job
    value = Toy().load_instances(instance_set)[index]
    return {"m": value * {"a": 1.0, "b": 2.0, "c": 3.0}[name]}


def test_every_baseline_on_every_instance_aggregated_per_set():
    out, results = baselines_per_instance(Toy(), _on, jobs=1)
    assert len(results) == 3 * (2 + 3) and list(results)[0] == ("a", "train", 0)
    assert out["b"] == {"train": {"m": 3.0}, "test": {"m": 8.0}}
    agree = rank_agreement(out, ["a", "b", "c"], "m")
    assert agree["train"] == [1.5, 3.0, 4.5] and agree["spearman"] == pytest.approx(1.0)
