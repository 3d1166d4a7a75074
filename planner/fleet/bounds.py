"""Closed-form lower bounds on a fleet's cost, to skip solves whose answer cannot matter
(issue #16: the single-GPU-type comparison solved one MIP per GPU type)."""

from __future__ import annotations

import numpy as np

from planner.fleet import disagg
from planner.fleet.steady import FleetProblem


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
    cap = np.asarray(problem.capacity, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_unit = np.where(cap > 0, cost[:, None] / cap, np.inf)
    cheapest = per_unit.min(axis=0)
    demand = np.asarray(problem.demand, dtype=float)
    wanted = demand > 0
    if np.any(np.isinf(cheapest[wanted])):
        return float(np.inf)
    serve = float(np.dot(demand[wanted], cheapest[wanted]))
    return max(serve, problem.min_replicas * float(cost.min()))
