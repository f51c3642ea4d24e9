"""HiGHS (``highspy``) as the downstream solver: solve, LP relaxation, warm start, fixing, MPS.

:func:`solve_highs` returns the incumbent, the final dual bound and gap, and the trajectory of
improving solutions (time, objective) recorded by HiGHS's ``cbMipImprovingSolution`` callback,
from which the time to the first and to the best solution and the primal integral
(Berthold 2013) are computed.

Three clocks (``clock=``):

* ``"work"`` — **HiGHS work ticks**, the clock of every fitness: the number of times HiGHS's
  branch-and-cut loop polls its ``cbMipInterrupt`` callback (once per node, separation round and
  primal-heuristic call) plus one per solve for presolve and the root LP. With ``threads=1`` and
  a fixed ``random_seed`` HiGHS takes the same path on every machine whatever its speed or load,
  so a budget and a trajectory in ticks are the same numbers everywhere (checked beside two CPU
  hogs: identical trajectories). A tick is coarse (5-60 ms of CPU on a 2026 EPYC core, depending
  on the family), and HiGHS's version decides the path, so ``highspy`` is pinned exactly.
* ``"cpu"`` — CPU seconds of this process (:func:`cpu_now`), enforced through the same callback;
  reproducible only within a tolerance (the interrupt lands at a load-dependent point). Used by
  the benchmarks, which compare pipelines at equal CPU time.
* ``"wall"`` — HiGHS's own wall-clock ``time_limit``.

For the CPU clock wall time stays a safety net at 10x the budget + 5 s; the work clock has a wall
safety net of ``WORK_WALL_LIMIT`` seconds (a run that reaches it is reported as such, never
silently scored).
"""

from __future__ import annotations

import math

import time
from dataclasses import dataclass, field
from pathlib import Path

import highspy
import numpy as np
import scipy.sparse as sp

from ._instance import MILPInstance, primal_gap

_INF = highspy.kHighsInf


def _clip_inf(a: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(a, float), -_INF, _INF)


def to_highs_lp(inst: MILPInstance, relax: bool = False) -> highspy.HighsLp:
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = inst.n_vars, inst.n_rows
    lp.col_cost_ = inst.c.copy()
    lp.offset_ = float(inst.offset)
    lp.col_lower_, lp.col_upper_ = _clip_inf(inst.lb), _clip_inf(inst.ub)
    lp.row_lower_, lp.row_upper_ = _clip_inf(inst.row_lo), _clip_inf(inst.row_hi)
    A = inst.A.tocsc()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    if not relax:
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                           for b in inst.is_int]
    return lp


def from_highs_lp(lp: highspy.HighsLp, name: str = "model") -> MILPInstance:
    n, m = lp.num_col_, lp.num_row_
    mat = lp.a_matrix_
    arrays = (np.asarray(mat.value_, float), np.asarray(mat.index_), np.asarray(mat.start_))
    if mat.format_ == highspy.MatrixFormat.kRowwise:
        A = sp.csr_matrix(arrays, shape=(m, n))
    else:
        A = sp.csc_matrix(arrays, shape=(m, n)).tocsr()

    def unclip(a):
        a = np.asarray(a, float).copy()
        a[a >= _INF], a[a <= -_INF] = np.inf, -np.inf
        return a

    integ = list(lp.integrality_)
    is_int = (np.array([t == highspy.HighsVarType.kInteger for t in integ], bool)
              if integ else np.zeros(n, bool))
    c = np.asarray(lp.col_cost_, float)
    sense = 1
    if lp.sense_ == highspy.ObjSense.kMaximize:
        c, sense = -c, -1
    inst = MILPInstance(name, c, A, unclip(lp.row_lower_), unclip(lp.row_upper_),
                        unclip(lp.col_lower_), unclip(lp.col_upper_), is_int,
                        offset=float(lp.offset_) * sense, sense=sense)
    return inst


