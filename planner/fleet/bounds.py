"""Closed-form lower bounds on a fleet's cost, to skip solves whose answer cannot matter
(issue #16: the single-GPU-type comparison solved one MIP per GPU type)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from planner.fleet import disagg, dominance
from planner.fleet.matrix import build_model
from planner.fleet.solver import Outcome, SolverOptions, solve
from planner.fleet.steady import FleetProblem, lp_lower_bound

LP_MARGIN = 1e-6  # an LP optimum is exact to the simplex's tolerances: claim a little less


def cost_floor(problem: FleetProblem) -> float:
    """No fleet of `problem` costs less per hour than this: each class's demand times the
    cheapest cost per request/s any candidate offers it (the LP relaxation without limits),
    and at least `min_replicas` of the cheapest replica. inf when a class with demand has no
    candidate; 0 (no bound) when prefill/decode pools are offered."""
    if problem.n_candidates == 0:
        return float(np.inf) if np.any(problem.demand > 0) else 0.0
    if np.any(disagg.roles_of(problem) != "aggregated"):
        return 0.0
    cost = np.asarray(problem.cost_per_hour, dtype=float)
    cheapest = cheapest_per_request(problem)
    demand = np.asarray(problem.demand, dtype=float)
    wanted = demand > 0
    if np.any(np.isinf(cheapest[wanted])):
        return float(np.inf)
    serve = float(np.dot(demand[wanted], cheapest[wanted]))
    return max(serve, problem.min_replicas * float(cost.min()))


def cheapest_per_request(problem: FleetProblem) -> np.ndarray:
    """Per class, the least $/h any candidate charges per request/s it serves (inf where no
    candidate serves the class): the LP relaxation without limits, class by class."""
    cost = np.asarray(problem.cost_per_hour, dtype=float)
    cap = np.asarray(problem.capacity, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_unit = np.where(cap > 0, cost[:, None] / cap, np.inf)
    return per_unit.min(axis=0, initial=np.inf)


def fleet_floor(problem: FleetProblem, options: SolverOptions) -> float:
    """`cost_floor`, or where prefill/decode pools leave it at 0 the LP relaxation's optimum,
    a little under: an LP of one GPU type takes 5-50 ms where its MIP took up to 2 s
    (mixed-traffic: 15 MIPs became 1). The LP is the cost-only one over the undominated
    candidates (`fleet/dominance.py`: the same optimum; issue 16, building the whole type's
    model was most of the comparison's time)."""
    floor = cost_floor(problem)
    if floor > 0 or not disagg.has_roles(problem):
        return floor
    if not dominance.supported(problem):
        return lp_lower_bound(problem, options) * (1 - 1e-5)  # the objective has the tie-break
    outcome = _least_cost(problem, options, integer=False)
    if outcome.status == "infeasible":
        return math.inf
    if outcome.status != "optimal":
        return 0.0
    return max(outcome.objective * (1 - LP_MARGIN), 0.0)


def least_cost_bound(problem: FleetProblem, options: SolverOptions) -> float:
    """A proven lower bound on what any fleet of `problem` costs (inf: no fleet is feasible),
    from the MIP over its undominated candidates on the cost alone (`fleet/dominance.py`: the
    same least cost), its solver's own bound; -inf where that route does not apply (rows that
    name candidates, a backend that reports no bound). Issue 16: the single-GPU-type plan
    solved rag's H100 fleet (50 candidates, the tie-break) in 0.6 s; this takes 0.02 s."""
    if problem.n_candidates == 0 or not dominance.supported(problem):
        return -math.inf
    outcome = _least_cost(problem, options, integer=True)
    if outcome.status == "infeasible":
        return math.inf
    return outcome.bound if math.isfinite(outcome.bound) else -math.inf


def _least_cost(problem: FleetProblem, options: SolverOptions, integer: bool) -> Outcome:
    """The fleet model over the undominated candidates, on the cost alone, solved as a MIP
    (`Model.branch_only`: small) or as its LP relaxation."""
    kept = problem.restricted(dominance.undominated(problem))
    built = build_model(kept, integer=integer, compact=True)  # the cost alone
    model = replace(built.model, cost=built.cost_only(kept)).branch_only()
    return solve(model, options)
