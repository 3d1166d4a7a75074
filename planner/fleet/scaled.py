"""The steady fleet MIP at many demand scales, for the break-even analysis (issue 16).

The model is built once as arrays (`fleet/matrix.py`, the same fleets as `steady.build_lp`,
with the prefill/decode pools' TTFT buckets folded into one load per pool and class:
`matrix._hall_rows`); each scale changes only the demand rows' right-hand sides and the
replica bounds, and goes to HiGHS in process. Rebuilding the PuLP model per scale was most
of a small solve's time (rag: 80 of 100 ms), and the break-even chart solves it at some 20
scales.

Only problems whose other rows do not depend on the demand come this way (no redundancy that
holds, vendors or services: their failover rows carry the demand), and only on HiGHS; the
rest keep `solve_fleet` per scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from planner.fleet.matrix import build_model
from planner.fleet.solver import Model, SolverOptions, solve
from planner.fleet.steady import FleetProblem, solved_point

if TYPE_CHECKING:
    import pulp

LP_MARGIN = 1e-6  # an LP optimum is exact to the simplex's tolerances: claim a little less
REACH_CAP = 1e9  # a fixed fleet's largest scale is sought below this (no demand: unbounded)


def supported(problem: FleetProblem, options: SolverOptions) -> bool:
    """Whether only the demand rows and replica bounds change with the scale."""
    plain = not problem.names_candidates
    return plain and options.backend == "highs" and problem.n_candidates > 0


@dataclass(frozen=True)
class ScaledSolution:
    """What one scale's solve found: its status, replicas per candidate and $/h."""

    status: str  # optimal | time_limit | infeasible
    replicas: np.ndarray
    cost_per_hour: float


