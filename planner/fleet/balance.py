"""Spreading each class's demand over a chosen fleet, as a load balancer would."""

from __future__ import annotations

import numpy as np
import pulp

from planner.fleet.solver import SolverOptions, solve, value
from planner.fleet.steady import FleetProblem

TIE_BREAK = 1e-6  # a fixed preference order among equal splits, so every run splits alike


def balance_load(
    problem: FleetProblem, replicas: np.ndarray, options: SolverOptions
) -> np.ndarray | None:
    """Split each class's demand over the chosen replicas so the busiest candidate is as idle
    as possible (what a load balancer aims at), with a fixed tie-break so the split is the same
    on every run. Returns candidates x classes, or None if the replicas cannot carry it."""
    lp = pulp.LpProblem("balance", pulp.LpMinimize)
    busiest = pulp.LpVariable("max_utilisation", 0)
    n_classes = problem.capacity.shape[1]
    load = {
        (int(c), int(w)): pulp.LpVariable(f"x_load_c{c}_w{w}", 0)
        for c, w in zip(*np.nonzero(problem.capacity > 0), strict=True)
        if replicas[c] > 0
    }
    tie = pulp.lpSum(
        TIE_BREAK * (c * n_classes + w + 1) / max(float(problem.demand[w]), 1e-9) * v
        for (c, w), v in load.items()
    )
    lp += busiest + tie
    for w, demand in enumerate(problem.demand):
        lp += pulp.lpSum(v for (c, ww), v in load.items() if ww == w) == float(demand)
    for chosen in np.flatnonzero(replicas):
        used = [v / float(problem.capacity[c, w]) for (c, w), v in load.items() if c == chosen]
        lp += pulp.lpSum(used) <= busiest * float(replicas[chosen])
    if solve(lp, options).status != "optimal":
        return None
    out = np.zeros(problem.capacity.shape)
    for (c, w), v in load.items():
        out[c, w] = max(value(v), 0.0)
    return out
