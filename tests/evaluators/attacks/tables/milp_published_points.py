"""Table of ``milp_published_points``: HiGHS's best points of the published set-cover ``milp_primal`` test instances
(``_published_setcover.py``), as sparse (indices, values), keyed by the matrix's non-zero count and the first eight
costs."""

import importlib.util
from pathlib import Path


def table(ev) -> dict[str, list[list]]:
    spec = importlib.util.spec_from_file_location("_published_setcover", Path(__file__).with_name("_published_setcover.py"))
    assert spec is not None and spec.loader is not None
    shared = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shared)
    out = {}
    for inst, x in shared.optimal_points():
        nz = [j for j in range(inst.n_vars) if abs(x[j]) > 1e-9]
        out[repr((int(inst.A.nnz), [round(float(v), 6) for v in inst.c[:8]]))] = [nz, [round(float(x[j])) for j in nz]]
    return out
