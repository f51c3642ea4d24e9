"""Readers for published bin-packing datasets.

* FunSearch's JSON files (``{name: {"capacity", "num_items", "items"}}``), as released with
  Romera-Paredes et al. (2023) for the OR3 and Weibull 5k datasets;
* OR-Library's ``binpack1.txt`` ... ``binpack8.txt`` (Falkenauer's instances);
* the ``optima.csv`` table of optimal bin counts that accompanies the shared data.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from ._instance import BinPackingInstance, Number

PathLike = str | os.PathLike


def _number(token: str) -> Number:
    """``"42"`` -> 42, ``"36.6"`` -> 36.6: integral data stay exact Python ints."""
    try:
        return int(token)
    except ValueError:
        return float(token)


def read_funsearch_json(path: PathLike) -> list[BinPackingInstance]:
    """Instances of a FunSearch dataset file, in file order, named by their keys."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of instances")
    out = []
    for name, rec in data.items():
        items = tuple(_number(str(x)) if isinstance(x, str) else x for x in rec["items"])
        if int(rec["num_items"]) != len(items):
            raise ValueError(f"{path}: {name} declares {rec['num_items']} items but lists {len(items)}")
        out.append(BinPackingInstance(name=name, capacity=rec["capacity"], items=items))
    return out


def read_orlib(path: PathLike, optima: dict[str, int] | None = None) -> list[BinPackingInstance]:
    """Instances of an OR-Library ``binpack*.txt`` file.

    Format: the number of problems, then per problem its identifier, a line
    ``capacity n best_known`` and ``n`` item sizes. The file's ``best_known`` is *not* used
    (two headers of ``binpack1``/``binpack2`` are known to be wrong); pass ``optima``
    (e.g. from :func:`read_optima_csv`) to attach proven optima by instance name.
    Capacities and sizes written with a decimal point (the triplet files) become floats.
    """
    tokens = Path(path).read_text(encoding="utf-8").split()
    if not tokens:
        raise ValueError(f"{path}: empty file")
    count, pos = int(tokens[0]), 1
    out: list[BinPackingInstance] = []
    for _ in range(count):
        if pos + 4 > len(tokens):
            raise ValueError(f"{path}: truncated after {len(out)} problems")
        name, capacity, n = tokens[pos], _number(tokens[pos + 1]), int(tokens[pos + 2])
        pos += 4  # skip the header's best-known value
        sizes = tokens[pos:pos + n]
        if len(sizes) != n:
            raise ValueError(f"{path}: {name} declares {n} items, found {len(sizes)}")
        pos += n
        optimum = None if optima is None else optima.get(name)
        out.append(BinPackingInstance(name, capacity, tuple(_number(t) for t in sizes), optimum))
    if pos != len(tokens):
        raise ValueError(f"{path}: {len(tokens) - pos} unexpected trailing tokens")
    return out


def read_optima_csv(path: PathLike, collection: str = "orlib-binpacking") -> dict[str, int]:
    """``{instance name: optimal bins}`` for one collection of the shared ``optima.csv``."""
    with open(path, newline="", encoding="utf-8") as fh:
        return {row["instance"]: int(float(row["value"]))
                for row in csv.DictReader(fh) if row["collection"] == collection}
