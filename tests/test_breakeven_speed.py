"""Issue 16: the steady break-even search skips solves by two exact shortcuts (a closed-form
LP slope no fleet beats; cost nondecreasing in demand), and crosses no later than the full
grid scan (which missed windows between grid points: test_breakeven_exact.py)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem
from planner.fleet.synthetic import synthetic_problem
from planner.planning import breakeven
from planner.planning.breakeven import SCALES, SelfCost, break_even_scale

OPTIONS = SolverOptions(time_limit_s=600)


def _hand_problem() -> FleetProblem:
    """Two candidates, two classes: $2/h carrying 1 and 0 req/s, $3/h carrying 2 and 4."""
    return FleetProblem(
        gpu=("a", "b"),
        tp=(1, 1),
        cost_per_hour=np.array([2.0, 3.0]),
        capacity=np.array([[1.0, 0.0], [2.0, 4.0]]),
        demand=np.array([10.0, 8.0]),
        min_replicas=2,
    )


def test_lower_slope_is_each_class_on_its_cheapest_candidate_per_request():
    # class 0: min(2/1, 3/2) = 1.5 $/h per req/s; class 1: only b, 3/4 = 0.75
    assert SelfCost(_hand_problem(), OPTIONS).lower_slope() == pytest.approx(10 * 1.5 + 8 * 0.75)


def test_an_api_line_below_the_lp_slope_never_crosses_and_costs_no_solve(monkeypatch):
    cost = SelfCost(_hand_problem(), OPTIONS)
    monkeypatch.setattr(breakeven, "solve_fleet", lambda *a, **k: pytest.fail("solved"))
    assert break_even_scale(cost, api_per_hour_at_1=20.0, average_factor=1.0) is None


def _first_grid_crossing(cost: SelfCost, slope: float) -> float | None:
    """Every grid point in turn, the first where self-hosting is no dearer: the scan's bound."""
    return next((float(s) for s in SCALES if cost(float(s)) <= slope * s), None)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("api_factor", [1.1, 3.0, 30.0])
def test_the_walk_crosses_no_later_than_the_full_scan_with_fewer_solves(seed, api_factor):
    """The walk's volume is a crossing, at or before the first grid point that crosses (the
    first crossing itself is pinned against a brute force in test_breakeven_exact.py)."""
    problem = synthetic_problem(3, 2, 3, seed=seed)
    fast, slow = SelfCost(problem, OPTIONS), SelfCost(problem, OPTIONS)
    slope = fast.lower_slope() * api_factor
    found, bound = break_even_scale(fast, slope, 1.0), _first_grid_crossing(slow, slope)
    assert (found is None) == (bound is None)
    if found is not None and bound is not None:
        assert found <= bound and fast(found) <= slope * found * (1 + 1e-12)
    assert fast.solves <= slow.solves
