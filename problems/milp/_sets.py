"""Named, seeded instance collections (what the evaluators, benchmarks and FMIP training use).

Set cover, combinatorial auction and independent set are at Gasse et al. (2019)'s training sizes
(500x1000 at density 0.05, 100 items x 500 bids, 500 nodes with affinity 4); GISP, FCMNF and the
general-integer cover are scaled up until HiGHS alone does not close the gap in a few CPU seconds.
Measured on the shared 2-core machine (HiGHS 1.16, one thread, seeds 200-201): after 2-4 CPU s
the gap HiGHS reports is 5-7 % (set cover), 16-22 % (auctions; after 1 CPU s its incumbent is
still ~17x worse than the one it reaches later), 1-2 % (indset), 2-3 % (intcover), 73 % (GISP),
2-3 % (FCMNF), so a primal heuristic has room to matter. Seeds of different collections never overlap (train 100+, test 200+, FMIP
training data 1000+).
"""

from __future__ import annotations

from pathlib import Path

from ._generators import generate
from ._instance import MILPInstance

SIZES: dict[str, dict] = {
    "setcover": {"n_rows": 500, "n_cols": 1000, "density": 0.05},
    "cauctions": {"n_items": 100, "n_bids": 500},
    "indset": {"n_nodes": 500, "affinity": 4},
    "intcover": {"n_rows": 60, "n_cols": 120},
    "gisp": {"n_nodes": 100, "edge_prob": 0.25},
    "fcmnf": {"n_nodes": 20, "n_arcs": 100, "n_commodities": 25},
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
        inst = read_mps(str(p), name=p.name.split(".mps")[0])
        inst.family = "mps"
        out.append(inst)
    return out
