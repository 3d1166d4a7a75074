"""Issue 16: with the held GPUs fixed, a plan over time splits into one MIP a period."""

from __future__ import annotations

import numpy as np
import pytest

from planner.fleet import overtime
from planner.fleet.decompose import column_blocks, solve_by_blocks
from planner.fleet.overtime import build_time_model, solve_time
from planner.fleet.solver import Model, SolverOptions, solve
from planner.fleet.synthetic import synthetic_time_problem

OPTIONS = SolverOptions(time_limit_s=600, relative_gap=1e-3)
PROBLEM = synthetic_time_problem(1, 3, 4, n_slots=4)


def _blocks(lay):
    return lay.period_columns()


def test_periods_solved_apart_at_the_optimum_held_gpus_give_the_optimum():
    """Fix the held GPUs where the whole MIP put them: the periods solved one by one cost
    what the whole plan costs (within the gap), and the point keeps every row."""
    model, lay = build_time_model(PROBLEM)
    whole = solve(model, OPTIONS)
    held = np.array([*lay.reserved.values(), *lay.owned.values()])
    assert held.size and whole.values is not None
    x = solve_by_blocks(model, column_blocks(model, _blocks(lay)), whole.values, OPTIONS)
    assert x is not None and overtime._within(model, x)
    assert np.array_equal(x[held], whole.values[held])
    assert float(model.cost @ x) == pytest.approx(whole.objective, rel=2 * OPTIONS.relative_gap)


def test_a_row_across_two_periods_is_refused():
    model = Model(
        cost=np.ones(2), lower=np.zeros(2), upper=np.full(2, 9.0), integer=np.ones(2, bool),
        rows=np.array([0, 0]), cols=np.array([0, 1]), values=np.ones(2),
        row_lower=np.array([1.0]), row_upper=np.array([np.inf]),
    )  # fmt: skip
    with pytest.raises(ValueError, match="couples two blocks"):
        solve_by_blocks(model, np.array([0, 1]), np.zeros(2), OPTIONS)


def test_a_large_plan_over_time_uses_the_split_and_stays_feasible(monkeypatch):
    monkeypatch.setattr(overtime, "SPLIT_COLUMNS", 0)  # split even this small model
    monkeypatch.setattr(overtime, "PRICE_BY_MIP", 0)  # not priced by period MIPs first
    used = []
    real = overtime.solve_by_blocks
    monkeypatch.setattr(overtime, "solve_by_blocks", lambda *a: used.append(1) or real(*a))
    split = solve_time(PROBLEM, OPTIONS)
    assert used and split.status == "optimal"
    monkeypatch.setattr(overtime, "SPLIT_COLUMNS", 10**9)
    whole = solve_time(PROBLEM, OPTIONS)
    assert split.total_cost == pytest.approx(whole.total_cost, rel=2 * OPTIONS.relative_gap)
