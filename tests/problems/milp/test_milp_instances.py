"""hifo.problems.milp: generators, trusted checker, HiGHS wrapper, MPS round trip, hand-off."""

from __future__ import annotations

import numpy as np
import pytest

from hifo.problems.milp import (GENERATORS, InfeasiblePoint, check_solution, dive_and_solve, generate,
                           primal_gap, primal_integral, read_mps, solve_highs, solve_lp, write_mps)

SMALL = {
    "setcover": {"n_rows": 40, "n_cols": 80, "density": 0.08},
    "cauctions": {"n_items": 15, "n_bids": 40},
    "indset": {"n_nodes": 40, "affinity": 3},
    "intcover": {"n_rows": 10, "n_cols": 20, "n_budget": 2, "density": 0.3},
    "gisp": {"n_nodes": 15, "edge_prob": 0.3},
    "fcmnf": {"n_nodes": 6, "n_arcs": 14, "n_commodities": 3},
}


@pytest.fixture(scope="module", params=sorted(GENERATORS))
def solved(request):
    inst = generate(request.param, seed=3, **SMALL[request.param])
    return inst, solve_highs(inst, time_limit=10.0)


def test_generators_feasible_and_verified(solved):
    inst, res = solved
    assert res.x is not None and res.status == "Optimal"
    x = check_solution(inst, res.x)
    assert inst.objective(x) == pytest.approx(res.objective, rel=1e-7, abs=1e-6)
    assert res.bound <= res.objective + 1e-6
    # LP relaxation bounds the MILP from below (minimisation form)
    assert solve_lp(inst).objective <= res.objective + 1e-6


def test_generators_are_seeded():
    for fam in GENERATORS:
        a, b = generate(fam, 7, **SMALL[fam]), generate(fam, 7, **SMALL[fam])
        c = generate(fam, 8, **SMALL[fam])
        assert (a.A != b.A).nnz == 0 and np.array_equal(a.c, b.c)
        assert a.A.shape != c.A.shape or (a.A != c.A).nnz > 0 or not np.array_equal(a.c, c.c)


def test_family_structure():
    sc = generate("setcover", 0, **SMALL["setcover"])
    assert set(np.unique(sc.A.data)) == {1.0} and np.all(sc.row_lo == 1) and sc.is_int.all()
    # Gasse et al.'s Balas-Ho: every row covered by >= 1 column, every column covers >= 2 rows
    assert np.all(np.diff(sc.A.indptr) >= 1)
    assert np.all(np.bincount(sc.A.indices, minlength=sc.n_vars) >= 2)
    assert sc.A.nnz == int(40 * 80 * 0.08)
    ind = generate("indset", 0, **SMALL["indset"])
    cols = [set(ind.A.indices[ind.A.indptr[r]:ind.A.indptr[r + 1]]) for r in range(ind.n_rows)]
    for i, j in ind.meta["edges"]:  # clique rows plus uncovered edges forbid every edge
        assert any(i in k and j in k for k in cols)
    for k in cols:  # every row is a clique of the graph
        assert all((min(a, b), max(a, b)) in {(min(e), max(e)) for e in ind.meta["edges"]}
                   for a in k for b in k if a != b)
    assert ind.sense == -1 and np.all(ind.row_hi == 1)
    ic = generate("intcover", 0, **SMALL["intcover"])
    assert np.all(np.isinf(ic.ub)) and ic.is_int.any() and (~ic.is_int).any()
    assert ic.A.max() > 1  # general integer coefficients
    fc = generate("fcmnf", 0, **SMALL["fcmnf"])
    assert (~fc.is_int).sum() == len(fc.meta["arcs"]) * len(fc.meta["od"])  # continuous flows
    assert fc.is_int.sum() == len(fc.meta["arcs"])
    g = generate("gisp", 0, **SMALL["gisp"])
    assert g.A.min() == -1.0  # removable edges carry a y variable


