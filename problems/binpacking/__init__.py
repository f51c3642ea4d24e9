"""Online one-dimensional bin packing, with FunSearch's semantics.

A plain library (it imports nothing else from this repository):

* :class:`BinPackingInstance` — items in arrival order and a bin capacity;
  :func:`l1_bound` and :func:`excess_percent` for the quality measure FunSearch reports;
* :func:`online_pack` — FunSearch's online loop driven by a ``priority(item, bins)``
  heuristic, returning the bin of every item; :func:`count_bins` for the bins it uses;
* :func:`validate_assignment` / :func:`bin_loads` — the independent check of a packing
  (raising :class:`InvalidPacking`), which counts the bins used;
* :func:`read_funsearch_json`, :func:`read_orlib`, :func:`read_optima_csv` — dataset readers;
* :func:`weibull_instance`, :func:`weibull_instances` — seeded Weibull(3, 45) instances.

Example::

    import numpy as np
    from hifo.problems.binpacking import online_pack, validate_assignment, weibull_instance

    def best_fit(item, bins):
        return -(bins - item)

    inst = weibull_instance(500, seed=0)
    used = validate_assignment(inst.items, inst.capacity,
                               online_pack(best_fit, inst.items, inst.capacity))
"""

from ._generate import WEIBULL_CAPACITY, WEIBULL_SCALE, WEIBULL_SHAPE, weibull_instance, weibull_instances
from ._instance import BinPackingInstance, excess_percent, l1_bound
from ._io import read_funsearch_json, read_optima_csv, read_orlib
from ._online import (
    InvalidPacking,
    PriorityFunction,
    bin_loads,
    check_priorities,
    count_bins,
    online_pack,
    validate_assignment,
)

__all__ = [
    "BinPackingInstance",
    "InvalidPacking",
    "PriorityFunction",
    "WEIBULL_CAPACITY",
    "WEIBULL_SCALE",
    "WEIBULL_SHAPE",
    "bin_loads",
    "check_priorities",
    "count_bins",
    "excess_percent",
    "l1_bound",
    "online_pack",
    "read_funsearch_json",
    "read_optima_csv",
    "read_orlib",
    "validate_assignment",
    "weibull_instance",
    "weibull_instances",
]
