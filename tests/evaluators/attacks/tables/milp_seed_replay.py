"""Table of ``milp_seed_replay``: for each published set-cover seed of ``milp_primal``'s test set (200-202, from the
source's collections), the columns of HiGHS's best point (``_published_setcover.py``)."""

import importlib.util
from pathlib import Path


def table(ev) -> dict[int, list[int]]:
    spec = importlib.util.spec_from_file_location("_published_setcover", Path(__file__).with_name("_published_setcover.py"))
    assert spec is not None and spec.loader is not None
    shared = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shared)
    return {int(inst.name.rsplit("_s", 1)[1]): [j for j in range(inst.n_vars) if x[j] > 0.5]
            for inst, x in shared.optimal_points()}