def cpu_now() -> float:
    """CPU seconds used by this process so far (all threads): the clock of every budget here.

    Read after the calling thread's own clock: in a process with a CPU-time rlimit (the sandbox child) the kernel
    keeps the process clock in its process-wide CPU timer, which it brings up to date only at scheduler ticks
    and context switches, so a bare read can lag by a tick of CPU time already spent. A window opened with a
    lagging read and closed after a context switch (a call that blocks, e.g. on the sandbox's slot process) is
    then charged the CPU spent *before* it: measured at 2 ms per call, 80 ms per ``fmip_guidance`` instance.
    Reading the thread clock first makes the kernel account the running thread's time."""
    time.thread_time()
    return time.process_time()


CLOCKS = {"cpu": cpu_now, "wall": time.perf_counter}
WORK_PER_SOLVE = 1.0  # ticks charged to every solve for presolve and the root LP (no poll happens there)
WORK_WALL_LIMIT = 300.0  # wall seconds: safety net of a work-clock solve


class WorkLimitUnreachable(RuntimeError):
    """A work-clock solve hit its wall-clock safety net before spending its ticks: its result would
    depend on the machine, so it is not returned."""


def _new_highs(threads: int = 1, seed: int = 0) -> highspy.Highs:
    h = highspy.Highs()
    h.silent()
    h.setOptionValue("threads", int(threads))
    h.setOptionValue("random_seed", int(seed))
    h.setOptionValue("mip_rel_gap", 0.0)
    return h


def write_mps(inst: MILPInstance, path: str) -> None:
    """Write ``inst`` as an MPS file (through HiGHS's writer)."""
    h = _new_highs()
    h.passModel(to_highs_lp(inst))
    # kWarning only says that default row/column names were made up
    if h.writeModel(str(path)) == highspy.HighsStatus.kError:
        raise OSError(f"HiGHS could not write {path}")


def read_mps(path: str | Path, name: str | None = None) -> MILPInstance:
    """Read an MPS (or LP) file with HiGHS's reader."""
    h = _new_highs()
    if h.readModel(str(path)) == highspy.HighsStatus.kError:
        raise OSError(f"HiGHS could not read {path}")
    return from_highs_lp(h.getLp(), name or str(path))


@dataclass
class LPRelaxation:
    x: np.ndarray
    objective: float
    row_dual: np.ndarray
    reduced_cost: np.ndarray
    status: str


def solve_lp(inst: MILPInstance) -> LPRelaxation:
    """The LP relaxation (primal point, duals, reduced costs)."""
    h = _new_highs()
    h.passModel(to_highs_lp(inst, relax=True))
    h.run()
    sol = h.getSolution()
    return LPRelaxation(np.asarray(sol.col_value, float), h.getInfo().objective_function_value,
                        np.asarray(sol.row_dual, float), np.asarray(sol.col_dual, float),
                        h.modelStatusToString(h.getModelStatus()))


@dataclass
class HighsResult:
    status: str
    x: np.ndarray | None
    objective: float  # stored (min) sense; inf if no solution
    bound: float
    gap: float
    wall_s: float
    trajectory: list[tuple[float, float]] = field(default_factory=list)  # (time, objective)
    nodes: int = 0
    work: float = 0.0  # work ticks spent (on every clock; see the module docstring)

    @property
    def time_to_first(self) -> float:
        return self.trajectory[0][0] if self.trajectory else float("inf")

    @property
    def time_to_best(self) -> float:
        return self.trajectory[-1][0] if self.trajectory else float("inf")

    def primal_integral(self, best: float, horizon: float) -> float:
        """Integral over [0, horizon] of the primal gap of the incumbent (1 before the first)."""
        return primal_integral(self.trajectory, best, horizon)


def primal_integral(trajectory: list[tuple[float, float]], best: float, horizon: float) -> float:
    """Berthold's primal integral of a (time, objective) trajectory of improving solutions."""
    total, t_prev, gap_prev = 0.0, 0.0, 1.0
    for t, obj in sorted(trajectory):
        t = min(max(t, 0.0), horizon)
        total += gap_prev * (t - t_prev)
        t_prev, gap_prev = t, primal_gap(obj, best)
    return total + gap_prev * (horizon - t_prev)