class ScaledFleet:
    """One fleet problem, solvable at any multiple of its demand without a rebuild."""

    def __init__(self, problem: FleetProblem, options: SolverOptions) -> None:
        self.problem = problem
        self.options = options
        built = build_model(problem, compact=True)  # the cost alone: pools balanced by Hall
        self.model, self.replica_cols = built.model, built.replica_cols
        self.demand_rows = built.demand_rows
        self.floor_row = built.floor_row  # sum of replicas >= min_replicas
        caps = problem.capacity
        with np.errstate(divide="ignore", invalid="ignore"):
            self.need = np.where(caps > 0, problem.demand / caps, 0.0).sum(axis=1)
        self.floor = problem.min_replicas + 1  # steady._replica_bound's floor + 1, no others
        # issue 16: the break-even asks the cost alone, so the MIP goes without the per-GPU
        # tie-break (whose 1e-6 terms hide the prices' granularity from HiGHS: rag's H100
        # plan, 33 nodes with it and 1 without)
        self.cost_only = built.cost_only(problem)

    def _demand_bounds(self, demand: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """The model's row bounds (copies) with each demand row fixed at `demand`."""
        row_lower, row_upper = self.model.row_lower.copy(), self.model.row_upper.copy()
        row_lower[self.demand_rows] = demand
        row_upper[self.demand_rows] = demand
        return row_lower, row_upper

    def _replica_cap(self, scale: float) -> np.ndarray:
        """Replica upper bounds at `scale`: what each candidate needs to carry the whole
        demand alone, rounded up, plus the floor (no optimal fleet takes more of one)."""
        return np.ceil(self.need * scale) + self.floor

    def _scale_cols(self) -> np.ndarray:
        """The column of the scale (a new last column) once per demand row, for the models
        that make the scale a variable (`reach`, `first_crossing`)."""
        return np.full(len(self.demand_rows), self.model.n_cols)

    def at(self, scale: float) -> ScaledSolution:
        """The least-cost fleet at `scale` times the demand (`solve_fleet`'s cost; among fleets
        of that cost, not necessarily its fleet)."""
        row_lower, row_upper = self._demand_bounds(self.problem.demand * scale)
        upper = self.model.upper.copy()
        upper[self.replica_cols] = self._replica_cap(scale)
        model = replace(
            self.model,
            cost=self.cost_only,
            upper=upper,
            row_lower=row_lower,
            row_upper=row_upper,
        ).branch_only()
        outcome = solve(model, self.options)
        values = solved_point(outcome, self.options)
        if values is None:
            n = self.problem.n_candidates
            return ScaledSolution("infeasible", np.zeros(n, dtype=np.int64), math.inf)
        chosen = np.rint(values[self.replica_cols]).astype(np.int64)
        cost = float(np.dot(self.problem.cost_per_hour, chosen))
        return ScaledSolution(outcome.status, chosen, cost)

    def reach(self, replicas: np.ndarray) -> float:
        """The largest multiple of the demand that the fleet `replicas` carries (issue 16, the
        exact break-even): an LP over the loads with the fleet fixed and the scale a column.
        Every row but the demand rows is homogeneous in the loads and the fixed replicas
        (capacity, pool balance, inventory, floor), so the scales it carries are [0, reach]."""
        m, s = self.model, self.model.n_cols  # the scale is the new last column
        cost = np.zeros(s + 1)
        cost[s] = -1.0  # maximise the scale
        fixed = np.asarray(replicas, dtype=float)
        lower, upper = np.append(m.lower, 0.0), np.append(m.upper, REACH_CAP)
        lower[self.replica_cols] = fixed
        upper[self.replica_cols] = fixed
        row_lower, row_upper = self._demand_bounds(0.0)  # served - demand x scale = 0
        model = replace(
            m,
            cost=cost,
            lower=lower,
            upper=upper,
            integer=np.zeros(s + 1, dtype=bool),
            rows=np.append(m.rows, self.demand_rows),
            cols=np.append(m.cols, self._scale_cols()),
            values=np.append(m.values, -self.problem.demand),
            row_lower=row_lower,
            row_upper=row_upper,
            start=None,
        )
        outcome = solve(model, self.options)
        if outcome.status != "optimal" or outcome.values is None:
            return 0.0  # claims no scale: the caller solves where it would have looked
        return float(outcome.values[s]) * (1 - LP_MARGIN)

    def first_crossing(self, slope: float, lo: float, hi: float) -> float:
        """A proven lower bound on the least scale in [lo, hi] at which some fleet carries the
        demand x scale for at most slope x scale $/h (inf: none does), from one MIP with the
        scale a column: min s subject to the fleet's rows, demand x s served and cost <= slope
        x s. Replicas stay under `at(hi)`'s bounds: a fleet optimal at s <= hi fits them."""
        m, s = self.model, self.model.n_cols
        cost = np.zeros(s + 1)
        cost[s] = 1.0  # minimise the scale
        lower, upper = np.append(m.lower, lo), np.append(m.upper, hi)
        upper[self.replica_cols] = self._replica_cap(hi)
        row_lower, row_upper = self._demand_bounds(0.0)  # served - demand x s = 0
        row_lower = np.append(row_lower, -math.inf)
        row_upper = np.append(row_upper, 0.0)  # cost - slope x s <= 0
        budget = np.full(len(self.replica_cols) + 1, m.n_rows)
        model = replace(
            m,
            cost=cost,
            lower=lower,
            upper=upper,
            integer=np.append(m.integer, False),
            rows=np.concatenate([m.rows, self.demand_rows, budget]),
            cols=np.concatenate([m.cols, self._scale_cols(), self.replica_cols, [s]]),
            values=np.concatenate(
                [m.values, -self.problem.demand, self.problem.cost_per_hour, [-slope]]
            ),
            row_lower=row_lower,
            row_upper=row_upper,
            start=None,
        ).branch_only()
        outcome = solve(model, self.options)
        if outcome.status == "infeasible":
            return math.inf
        if outcome.status == "none" or not math.isfinite(outcome.bound):
            return lo  # proves nothing: the caller walks on from lo
        return max(lo, float(outcome.bound) * (1 - LP_MARGIN))

    def lp_slope(self) -> float:
        """$/h per unit of scale that no fleet beats: the LP relaxation at scale 1 on the cost
        alone (no tie-break), without the redundancy floor or replica bounds. Its other rows
        are homogeneous in the demand (capacity, pool balance), so its optimum is linear in
        the scale; with pools it is far above the closed form that puts each class on its
        cheapest candidate as if a pool served alone (long-prompt: 47.5 against 10.6)."""
        row_lower, row_upper = self._demand_bounds(self.problem.demand)
        if self.floor_row is not None:
            row_lower[self.floor_row] = -math.inf
        upper = self.model.upper.copy()
        upper[self.replica_cols] = math.inf
        model = replace(
            self.model, cost=self.cost_only, upper=upper, row_lower=row_lower, row_upper=row_upper
        ).relaxed()
        outcome = solve(model, self.options)
        if outcome.status != "optimal":
            return 0.0
        return max(float(outcome.objective) * (1 - LP_MARGIN), 0.0)


def to_arrays(lp: pulp.LpProblem, replicas: list) -> tuple[Model, np.ndarray]:
    """A PuLP model as an array `Model` (columns in PuLP's own order), and the columns of
    `replicas` (what `fleet/matrix.py` builds directly; its tests compare the two)."""
    import pulp

    variables = lp.variables()
    index = {v.name: j for j, v in enumerate(variables)}
    cost = np.zeros(len(variables))
    for v, a in lp.objective.items():
        cost[index[v.name]] = a
    lower = np.array([-math.inf if v.lowBound is None else v.lowBound for v in variables], float)
    upper = np.array([math.inf if v.upBound is None else v.upBound for v in variables], float)
    integer = np.array([v.cat == pulp.LpInteger for v in variables], dtype=bool)
    rows, cols, values, row_lower, row_upper = [], [], [], [], []
    for i, c in enumerate(lp.constraints.values()):
        for v, a in c.items():
            rows.append(i)
            cols.append(index[v.name])
            values.append(a)
        rhs = -c.constant
        row_lower.append(rhs if c.sense != pulp.LpConstraintLE else -math.inf)
        row_upper.append(rhs if c.sense != pulp.LpConstraintGE else math.inf)
    model = Model(
        cost,
        lower,
        upper,
        integer,
        np.array(rows, dtype=np.int64),
        np.array(cols, dtype=np.int64),
        np.array(values, dtype=float),
        np.array(row_lower, dtype=float),
        np.array(row_upper, dtype=float),
    )
    return model, np.array([index[v.name] for v in replicas], dtype=np.int64)
