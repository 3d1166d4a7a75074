"""Spreading each class's demand over a chosen fleet, as a load balancer would."""

from __future__ import annotations

import numpy as np

from planner.fleet.matrix import loads_in_use
from planner.fleet.solver import Model, SolverOptions, solve
from planner.fleet.steady import FleetProblem

TIE_BREAK = 1e-6  # a fixed preference order among equal splits, so every run splits alike


def balance_load(
    problem: FleetProblem, replicas: np.ndarray, options: SolverOptions
) -> np.ndarray | None:
    """Split each class's demand over the chosen replicas so the busiest candidate is as idle
    as possible (what a load balancer aims at), with a fixed tie-break so the split is the same
    on every run. Returns candidates x classes, or None if the replicas cannot carry it.

    The LP is built as arrays (issue 16: PuLP's build and import on every run): column 0 the
    busiest candidate's utilisation, then one load per (chosen candidate, class it carries),
    in the order PuLP sorted their names (x_load_c<c>_w<w>) when it built this LP."""
    n_classes = problem.capacity.shape[1]
    load_c, load_w = loads_in_use(problem.capacity, replicas)
    n_loads = len(load_c)
    demand = problem.demand.astype(float)
    tie = TIE_BREAK * (load_c * n_classes + load_w + 1) / np.maximum(demand[load_w], 1e-9)
    columns = 1 + np.arange(n_loads)
    used = np.flatnonzero(replicas)
    # rows: each class's demand served, then each chosen candidate's loads within `busiest` of
    # its replicas: sum_w x[c,w] / capacity[c,w] - busiest * replicas[c] <= 0
    at = np.searchsorted(used, load_c)
    rows = np.concatenate([load_w, n_classes + at, n_classes + np.arange(len(used))])
    cols = np.concatenate([columns, columns, np.zeros(len(used), dtype=np.int64)])
    values = np.concatenate(
        [np.ones(n_loads), 1 / problem.capacity[load_c, load_w], -replicas[used].astype(float)]
    )
    model = Model(
        cost=np.concatenate([[1.0], tie]),
        lower=np.zeros(n_loads + 1),
        upper=np.full(n_loads + 1, np.inf),
        integer=np.zeros(n_loads + 1, dtype=bool),
        rows=rows,
        cols=cols,
        values=values,
        row_lower=np.concatenate([demand, np.full(len(used), -np.inf)]),
        row_upper=np.concatenate([demand, np.zeros(len(used))]),
    )
    outcome = solve(model, options)
    if outcome.status != "optimal" or outcome.values is None:
        return None
    out = np.zeros(problem.capacity.shape)
    out[load_c, load_w] = np.maximum(outcome.values[columns], 0.0)
    return out