def test_checker_catches_violations(solved):
    inst, res = solved
    x = res.x.copy()
    check_solution(inst, x)
    with pytest.raises(InfeasiblePoint, match="shape"):
        check_solution(inst, x[:-1])
    bad = x.copy()
    bad[0] = np.nan
    with pytest.raises(InfeasiblePoint, match="non-finite"):
        check_solution(inst, bad)
    bad = x.copy()
    bad[0] = inst.lb[0] - 1.0
    with pytest.raises(InfeasiblePoint, match="bound"):
        check_solution(inst, bad)
    j = int(np.flatnonzero(inst.is_int)[0])
    bad = x.copy()
    bad[j] = 0.5
    with pytest.raises(InfeasiblePoint, match="integrality"):
        check_solution(inst, bad)
    # a point inside the bounds and integral that violates a row
    if inst.family in ("setcover", "intcover"):
        viol = np.zeros(inst.n_vars)
    elif inst.family == "fcmnf":
        viol = np.zeros(inst.n_vars)  # no flow: demands unmet
    else:
        viol = np.ones(inst.n_vars)
    with pytest.raises(InfeasiblePoint, match="row"):
        check_solution(inst, viol)


def test_mps_round_trip(tmp_path, solved):
    inst, res = solved
    path = tmp_path / f"{inst.name}.mps"
    write_mps(inst, path)
    back = read_mps(path)
    assert back.A.shape == inst.A.shape and np.array_equal(back.is_int, inst.is_int)
    assert abs(back.A - inst.A).max() < 1e-12
    np.testing.assert_allclose(back.c, inst.c)
    assert solve_highs(back, time_limit=10.0).objective == pytest.approx(res.objective, abs=1e-6)


def test_highs_fixing_hint_and_trajectory(solved):
    inst, res = solved
    j = int(np.flatnonzero(inst.is_int)[0])
    val = 1.0 - round(res.x[j]) if inst.ub[j] == 1 else round(res.x[j]) + 1.0
    fixed = solve_highs(inst, time_limit=10.0, fix={j: val})
    if fixed.x is not None:
        assert fixed.x[j] == val and fixed.objective >= res.objective - 1e-6
    warm = solve_highs(inst, time_limit=10.0, hint=res.x)
    assert warm.objective == pytest.approx(res.objective, abs=1e-6)
    objs = [o for _, o in res.trajectory]
    assert objs == sorted(objs, reverse=True)  # improving solutions only improve
    assert res.time_to_first <= res.time_to_best <= res.wall_s + 1e-3


def test_primal_gap_and_integral():
    assert primal_gap(10.0, 10.0) == 0.0 and primal_gap(-5.0, 5.0) == 1.0
    assert primal_gap(110.0, 100.0) == pytest.approx(10 / 110)
    assert primal_integral([], 1.0, 2.0) == 2.0  # no solution: gap 1 all along
    assert primal_integral([(0.5, 2.0), (1.0, 1.0)], 1.0, 2.0) == pytest.approx(0.5 + 0.5 * 0.5)


def test_dive_then_full_mip_never_locks_in_a_wrong_fixing():
    inst = generate("setcover", 1, **SMALL["setcover"])
    opt = solve_highs(inst, time_limit=5.0)
    # every dive fixes columns to 0: some dives are infeasible, the full MIP still reaches the optimum
    res = dive_and_solve(inst, np.zeros(inst.n_vars), np.ones(inst.n_vars), 0.5, time_limit=5.0,
                         fix_fraction=0.5, n_dives=4)
    assert res.stage in ("full", "dive") and res.n_fixed == inst.n_vars // 2
    assert len(res.dives) == 4
    assert inst.objective(check_solution(inst, res.x)) == pytest.approx(opt.objective)
    objs = [o for _, o in res.trajectory]
    assert objs == sorted(objs, reverse=True) and len(set(objs)) == len(objs)
    # random subsets: two seeds fix different sets (same size)
    a = dive_and_solve(inst, opt.x, np.ones(inst.n_vars), 0.5, time_limit=2.0, seed=1, n_dives=2)
    assert a.objective == pytest.approx(opt.objective) and a.n_fixed == int(0.1 * inst.n_vars)
    with pytest.raises(ValueError):
        dive_and_solve(inst, np.zeros((2, inst.n_vars)), np.ones(inst.n_vars))


