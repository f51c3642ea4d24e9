"""Readers for TSPLIB files (symmetric ``EUC_2D`` ``.tsp``, asymmetric ``FULL_MATRIX``
``.atsp``) and for the optima in the shared ``optima.csv``."""

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
    ``ValueError``; asymmetric files are read by :func:`read_tsplib_atsp`.
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


def read_tsplib_atsp(path: PathLike, optimum: float | None = None) -> TSPInstance:
    """Read a TSPLIB ``TYPE: ATSP`` file (``EXPLICIT`` weights, ``FULL_MATRIX`` format).

    The ``n * n`` integers of ``EDGE_WEIGHT_SECTION`` may wrap over any number of lines.
    TSPLIB stores placeholders on the diagonal (9999, 9999999, 100000000 or 0) that are not
    distances: they are set to 0 here, since a tour never uses an arc ``i -> i``. Off-diagonal
    zeros (p43, rbg*) are real zero-cost arcs and are kept. Returns the distances as float64
    (exact integers), in an instance whose ``coords`` is ``None``.
    """
    header: dict[str, str] = {}
    values: list[int] = []
    in_weights = False
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line == "EOF":
            break
        if line.startswith("EDGE_WEIGHT_SECTION"):
            in_weights = True
            continue
        if in_weights:
            try:
                values.extend(int(tok) for tok in line.split())
            except ValueError:
                raise ValueError(f"{path}: non-integer weight line {raw!r}") from None
        elif ":" in line:
            key, value = line.split(":", 1)
            header[key.strip().upper()] = value.strip()
        else:
            raise ValueError(f"{path}: unsupported line {raw!r}")
    if header.get("TYPE") != "ATSP":
        raise ValueError(f"{path}: TYPE {header.get('TYPE')} is not ATSP")
    if header.get("EDGE_WEIGHT_TYPE") != "EXPLICIT" or header.get("EDGE_WEIGHT_FORMAT") != "FULL_MATRIX":
        raise ValueError(f"{path}: only EXPLICIT / FULL_MATRIX weights are supported, got "
                         f"{header.get('EDGE_WEIGHT_TYPE')} / {header.get('EDGE_WEIGHT_FORMAT')}")
    n = int(header.get("DIMENSION", "-1"))
    if n < 1 or len(values) != n * n:
        raise ValueError(f"{path}: DIMENSION {n} needs {n * n} weights, found {len(values)}")
    d = np.array(values, dtype=np.float64).reshape(n, n)
    np.fill_diagonal(d, 0.0)
    if (d < 0).any():
        raise ValueError(f"{path}: negative arc weights are not supported")
    name = header.get("NAME", Path(path).stem)
    return TSPInstance(name, d, None, optimum, "optimal" if optimum is not None else None)


def read_tsplib_optima(path: PathLike, collection: str = "tsplib-tsp") -> dict[str, float]:
    """``{instance name: optimal length}`` for one collection of the shared ``optima.csv``
    (``"tsplib-tsp"`` or ``"tsplib-atsp"``)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return {row["instance"]: float(row["value"])
                for row in csv.DictReader(fh) if row["collection"] == collection}
