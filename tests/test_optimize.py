"""The fleet MIP against brute force, and its constraints, on small instances."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pulp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.fleet import solver
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem, solve_fleet
from planner.fleet.synthetic import synthetic_problem

OPTIONS = SolverOptions(time_limit_s=60)


def load_feasible(problem: FleetProblem, n: tuple[int, ...]) -> bool:
    """Can replicas `n` carry the demand? A fixed-n LP over the load split only."""
    lp = pulp.LpProblem("check", pulp.LpMinimize)
    x = {
        (c, w): pulp.LpVariable(f"x{c}_{w}", 0)
        for c, w in zip(*np.nonzero(problem.capacity > 0), strict=True)
    }
    lp += pulp.lpSum(x.values())
    for w, d in enumerate(problem.demand):
        lp += pulp.lpSum(v for (c, ww), v in x.items() if ww == w) == float(d)
    for c in range(problem.n_candidates):
        lp += (
            pulp.lpSum(v / float(problem.capacity[c, w]) for (cc, w), v in x.items() if cc == c)
            <= n[c]
        )
    lp.solve(pulp.PULP_CBC_CMD(msg=False))
    return pulp.LpStatus[lp.status] == "Optimal"


def fleet_ok(problem: FleetProblem, n: tuple[int, ...]) -> bool:
    gpus = sum(t * k for t, k in zip(problem.tp, n, strict=True))
    cost = float(np.dot(problem.cost_per_hour, n))
    if problem.max_gpus is not None and gpus > problem.max_gpus:
        return False
    if sum(n) < problem.min_replicas:
        return False
    if problem.budget_per_hour is not None and cost > problem.budget_per_hour + 1e-9:
        return False
    for g, avail in problem.inventory.items():
        if (
            sum(t * k for gg, t, k in zip(problem.gpu, problem.tp, n, strict=True) if gg == g)
            > avail
        ):
            return False
    return True


def brute_force(problem: FleetProblem, max_n: int) -> float:
    best = math.inf
    for n in itertools.product(range(max_n + 1), repeat=problem.n_candidates):
        cost = float(np.dot(problem.cost_per_hour, n))
        if cost >= best - 1e-9 or not fleet_ok(problem, n):
            continue
        single = problem.capacity.shape[1] == 1
        if single:
            ok = float(np.dot(problem.capacity[:, 0], n)) >= problem.demand[0] - 1e-9
        else:
            ok = load_feasible(problem, n)
        if ok:
            best = cost
    return best


@st.composite
def problems(draw, max_classes: int = 2):
    n_c = draw(st.integers(1, 3))
    n_w = draw(st.integers(1, max_classes))
    gpu = tuple(draw(st.sampled_from(["a", "b"])) for _ in range(n_c))
    tp = tuple(draw(st.sampled_from([1, 2, 4])) for _ in range(n_c))
    cost = np.array([draw(st.integers(1, 20)) * t for t in tp], dtype=float)
    cap = np.array(
        [
            [draw(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])) for _ in range(n_w)]
            for _ in range(n_c)
        ]
    )
    demand = np.array([draw(st.sampled_from([0.5, 1.0, 2.5, 4.0])) for _ in range(n_w)])
    inventory = {"a": draw(st.integers(0, 8))} if draw(st.booleans()) else {}
    return FleetProblem(
        gpu=gpu,
        tp=tp,
        cost_per_hour=cost,
        capacity=cap,
        demand=demand,
        inventory=inventory,
        min_replicas=draw(st.integers(0, 2)),
        max_gpus=draw(st.one_of(st.none(), st.integers(2, 12))),
    )


@given(problems())
@pytest.mark.slow  # 60 hypothesis examples, each checked by brute force
def test_mip_matches_brute_force(problem):
    """Brute force enumerates up to 5 replicas per candidate. When the MIP's fleet lies in
    that box the two optima must be equal; when it uses more, it must be no dearer."""
    solution = solve_fleet(problem, OPTIONS)
    expected = brute_force(problem, max_n=5)
    inside = solution.status != "infeasible" and (solution.replicas <= 5).all()
    if solution.status == "infeasible":
        assert math.isinf(expected)
        return
    assert solution.status == "optimal"
    if inside:
        assert solution.cost_per_hour == pytest.approx(expected, abs=1e-6)
    else:
        assert solution.cost_per_hour <= expected + 1e-6


@given(problems())
def test_solution_meets_its_own_constraints(problem):
    solution = solve_fleet(problem, OPTIONS)
    if solution.status == "infeasible":
        return
    n = tuple(int(k) for k in solution.replicas)
    assert fleet_ok(problem, n)
    assert solution.load.sum(axis=0) == pytest.approx(problem.demand, abs=1e-6)
    used = np.divide(
        solution.load,
        problem.capacity,
        out=np.zeros_like(solution.load),
        where=problem.capacity > 0,
    ).sum(axis=1)
    assert (used <= solution.replicas + 1e-6).all()
    assert (solution.load[problem.capacity == 0] == 0).all()


def test_hand_example_prefers_the_cheaper_capacity():
    """Demand 10 req/s; A carries 4 for $3/h, B carries 3 for $2/h: 2A+1B=11 for $8 or
    4B=12 for $8 or 1A+2B = 10 for $7 -> $7."""
    problem = FleetProblem(
        gpu=("a", "b"),
        tp=(1, 1),
        cost_per_hour=np.array([3.0, 2.0]),
        capacity=np.array([[4.0], [3.0]]),
        demand=np.array([10.0]),
    )
    sol = solve_fleet(problem, OPTIONS)
    assert sol.status == "optimal"
    assert sol.cost_per_hour == pytest.approx(7.0)
    assert list(sol.replicas) == [1, 2]


def test_inventory_and_budget_make_it_infeasible():
    base = dict(
        gpu=("a",),
        tp=(2,),
        cost_per_hour=np.array([4.0]),
        capacity=np.array([[1.0]]),
        demand=np.array([3.0]),
    )
    assert solve_fleet(FleetProblem(**base, inventory={"a": 4}), OPTIONS).status == "infeasible"
    assert solve_fleet(FleetProblem(**base, budget_per_hour=10.0), OPTIONS).status == "infeasible"
    assert solve_fleet(FleetProblem(**base), OPTIONS).cost_per_hour == pytest.approx(12.0)


def test_highs_backend_agrees_with_cbc():
    problem = FleetProblem(
        gpu=("a", "b", "a"),
        tp=(1, 2, 4),
        cost_per_hour=np.array([2.0, 3.5, 7.0]),
        capacity=np.array([[1.0, 0.5], [2.2, 1.0], [4.5, 2.5]]),
        demand=np.array([7.0, 3.0]),
        min_replicas=2,
    )
    cbc = solve_fleet(problem, SolverOptions("cbc", 60))
    highs = solve_fleet(problem, SolverOptions("highs", 60))
    assert cbc.cost_per_hour == pytest.approx(highs.cost_per_hour)


def _stop_cbc_after_the_root(monkeypatch, search: bool) -> None:
    """Make the solver door's CBC stop after the root node (maxNodes 0), with its root
    heuristics and cuts (`search`) or without them, under a generous 120 s time limit."""
    real = solver._backend

    def node_limited(options: SolverOptions):
        cbc = real(options)
        cbc.optionsDict["maxNodes"] = 0
        if not search:
            cbc.options = [*cbc.options, "heuristicsOnOff off", "cuts off"]
        return cbc

    monkeypatch.setattr(solver, "_backend", node_limited)


# 36 candidates x 3 classes: CBC's root node leaves a gap of about 2% (needs branching)
EARLY_STOP = synthetic_problem(6, 3, 6)


def test_time_limit_returns_the_best_plan_with_its_gap(monkeypatch):
    """A solve stopped before it proves optimality returns its incumbent as time_limit, with
    the LP bound and the gap. The stop is CBC's node limit, not the clock: CBC reports it as
    "Stopped on iterations - objective value" where a time limit gives "Stopped on time -
    objective value", the same status PuLP and the door map. A wall-clock limit (0.3 s) gave
    an incumbent, none or the optimum depending on the machine and its load; a node limit
    gives the same result everywhere."""
    _stop_cbc_after_the_root(monkeypatch, search=True)
    sol = solve_fleet(EARLY_STOP, SolverOptions("cbc", 120))
    assert sol.status == "time_limit"
    assert 0 < sol.gap < 1 and sol.lower_bound < sol.cost_per_hour


def test_no_plan_within_the_time_limit_is_a_solver_error(monkeypatch):
    """A solve stopped before any incumbent is a SolverError (exit 3). Deterministic as above:
    CBC stops after the root with no heuristics or cuts, so it holds only the fractional LP
    optimum ("Stopped on iterations (no integer solution ...)"), exactly what a too-short
    time limit leaves, whereas 0.01 s of wall clock is a race with the machine's speed."""
    from planner.errors import SolverError

    _stop_cbc_after_the_root(monkeypatch, search=False)
    with pytest.raises(SolverError, match="without any feasible fleet") as err:
        solve_fleet(EARLY_STOP, SolverOptions("cbc", 120))
    assert err.value.exit_code == 3
