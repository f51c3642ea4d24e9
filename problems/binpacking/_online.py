"""FunSearch's online bin-packing loop, and the trusted check of a packing.

The loop follows the skeleton published with FunSearch (Romera-Paredes et al., Nature 2023,
``bin_packing/bin_packing.ipynb``) step for step:

1. open ``num_items`` bins, each with remaining capacity ``capacity`` (so every item fits
   somewhere whatever the heuristic does);
2. for each item in arrival order, the feasible bins are those whose remaining capacity is
   at least the item, in index order;
3. ``priority(item, remaining[feasible])`` scores them; the first highest score wins
   (``np.argmax``); the item's size is subtracted from that bin;
4. the number of bins used is the number of bins whose remaining capacity is no longer
   ``capacity``.

The only addition is that the heuristic's return value is checked (see :func:`check_priorities`)
so a malformed heuristic fails loudly instead of being silently mis-read by ``np.argmax``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ._instance import Number

PriorityFunction = Callable[[Number, np.ndarray], Any]

# Loads may exceed the capacity by this relative amount on decimal data (rounding noise only).
_FLOAT_RTOL = 1e-9


class InvalidPacking(ValueError):
    """An assignment of items to bins that is not a valid packing."""


def _bins_dtype(capacity: Number, items: Sequence[Number]) -> type:
    # FunSearch builds the bins with ``np.array([capacity] * n)``, so integral data give
    # int64 bins. It would silently truncate decimal items subtracted from int bins; here
    # any decimal item or capacity makes the bins float64 instead.
    if isinstance(capacity, (int, np.integer)) and all(
        isinstance(x, (int, np.integer)) for x in items
    ):
        return np.int64
    return np.float64


def check_priorities(scores: Any, num_feasible: int) -> np.ndarray:
    """Return ``scores`` as a 1-D numeric array of length ``num_feasible``.

    Raises :class:`ValueError` with a readable reason for anything else: a scalar, a wrong
    length or shape, non-numeric values, NaN or infinite values.
    """
    try:
        arr = np.asarray(scores)
    except Exception as exc:  # ragged lists and other unconvertible objects
        raise ValueError(f"priority must return an array of numbers; got {type(scores).__name__} "
                         f"that numpy cannot convert ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"priority must return numbers; got an array of dtype {arr.dtype}")
    if arr.shape != (num_feasible,):
        raise ValueError(f"priority must return one score per feasible bin, i.e. shape "
                         f"({num_feasible},); got shape {arr.shape}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"priority must return finite scores; score {bad} is {arr[bad]}")
    return arr


def online_pack(priority: PriorityFunction, items: Sequence[Number], capacity: Number) -> np.ndarray:
    """Pack ``items`` online with ``priority``; return the bin index of every item.

    ``priority(item, bins)`` receives the item size (a Python number) and a fresh array of
    the remaining capacities of the feasible bins, in bin-index order, and returns one score
    per bin. Exceptions raised by ``priority`` propagate unchanged; a malformed return value
    raises :class:`ValueError` naming the item at which it happened.
    """
    items = tuple(items)
    n = len(items)
    remaining: np.ndarray = np.full(n, capacity, dtype=_bins_dtype(capacity, items))
    assignment = np.empty(n, dtype=np.int64)
    for i, item in enumerate(items):
        # ``remaining >= item`` is FunSearch's ``(bins - item) >= 0``: the two agree for all
        # finite IEEE numbers, and this one does not allocate the difference.
        feasible = np.flatnonzero(remaining >= item)
        if feasible.size == 0:
            raise ValueError(f"item {i} of size {item} exceeds the capacity {capacity}")
        returned = priority(item, remaining[feasible])
        try:
            scores = check_priorities(returned, feasible.size)
        except ValueError as exc:
            raise ValueError(f"item {i} (size {item}, {feasible.size} feasible bins): {exc}") from None
        best = feasible[int(np.argmax(scores))]
        remaining[best] -= item
        assignment[i] = best
    return assignment


def count_bins(priority: PriorityFunction, items: Sequence[Number], capacity: Number) -> int:
    """Number of bins :func:`online_pack` uses (FunSearch's per-instance score)."""
    return validate_assignment(items, capacity, online_pack(priority, items, capacity))


def bin_loads(items: Sequence[Number], capacity: Number, assignment: Any,
              num_bins: int | None = None) -> np.ndarray:
    """Check ``assignment`` (one bin index per item) and return the load of every bin.

    ``num_bins`` defaults to the number of items (FunSearch opens that many). Raises
    :class:`InvalidPacking` when the length is wrong, an index is not an integer or out of
    range, or a bin holds more than ``capacity``.
    """
    n = len(items)
    num_bins = n if num_bins is None else int(num_bins)
    if isinstance(assignment, (str, bytes)) or not hasattr(assignment, "__len__"):
        raise InvalidPacking(f"an assignment must be a list of bin indices, got {type(assignment).__name__}")
    try:
        idx = np.asarray(assignment)
    except Exception as exc:
        raise InvalidPacking(f"the assignment is not a list of bin indices ({exc})") from None
    if idx.ndim != 1 or idx.shape[0] != n:
        raise InvalidPacking(f"the assignment must give one bin index per item: expected {n} "
                             f"indices, got shape {idx.shape}")
    if idx.dtype.kind not in "iu":
        raise InvalidPacking(f"bin indices must be integers, got values of dtype {idx.dtype}")
    out = np.flatnonzero((idx < 0) | (idx >= num_bins))
    if out.size:
        k = int(out[0])
        raise InvalidPacking(f"item {k} is assigned to bin {int(idx[k])}, outside 0..{num_bins - 1}")
    sizes = np.asarray(items, dtype=np.float64)
    loads = np.bincount(idx.astype(np.int64), weights=sizes, minlength=num_bins)
    tol = 0.0 if _bins_dtype(capacity, items) is np.int64 else _FLOAT_RTOL * float(capacity)
    over = np.flatnonzero(loads > float(capacity) + tol)
    if over.size:
        b = int(over[0])
        members = np.flatnonzero(idx == b)[:8].tolist()
        raise InvalidPacking(f"{over.size} bin(s) over capacity; bin {b} holds {loads[b]:g} > "
                             f"{capacity} (items {members}{'...' if np.sum(idx == b) > 8 else ''})")
    return loads


def validate_assignment(items: Sequence[Number], capacity: Number, assignment: Any,
                        num_bins: int | None = None) -> int:
    """Check ``assignment`` as :func:`bin_loads` does and return the number of bins used."""
    return int(np.count_nonzero(bin_loads(items, capacity, assignment, num_bins)))
