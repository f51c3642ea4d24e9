"""The bin-packing instance and its L1 lower bound."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

Number = int | float


@dataclass(frozen=True)
class BinPackingInstance:
    """One 1-D bin-packing instance: items in arrival order and a common bin capacity.

    ``items`` holds plain Python numbers (``int`` when the data are integral), as FunSearch
    hands them to its heuristic. ``known_optimum`` is the optimal number of bins when one is
    published (OR-Library), else ``None``.
    """

    name: str
    capacity: Number
    items: tuple[Number, ...]
    known_optimum: int | None = None

    def __post_init__(self) -> None:
        if not self.capacity > 0:
            raise ValueError(f"{self.name}: capacity must be positive, got {self.capacity!r}")
        if not self.items:
            raise ValueError(f"{self.name}: an instance needs at least one item")
        for i, size in enumerate(self.items):
            if not (isinstance(size, (int, float)) and math.isfinite(size)):
                raise ValueError(f"{self.name}: item {i} is not a finite number: {size!r}")
            if size <= 0 or size > self.capacity:
                raise ValueError(
                    f"{self.name}: item {i} has size {size}, outside (0, capacity={self.capacity}]"
                )

    @property
    def num_items(self) -> int:
        return len(self.items)

    @property
    def l1_bound(self) -> int:
        """``ceil(sum(items) / capacity)``: no packing can use fewer bins."""
        return l1_bound(self.items, self.capacity)

    def to_funsearch(self) -> dict:
        """The ``{capacity, num_items, items}`` dict of FunSearch's published datasets."""
        return {"capacity": self.capacity, "num_items": self.num_items, "items": list(self.items)}


def l1_bound(items: Sequence[Number], capacity: Number) -> int:
    """L1 lower bound on the number of bins, ``ceil(sum(items) / capacity)``.

    Integral data are summed exactly; for decimal data a tiny relative tolerance keeps
    rounding noise (e.g. ``sum == 100.00000000000001`` for an exact ``100``) from adding a bin.
    """
    if isinstance(capacity, int) and all(isinstance(x, int) for x in items):
        return int(-(-sum(items) // capacity))
    ratio = math.fsum(items) / capacity
    return max(0, math.ceil(ratio - 1e-9 * max(1.0, ratio)))


def excess_percent(bins: float, bound: float) -> float:
    """How far ``bins`` is above ``bound``, in percent: ``(bins - bound) / bound * 100``.

    FunSearch reports this with the *means* over a dataset of bins used and of L1 bounds.
    """
    if bound <= 0:
        raise ValueError(f"the bound must be positive, got {bound}")
    return (float(bins) - float(bound)) / float(bound) * 100.0
