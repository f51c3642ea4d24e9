"""hifo.evaluators._data: stored references are used only for the exact instance they were made on."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.evaluators._data import StaleReference, checked_reference
from hifo.problems.routing import array_digest

COORDS = np.arange(6.0).reshape(3, 2)
REFS = {"u3_seed1": {"n": 3, "seed": 1, "sha256": array_digest(COORDS), "length": 4.5}}


def test_the_matching_record_is_returned():
    assert checked_reference(REFS, "u3_seed1", array_digest(COORDS), remake="make it", n=3, seed=1)["length"] == 4.5


@pytest.mark.parametrize("name, expect", [("u3_seed2", {"n": 3, "seed": 2}), ("u3_seed1", {"n": 4, "seed": 1})])
def test_a_missing_or_other_record_names_the_command(name, expect):
    with pytest.raises(StaleReference, match=f"no stored reference for {name}; rerun make it"):
        checked_reference(REFS, name, array_digest(COORDS), remake="make it", **expect)


def test_a_generator_that_drifted_is_caught():
    with pytest.raises(RuntimeError, match="no longer reproduces"):
        checked_reference(REFS, "u3_seed1", array_digest(COORDS + 1e-9), remake="make it", n=3, seed=1)


def test_another_digest_key():
    refs = {"a": {"coords_sha256": array_digest(COORDS)}}
    assert checked_reference(refs, "a", array_digest(COORDS), remake="x", digest_key="coords_sha256") is refs["a"]
    with pytest.raises(StaleReference):
        checked_reference(refs, "a", array_digest(COORDS), remake="x")  # no "sha256" field