def solve_highs(inst: MILPInstance, time_limit: float = 10.0, hint: np.ndarray | None = None,
                fix: dict[int, float] | None = None, lower: np.ndarray | None = None,
                upper: np.ndarray | None = None, node_limit: int | None = None,
                seed: int = 0, t_offset: float = 0.0, clock: str = "cpu",
                require_incumbent: bool = False) -> HighsResult:
    """Solve the MILP with HiGHS within ``time_limit`` units of ``clock`` (``"work"``: HiGHS work
    ticks, deterministic; ``"cpu"``: CPU seconds of this process; both enforced by an interrupt
    callback; ``"wall"``: HiGHS's time limit). See the module docstring.

    ``hint``: a full starting point passed with ``setSolution`` (HiGHS completes/repairs it if it
    is partially infeasible). ``fix``: {column: value} fixed by setting both bounds (neural
    diving). ``lower``/``upper``: tightened bounds. ``t_offset`` is added to every recorded
    time (so stages run one after another share one clock). ``wall_s`` and the trajectory are
    in ``clock`` units. ``require_incumbent`` (work and CPU clocks): the budget does not end the solve
    before a first feasible point exists (the wall-clock safety net still does): on a loaded machine a
    CPU budget of a second can pass inside presolve and root processing, and "no solution" would then
    be a fact about the machine's load, not about the candidate; the time to the first incumbent is
    still charged in full by the primal integral.
    """
    if clock not in (*CLOCKS, "work"):
        raise ValueError(f"unknown clock {clock!r}: choose 'work', 'cpu' or 'wall'")
    ticks = [0]
    now = (lambda: float(ticks[0])) if clock == "work" else CLOCKS[clock]
    budget = float(max(time_limit, 1e-3))
    h = _new_highs(seed=seed)
    h.setOptionValue("time_limit", {"wall": budget, "cpu": 10 * budget + 5.0, "work": WORK_WALL_LIMIT}[clock])
    if node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(node_limit))
    lb, ub = inst.lb.copy(), inst.ub.copy()
    if lower is not None:
        lb = np.maximum(lb, lower)
    if upper is not None:
        ub = np.minimum(ub, upper)
    if fix:
        idx = np.fromiter(fix.keys(), int)
        lb[idx] = ub[idx] = np.fromiter(fix.values(), float)
    lp = to_highs_lp(inst)
    lp.col_lower_, lp.col_upper_ = _clip_inf(lb), _clip_inf(ub)
    h.passModel(lp)
    traj: list[tuple[float, float]] = []
    start = now()

    def on_improve(e):  # runs inside HiGHS at each new incumbent
        traj.append((t_offset + now() - start, float(e.data_out.objective_function_value)))

    def on_interrupt(e):  # HiGHS polls this during the MIP solve
        if now() - start >= budget and not (require_incumbent and not math.isfinite(e.data_out.mip_primal_bound)):
            e.interrupt()

    def on_tick(e):  # the work clock: one tick per poll of the branch-and-cut loop (counted on every clock)
        ticks[0] += 1
        if clock != "wall":
            on_interrupt(e)

    h.cbMipImprovingSolution.subscribe(on_improve)
    h.cbMipInterrupt.subscribe(on_tick)  # the MIP loop's polls: deterministic points of its path
    if clock == "cpu":  # the LP solves inside the MIP loop poll this one
        h.cbSimplexInterrupt.subscribe(on_interrupt)
    if hint is not None:
        s = highspy.HighsSolution()
        s.col_value = np.asarray(hint, float).tolist()
        s.value_valid = True
        h.setSolution(s)
    h.run()
    wall = now() - start + (WORK_PER_SOLVE if clock == "work" else 0.0)
    info = h.getInfo()
    status = h.modelStatusToString(h.getModelStatus())
    if clock == "work" and h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
        raise WorkLimitUnreachable(f"{inst.name}: HiGHS ran {WORK_WALL_LIMIT:g} wall seconds before spending "
                                   f"{budget:g} work ticks (it reached {ticks[0]})")
    has_sol = info.primal_solution_status == highspy.kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, float) if has_sol else None
    obj = float(info.objective_function_value) if has_sol else float("inf")
    if has_sol and not traj:  # found in presolve or from the hint: HiGHS fires no callback
        traj.append((t_offset + wall, obj))
    return HighsResult(status, x, obj, float(info.mip_dual_bound), float(info.mip_gap), wall,
                       traj, int(info.mip_node_count), ticks[0] + WORK_PER_SOLVE)
