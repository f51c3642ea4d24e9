"""The independent feasibility check: windows, widths, horizon, route structure."""

import numpy as np
import pytest

from hifo.problems.optwvp import (
    InfeasibleRoute,
    OPTWVPInstance,
    check_route,
    check_schedule,
    earliest_starts,
    optimal_service_fast,
    optimal_service_lp,
)


def line_instance(horizon=100.0):
    """Depot at 0 and customers on a line at x = 10, 20, 30 (travel = distance)."""
    coords = np.array([[0.0, 0.0], [10.0, 0.0], [20.0, 0.0], [30.0, 0.0]])
    return OPTWVPInstance(name="line", coords=coords, profit=np.array([0.0, 1.0, 2.0, 3.0]),
                          tw_open=np.array([0.0, 5.0, 20.0, 40.0]),
                          tw_close=np.array([horizon, 25.0, 30.0, 50.0]), horizon=horizon)


def test_earliest_schedule_waits_for_windows():
    inst = line_instance()
    starts, back = earliest_starts(inst, np.array([1, 2, 3]), np.array([4.0, 3.0, 2.0]))
    # s1 = max(10, 5) = 10; s2 = max(10 + 4 + 10, 20) = 24; s3 = max(24 + 3 + 10, 40) = 40
    assert starts.tolist() == [10.0, 24.0, 40.0]
    assert back == 40.0 + 2.0 + 30.0


def test_feasible_schedule_profit():
    inst = line_instance()
    assert check_schedule(inst, [1, 2, 3], [4.0, 3.0, 2.0]) == pytest.approx(4 + 6 + 6)


def test_rejects_service_starting_after_the_window_closes():
    inst = line_instance()
    # service 10 at node 1 makes node 2 start at 30 (ok, closes at 30) ...
    check_schedule(inst, [1, 2], [10.0, 0.0])
    # ... but 10.5 pushes node 2 to 30.5 > 30
    with pytest.raises(InfeasibleRoute, match="after its window"):
        check_schedule(inst, [1, 2], [10.0 + 0.5, 0.0])
    # a bad order: node 3 first (start 40) then node 1 (start 60 > 15)
    with pytest.raises(InfeasibleRoute, match="after its window"):
        check_route(inst, [3, 1])


def test_service_may_end_after_the_window_but_not_exceed_its_width():
    inst = line_instance()
    check_schedule(inst, [3], [10.0])  # starts at 40, ends at 50 = l: fine; width is 10
    with pytest.raises(InfeasibleRoute, match="exceeds its window width"):
        check_schedule(inst, [3], [10.5])
    check_schedule(inst, [1], [20.0])  # starts 10, ends 30 > l = 25: allowed (only the start counts)


def test_rejects_returning_after_the_horizon():
    inst = line_instance(horizon=75.0)
    check_schedule(inst, [3], [5.0])  # back at 40 + 5 + 30 = 75
    with pytest.raises(InfeasibleRoute, match="horizon"):
        check_schedule(inst, [3], [5.0 + 1e-3])
    with pytest.raises(InfeasibleRoute, match="horizon"):
        check_route(line_instance(horizon=69.0), [3])


@pytest.mark.parametrize("route, service, match", [
    ([1, 1], [0.0, 0.0], "more than once"),
    ([0, 1], [0.0, 0.0], "1..3"),
    ([4], [0.0], "1..3"),
    ([1, 2], [1.0], "expected 2"),
    ([1], [-1.0], "negative"),
    ([1], [float("nan")], "finite"),
    ([1.5], [0.0], "integer"),
])
def test_rejects_malformed_solutions(route, service, match):
    with pytest.raises(InfeasibleRoute, match=match):
        check_schedule(line_instance(), route, service)


def test_optimal_service_on_the_line_by_hand():
    inst = line_instance()
    # by rate: node 3 (rate 3) starts at 40 and takes its width 10 (back at 80 <= 100);
    # node 2 (rate 2) starts at 20, node 3 must start by 50: d2 <= 20, capped by width 10;
    # node 1 (rate 1) starts at 10: node 2 must start by 30 -> d1 <= 10, node 3 by 50 -> d1 <= 10.
    d, profit = optimal_service_fast(inst, [1, 2, 3])
    assert d.tolist() == pytest.approx([10.0, 10.0, 10.0])
    assert profit == pytest.approx(10 + 20 + 30)
    assert optimal_service_lp(inst, [1, 2, 3])[1] == pytest.approx(60.0)
    # with a tighter horizon the return binds: back = 40 + 10 + d3 + 30 ... the cheapest
    # service (node 1) gives way first
    tight = line_instance(horizon=85.0)
    d, profit = optimal_service_fast(tight, [1, 2, 3])
    assert profit == pytest.approx(optimal_service_lp(tight, [1, 2, 3])[1])
    check_schedule(tight, [1, 2, 3], d)
    assert d[2] == pytest.approx(10.0) and d[0] < 10.0
