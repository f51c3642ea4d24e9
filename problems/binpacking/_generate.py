"""Random bin-packing instances as in FunSearch's Weibull experiments."""

from __future__ import annotations

import numpy as np

from ._instance import BinPackingInstance

WEIBULL_SHAPE = 3.0
WEIBULL_SCALE = 45.0
WEIBULL_CAPACITY = 100


def weibull_instance(num_items: int, seed: int, *, capacity: int = WEIBULL_CAPACITY,
                     shape: float = WEIBULL_SHAPE, scale: float = WEIBULL_SCALE,
                     name: str | None = None) -> BinPackingInstance:
    """One instance with Weibull item sizes, reproducible from ``seed``.

    What is followed: FunSearch (Romera-Paredes et al., Nature 2023, Methods) samples item
    sizes from a Weibull distribution with shape 3 and scale 45 (mean about 40) for bins of
    capacity 100, clips them at the capacity and rounds them to integers (after Castiñeiras
    et al., 2012). The generator published with EoH for the same benchmark clips to
    ``[1, capacity]`` before rounding, which this function does too so that no item has size
    0; the two differ only for draws below 0.5, about one item in 700,000.

    Draws come from ``numpy.random.default_rng(seed).weibull(shape, num_items) * scale``,
    then ``np.clip(., 1, capacity)`` and ``np.round`` (NumPy's half-to-even, immaterial for a
    continuous distribution). Items are returned as Python ints.
    """
    if num_items < 1:
        raise ValueError("num_items must be at least 1")
    rng = np.random.default_rng(seed)
    draws = rng.weibull(shape, num_items) * scale
    sizes = np.round(np.clip(draws, 1, capacity)).astype(np.int64)
    label = name if name is not None else f"weibull_{num_items}_seed{seed}"
    return BinPackingInstance(label, int(capacity), tuple(int(s) for s in sizes))


def weibull_instances(count: int, num_items: int, seed: int, **kwargs) -> list[BinPackingInstance]:
    """``count`` instances with seeds ``seed, seed + 1, ...``, named ``weibull_<n>_<k>``."""
    return [weibull_instance(num_items, seed + k, name=f"weibull_{num_items}_{k}", **kwargs)
            for k in range(count)]
