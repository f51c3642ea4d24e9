"""Reader for TSPLIB symmetric ``.tsp`` files with ``EUC_2D`` weights, and their optima."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from ._instance import TSPInstance, euc2d_matrix

PathLike = str | os.PathLike


def read_tsplib(path: PathLike, optimum: float | None = None) -> TSPInstance:
    """Read a TSPLIB ``TYPE: TSP`` file with ``EDGE_WEIGHT_TYPE: EUC_2D``.

    Node ids must be ``1..n`` in order; the returned instance numbers them ``0..n-1``.
    Distances follow TSPLIB: ``nint(sqrt(dx^2 + dy^2))``. Other weight types raise
    ``ValueError`` (a teammate extends this for ATSP and CVRP files).
    """
    header: dict[str, str] = {}
    rows: list[list[float]] = []
    in_coords = False
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line == "EOF":
            break
        if line.startswith("NODE_COORD_SECTION"):
            in_coords = True
            continue
        if in_coords:
            parts = line.split()
            if len(parts) != 3:
                raise ValueError(f"{path}: malformed coordinate line {raw!r}")
            if int(parts[0]) != len(rows) + 1:
                raise ValueError(f"{path}: node ids must run 1..n in order, got {parts[0]}")
            rows.append([float(parts[1]), float(parts[2])])
        elif ":" in line:
            key, value = line.split(":", 1)
            header[key.strip().upper()] = value.strip()
        else:
            raise ValueError(f"{path}: unsupported line {raw!r}")
    if header.get("TYPE", "TSP") != "TSP":
        raise ValueError(f"{path}: TYPE {header.get('TYPE')} is not supported (TSP only)")
    if header.get("EDGE_WEIGHT_TYPE") != "EUC_2D":
        raise ValueError(f"{path}: EDGE_WEIGHT_TYPE {header.get('EDGE_WEIGHT_TYPE')} is not supported")
    n = int(header.get("DIMENSION", "-1"))
    if n != len(rows):
        raise ValueError(f"{path}: DIMENSION {n} but {len(rows)} coordinate lines")
    coords = np.array(rows, dtype=np.float64)
    name = header.get("NAME", Path(path).stem)
    return TSPInstance(name, euc2d_matrix(coords), coords, optimum,
                       "optimal" if optimum is not None else None)


def read_tsplib_optima(path: PathLike, collection: str = "tsplib-tsp") -> dict[str, float]:
    """``{instance name: optimal length}`` for one collection of the shared ``optima.csv``."""
    with open(path, newline="", encoding="utf-8") as fh:
        return {row["instance"]: float(row["value"])
                for row in csv.DictReader(fh) if row["collection"] == collection}