def test_cpu_budget_is_enforced():
    import time
    inst = generate("cauctions", 200, n_items=100, n_bids=500)  # HiGHS does not finish in 0.3 s
    start = time.process_time()
    res = solve_highs(inst, time_limit=0.3)
    used = time.process_time() - start
    assert res.status == "Interrupted by user" and used < 0.3 + 0.6  # LP/presolve granularity
    assert all(t <= res.wall_s + 1e-9 for t, _ in res.trajectory)


def test_gasse_auction_substitutable_bids():
    inst = generate("cauctions", 4, n_items=30, n_bids=120)
    assert inst.n_vars == 120 and inst.sense == -1 and np.all(inst.c < 0)
    dummy = inst.A[30:]  # XOR rows of bidders with more than two bids
    assert dummy.shape[0] > 0
    per = np.diff(dummy.indptr)
    assert np.all((per >= 3) & (per <= 6))  # first bid + at most 5 substitutes


def test_mps_collection_reads_a_directory(tmp_path):
    from hifo.problems.milp import mps_collection
    insts = [generate(f, 2, **SMALL[f]) for f in ("setcover", "fcmnf")]
    for i, inst in enumerate(insts):
        write_mps(inst, tmp_path / f"p{i}.mps")
    back = mps_collection(tmp_path)
    assert [b.name for b in back] == ["p0", "p1"]
    for a, b in zip(insts, back):
        assert b.A.shape == a.A.shape and np.array_equal(b.is_int, a.is_int)
    with pytest.raises(FileNotFoundError):
        mps_collection(tmp_path / "missing")


def test_work_clock_is_deterministic_and_enforced():
    """The evaluators' clock: polls of HiGHS's branch-and-cut loop. The same budget gives the same ticks,
    trajectory and solution on a second run (whatever the CPU time), and the solve stops at its budget."""
    inst = generate("intcover", seed=3, n_rows=40, n_cols=80)
    a = solve_highs(inst, time_limit=40, clock="work")
    b = solve_highs(inst, time_limit=40, clock="work")
    assert a.status == "Interrupted by user" and a.wall_s == b.wall_s == a.work
    assert 40 <= a.work <= 42  # the budget, plus the tick charged for presolve and the root
    assert a.trajectory == b.trajectory and np.array_equal(a.x, b.x)
    assert all(t <= a.work for t, _ in a.trajectory)
    longer = solve_highs(inst, time_limit=200, clock="work")
    assert longer.trajectory[:len(a.trajectory)] == a.trajectory[:len(a.trajectory)] or \
        longer.objective <= a.objective  # more work never makes HiGHS worse here
    with pytest.raises(ValueError, match="unknown clock"):
        solve_highs(inst, time_limit=1, clock="ticks")


def test_work_clock_safety_net_raises_rather_than_scoring(monkeypatch):
    from hifo.problems.milp import WorkLimitUnreachable, _highs

    monkeypatch.setattr(_highs, "WORK_WALL_LIMIT", 1e-3)
    inst = generate("setcover", seed=0, n_rows=200, n_cols=400)
    with pytest.raises(WorkLimitUnreachable, match="before spending"):
        solve_highs(inst, time_limit=10**6, clock="work")


def test_primal_gap_ignores_last_bit_differences():
    from hifo.problems.milp import primal_gap

    assert primal_gap(11500.999999999998, 11500.999999999996) == 0.0  # numpy's AVX-512 vs AVX2 sum
    assert primal_gap(100.0, 99.0) == pytest.approx(0.01)
    assert primal_gap(-1.0, 1.0) == 1.0
