"""Where a plan over time first costs no more than a line: one MIP with the scale a column.

The break-even of a plan over time (`planning.breakeven.break_even_over_time`) walks up the
demand scale: a scale s whose plan costs c above the API's line leaves [s, c / slope) above
it. A plan over time rents by the hour, so its cost is nearly linear in the scale, and against
a line nearly parallel to it the walk converges only geometrically (owned-fleet against
OpenRouter: 8 plans, then a grid scan). Here one MIP gives a proven lower bound on the first
crossing to jump to (issue 16, as `fleet.scaled.ScaledFleet.first_crossing` does for the
steady fleet):

minimise   s
subject to the MIP over time (`fleet.overtime.build_time_model`) with every row that states
           the demand (met per class and period, covered by replicas, the spot share) written
           as its rows at demand x s: row - bound x s (same sense) 0
           total cost (reserved, owned, on-demand, spot; no tie-break) - budget x s <= 0
           lo <= s <= hi

Every row that moves with the demand is homogeneous in it (a bound equal to the demand, or a
share of it), so the rows at demand x s are exactly the MIP's rows at that demand. Column
bounds are the model's at demand x hi: the bounds grow with the demand, so a plan optimal at
any s <= hi keeps them. The solver's bound (its best bound, valid at a node or time limit too)
is then a lower bound on every scale in [lo, hi] where some plan costs at most budget x s.

Measured too weak for the walk to use it (t16j, `benchmarks/results/breakeven-first-crossing.md`):
the LP relaxation rounds no period's replicas, so against owned-fleet's near-parallel OpenRouter
line it proves 92.7 req/s in 18.9 CPU s where a plan is already under the line at 212.4; on
diurnal-chatbot against Nebius it is tight (14.56 against 14.61) but costs 8.3 CPU s against
the walk's 0.3 s. `break_even_over_time` therefore does not call it; it stays as the proven
bound for `benchmarks/breakeven_first_crossing.py --over-time` and a stronger successor.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from planner.fleet.overtime import TimeProblem, build_time_model
from planner.fleet.solver import SolverOptions, solve

LP_MARGIN = 1e-6  # the bound is exact to the solver's tolerances: claim a little less


def first_crossing(
    problem: TimeProblem, budget: float, lo: float, hi: float, options: SolverOptions
) -> float:
    """A proven lower bound on the least scale s in [lo, hi] at which some plan over time of
    `problem` with every period's demand x s costs at most budget x s in total over the
    horizon (inf: no plan does in [lo, hi]; lo where the solve proves nothing)."""
    if not 0 < lo <= hi or not math.isfinite(hi):
        return lo
    model, lay = build_time_model(replace(problem, demand=problem.demand * hi))
    half, _ = build_time_model(replace(problem, demand=problem.demand * (hi / 2)))
    # the rows that state the demand are those whose bounds move with it; each is
    # homogeneous in the demand (its finite bound at hi is twice that at hi / 2)
    moved = np.flatnonzero(
        (model.row_lower != half.row_lower) | (model.row_upper != half.row_upper)
    )
    finite_low = np.isfinite(model.row_lower[moved])
    bound_at_hi = np.where(finite_low, model.row_lower[moved], model.row_upper[moved])
    bound_at_half = np.where(finite_low, half.row_lower[moved], half.row_upper[moved])
    if not np.allclose(bound_at_hi, 2 * bound_at_half, rtol=1e-9, atol=0.0):
        return lo  # not the model this proof is written for: claim nothing
    s = model.n_cols  # the scale is the new last column
    row_lower, row_upper = model.row_lower.copy(), model.row_upper.copy()
    row_lower[moved] = np.where(finite_low, 0.0, -math.inf)
    row_upper[moved] = np.where(np.isfinite(model.row_upper[moved]), 0.0, math.inf)
    tier_cost = model.cost.copy()
    tier_cost[lay.replicas.ravel()] = 0.0  # a stable replica costs only the tie-break
    used = np.flatnonzero(tier_cost)
    budget_row = model.n_rows
    objective = np.zeros(s + 1)
    objective[s] = 1.0  # minimise the scale
    crossing = replace(
        model,
        cost=objective,
        lower=np.append(model.lower, lo),
        upper=np.append(model.upper, hi),
        integer=np.append(model.integer, False),
        rows=np.concatenate([model.rows, moved, np.full(len(used) + 1, budget_row)]),
        cols=np.concatenate([model.cols, np.full(len(moved), s), used, [s]]),
        values=np.concatenate([model.values, -bound_at_hi / hi, tier_cost[used], [-budget]]),
        row_lower=np.append(row_lower, -math.inf),
        row_upper=np.append(row_upper, 0.0),  # cost - budget x s <= 0
        start=None,
    )
    outcome = solve(crossing, options)
    if outcome.status == "infeasible":
        return math.inf
    if outcome.status == "none" or not math.isfinite(outcome.bound):
        return lo  # proves nothing: the caller walks on from lo
    return max(lo, float(outcome.bound) * (1 - LP_MARGIN))
