"""Issue 16: results do not depend on the wall clock. Every MIP stops at a deterministic node
limit (passed to both backends through the one solver door); the time limit is a safety net
that says when it was the one that stopped a solve."""

from __future__ import annotations

import numpy as np
import pytest

from planner.errors import InputError
from planner.fleet import solver
from planner.fleet.overtime import build_time_model, solve_time
from planner.fleet.solver import DEFAULT_MAX_NODES, SolverOptions
from planner.fleet.steady import solve_fleet
from planner.fleet.synthetic import synthetic_problem, synthetic_time_problem
from planner.schema.scenario import Solver

NEEDS_BRANCHING = synthetic_problem(6, 3, 6)  # 36 candidates: the root leaves a gap
SMALL_TIME = synthetic_time_problem(1, 3, 4, n_slots=4)  # 68 columns; the root leaves a gap


class _Recorder:
    """Stands in for highspy.Highs: records every option set."""

    def __init__(self) -> None:
        self.options: dict[str, object] = {}

    def setOptionValue(self, name: str, value: object) -> None:  # noqa: N802 - highspy's name
        self.options[name] = value


def test_the_default_limit_is_nodes_and_the_clock_only_a_generous_net():
    options = SolverOptions()
    assert options.max_nodes == DEFAULT_MAX_NODES == Solver().max_nodes
    assert options.time_limit_s == Solver().time_limit_s >= 60
    assert SolverOptions.of(Solver(max_nodes=7)).max_nodes == 7


def test_array_models_pass_the_node_limit_and_a_fixed_seed_to_highs():
    h = _Recorder()
    solver._highs_options(h, SolverOptions(max_nodes=123))
    assert h.options["mip_max_nodes"] == 123 and h.options["random_seed"] == 0
    assert h.options["mip_heuristic_run_feasibility_jump"] is False  # 14 ms a MIP otherwise


@pytest.mark.parametrize(("backend", "key"), [("highs", "mip_max_nodes"), ("cbc", "maxNodes")])
def test_pulp_models_pass_the_node_limit_to_either_backend(backend, key):
    lp_solver = solver._backend(SolverOptions(backend, max_nodes=321))
    assert lp_solver.optionsDict[key] == 321


def test_a_node_limited_solve_says_the_nodes_stopped_it_not_the_clock():
    model, _ = build_time_model(SMALL_TIME)
    out = solver.solve(model, SolverOptions(max_nodes=1, time_limit_s=600))
    assert out.status == "time_limit" and out.limit == "nodes"
    assert out.bound < out.objective  # stopped short of the gap: a real stop, not optimal
    done = solver.solve(model, SolverOptions(time_limit_s=600))
    assert done.status == "optimal" and done.limit == ""


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_a_node_limited_fleet_solve_gives_the_same_plan_twice(backend):
    """PuLP's HiGHS has no status for kSolutionLimit: the door maps it to a stopped solve
    with its incumbent, and two solves under the same limit agree exactly."""
    options = SolverOptions(backend, time_limit_s=600, max_nodes=1)
    first, second = (solve_fleet(NEEDS_BRANCHING, options) for _ in range(2))
    assert first.status == second.status == "time_limit"
    assert np.array_equal(first.replicas, second.replicas)
    assert first.cost_per_hour == second.cost_per_hour


def test_a_node_limited_plan_over_time_is_the_same_plan_twice():
    options = SolverOptions(time_limit_s=600, max_nodes=1)
    first, second = (solve_time(SMALL_TIME, options) for _ in range(2))
    assert np.array_equal(first.replicas, second.replicas)
    assert np.array_equal(first.on_demand, second.on_demand)
    assert first.reserved == second.reserved and first.total_cost == second.total_cost


def test_a_node_limit_below_one_is_refused():
    with pytest.raises(InputError, match="max_nodes"):
        SolverOptions(max_nodes=0)
