"""Issue 16: the steady fleet MIP built as arrays (`fleet/matrix.py`) is PuLP's model, entry for
entry, and solves to PuLP's fleet (tests/test_imports.py: a single-period solve loads no PuLP)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_dominance import _pooled as pooled_problem

from planner.fleet import matrix, steady
from planner.fleet.scaled import to_arrays
from planner.fleet.solver import Model, SolverOptions
from planner.fleet.steady import FleetProblem, build_lp, replica_bounds, solve_fleet
from planner.fleet.synthetic import synthetic_problem

OPTIONS = SolverOptions()


def _pooled(seed: int) -> FleetProblem:
    """test_dominance's pooled problems (aggregated replicas and prefill/decode pools on three
    GPU types, scale-up and scale-out balance groups, inventory, a replica floor), with a GPU
    cap and a budget drawn at random too."""
    rng = np.random.default_rng(seed + 1)
    problem = pooled_problem(seed)
    return replace(
        problem,
        max_gpus=int(rng.integers(20, 200)) if rng.random() < 0.3 else None,
        budget_per_hour=float(rng.uniform(50, 500)) if rng.random() < 0.3 else None,
    )


def _pulp_model(problem: FleetProblem, integer: bool) -> tuple[Model, np.ndarray]:
    lp, replicas, _, _ = build_lp(problem, integer=integer)
    return to_arrays(lp, replicas)


def _entries(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The matrix's nonzero entries, column by column and row by row within each (the order
    HiGHS is handed them in), zeros left out as PuLP's HiGHS leaves them out."""
    keep = model.values != 0
    rows, cols, values = model.rows[keep], model.cols[keep], model.values[keep]
    order = np.lexsort((rows, cols))
    return rows[order], cols[order], values[order]


def _assert_same_model(problem: FleetProblem, integer: bool = True) -> None:
    expected, replica_cols = _pulp_model(problem, integer)
    built = matrix.build_model(problem, integer=integer)
    got = built.model
    for name in ("cost", "lower", "upper", "integer", "row_lower", "row_upper"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), err_msg=name)
    for mine, theirs in zip(_entries(got), _entries(expected), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(built.replica_cols, replica_cols)


def test_a_hand_sized_model_has_the_rows_and_columns_of_the_formulation():
    """Two candidates, two classes; b carries class 1 only. Columns sorted by name as PuLP
    sorts them (n_replicas_c0, n_replicas_c1, x_load_c0_w0, x_load_c0_w1, x_load_c1_w1); rows:
    demand_0, demand_1, capacity_0, capacity_1, the floor, the budget."""
    problem = FleetProblem(
        gpu=("h100", "l4"),
        tp=(2, 1),
        cost_per_hour=np.array([10.0, 2.0]),
        capacity=np.array([[4.0, 2.0], [0.0, 0.5]]),
        demand=np.array([3.0, 1.5]),
        min_replicas=2,
        budget_per_hour=100.0,
    )
    built = matrix.build_model(problem)
    m = built.model
    np.testing.assert_array_equal(m.cost, [10.0 + 2e-6, 2.0 + 1e-6, 0, 0, 0])
    # replica bounds: ceil(3/4 + 1.5/2) + 2 + 1 = 5, ceil(1.5/0.5) + 2 + 1 = 6
    np.testing.assert_array_equal(m.upper, [5, 6, np.inf, np.inf, np.inf])
    np.testing.assert_array_equal(m.integer, [True, True, False, False, False])
    dense = np.zeros((m.n_rows, m.n_cols))
    dense[m.rows, m.cols] = m.values
    np.testing.assert_array_equal(
        dense,
        [
            [0, 0, 1, 0, 0],  # demand_0: x_c0_w0
            [0, 0, 0, 1, 1],  # demand_1: x_c0_w1 + x_c1_w1
            [-1, 0, 0.25, 0.5, 0],  # capacity_0: x/4 + x/2 - n0
            [0, -1, 0, 0, 2.0],  # capacity_1: x/0.5 - n1
            [1, 1, 0, 0, 0],  # the floor
            [10, 2, 0, 0, 0],  # the budget
        ],
    )
    np.testing.assert_array_equal(m.row_lower, [3.0, 1.5, -np.inf, -np.inf, 2.0, -np.inf])
    np.testing.assert_array_equal(m.row_upper, [3.0, 1.5, 0.0, 0.0, np.inf, 100.0])
    np.testing.assert_array_equal(built.demand_rows, [0, 1])
    assert built.floor_row == 4
    _assert_same_model(problem)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), integer=st.booleans())
def test_pools_groups_and_limits_build_pulps_model_exactly(seed, integer):
    _assert_same_model(_pooled(seed), integer)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 12))
def test_aggregated_problems_build_pulps_model_exactly(seed, n):
    """Candidate numbers past 10 sort apart by name (c10 before c2), as PuLP sorts them."""
    _assert_same_model(synthetic_problem(n, 3, 2, seed=seed))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_replica_bounds_are_the_per_candidate_bound(seed):
    problem = _pooled(seed)
    expected = [steady._replica_bound(problem, c) for c in range(problem.n_candidates)]
    np.testing.assert_array_equal(replica_bounds(problem), expected)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_the_array_solve_finds_pulps_fleet(seed):
    """Same model, same HiGHS options: the same status, replicas, loads and cost."""
    problem = _pooled(seed)
    via_arrays = solve_fleet(problem, OPTIONS)
    original = steady.arrays_apply
    try:
        steady.arrays_apply = lambda *_: False  # type: ignore[assignment]
        via_pulp = solve_fleet(problem, OPTIONS)
    finally:
        steady.arrays_apply = original  # type: ignore[assignment]
    assert via_arrays.status == via_pulp.status
    np.testing.assert_array_equal(via_arrays.replicas, via_pulp.replicas)
    np.testing.assert_array_equal(via_arrays.load, via_pulp.load)
    assert via_arrays.cost_per_hour == via_pulp.cost_per_hour


def test_redundancy_and_cbc_keep_the_pulp_model():
    problem = synthetic_problem(4, 2, 2, seed=1)
    assert steady.arrays_apply(problem, OPTIONS)
    assert not steady.arrays_apply(replace(problem, redundancy=1), OPTIONS)
    assert not steady.arrays_apply(problem, replace(OPTIONS, backend="cbc"))
