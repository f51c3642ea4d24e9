"""Named, seeded instance collections (what the evaluators, benchmarks and FMIP training use).

Sizes are chosen so that HiGHS on one of today's CPU cores usually does *not* close the gap in
about a second (so a primal heuristic has room to matter) while the LP and a GNN pass stay in
milliseconds. Seeds of different collections never overlap (train 100+, test 200+, FMIP
training data 1000+).
"""

from __future__ import annotations

from pathlib import Path

from ._generators import generate
from ._instance import MILPInstance

SIZES: dict[str, dict] = {
    "setcover": {"n_rows": 300, "n_cols": 600, "density": 0.05},
    "cauctions": {"n_items": 100, "n_bids": 500},
    "indset": {"n_nodes": 500, "affinity": 4},
    "gisp": {"n_nodes": 50, "edge_prob": 0.25},
    "fcmnf": {"n_nodes": 15, "n_arcs": 60, "n_commodities": 15},
}
FAMILIES = tuple(SIZES)

# name -> (seed base, instances per family)
COLLECTIONS: dict[str, tuple[int, int]] = {"train": (100, 1), "test": (200, 3), "fmip_data": (1000, 12)}


def collection(name: str, families: tuple[str, ...] = FAMILIES) -> list[MILPInstance]:
    """The instances of a named collection, family by family."""
    try:
        base, per = COLLECTIONS[name]
    except KeyError:
        raise KeyError(f"unknown MILP collection {name!r}; known: {', '.join(COLLECTIONS)}") from None
    return [generate(f, base + k, **SIZES[f]) for f in families for k in range(per)]


def mps_collection(directory, pattern: tuple[str, ...] = ("*.mps", "*.mps.gz")) -> list[MILPInstance]:
    """Every MPS file of ``directory`` (e.g. the small MIPLIB instances of
    ``../shared/data/miplib/`` where a checkout has them), sorted by file name. A missing
    directory raises ``FileNotFoundError`` rather than returning an empty set silently."""
    from ._highs import read_mps  # lazy: the generators alone do not need HiGHS

    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"no MPS directory at {root}")
    files = sorted({p for pat in pattern for p in root.glob(pat)})
    out = []
    for p in files:
        inst = read_mps(p, name=p.name.split(".mps")[0])
        inst.family = "mps"
        out.append(inst)
    return out
