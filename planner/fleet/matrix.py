"""The steady fleet MIP of `steady.py` built with numpy as one sparse matrix (issue 16).

`steady.build_lp` builds the model with PuLP, one expression at a time, and PuLP hands it to
HiGHS a column and a row at a time: on mixed-traffic 0.1 s of building for 13 models, and
PuLP's import on every run. This builds the same model (the same columns in PuLP's order,
sorted by variable name; the same rows in the same order; the same coefficients to the bit)
as arrays, for the problems whose rows it covers: demand, capacity, pool balance, inventory,
GPU cap, replica floor and budget. Redundancy that holds, vendors and services add rows that
name candidates (`fleet/redundancy.py`) and keep the PuLP model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.arrays import distinct
from planner.fleet import disagg
from planner.fleet.solver import Model
from planner.fleet.steady import TIE_BREAK_PER_GPU, FleetProblem, replica_bounds


def name_order(names: list[str]) -> np.ndarray:
    """Positions of `names` in the order PuLP sorted its variables (by name): the column order
    its models were solved in, so equal-cost ties fall as they did."""
    return np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)


def loads_in_use(capacity: np.ndarray, replicas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate and class of every load a fleet may carry (a class the candidate serves, on a
    candidate it runs), in PuLP's order of their names (x_..._c<c>_w<w>): the columns of the
    load balancer's and the failover LPs."""
    load_c, load_w = np.nonzero(capacity > 0)
    kept = replicas[load_c] > 0
    load_c, load_w = load_c[kept], load_w[kept]
    order = name_order([f"c{c}_w{w}" for c, w in zip(load_c, load_w, strict=True)])
    return load_c[order], load_w[order]


@dataclass(frozen=True)
class FleetModel:
    """The fleet MIP as an array `Model`, and where its variables and rows are: each
    candidate's replica column; each aggregated load's candidate, class and column; each pool
    load's candidate, class, bucket and column; the demand rows and the replica floor's row."""

    model: Model
    replica_cols: np.ndarray
    load_c: np.ndarray
    load_w: np.ndarray
    load_cols: np.ndarray
    pool_c: np.ndarray
    pool_w: np.ndarray
    pool_cols: np.ndarray
    demand_rows: np.ndarray
    floor_row: int | None

    def replicas(self, values: np.ndarray) -> np.ndarray:
        """Replicas per candidate in a solved point (rounded to whole replicas)."""
        return np.rint(values[self.replica_cols]).astype(np.int64)

    def cost_only(self, problem: FleetProblem) -> np.ndarray:
        """The objective without the per-GPU tie-break, for MIPs that ask the cost alone."""
        cost = np.zeros(self.model.n_cols)
        cost[self.replica_cols] = problem.cost_per_hour
        return cost

    def carried(self, values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Candidates x classes load in a solved point, pool buckets summed in the order
        `steady.solve_fleet` sums them."""
        out = np.zeros(shape)
        out[self.load_c, self.load_w] = np.maximum(values[self.load_cols], 0.0)
        np.add.at(out, (self.pool_c, self.pool_w), np.maximum(values[self.pool_cols], 0.0))
        return out


class _Rows:
    """Rows gathered as (row, variable, coefficient) triples, with their bounds."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.vars: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, variables: np.ndarray, values: np.ndarray, lower: float, upper: float) -> int:
        """One row; returns its index. Zero coefficients are left out, as PuLP's HiGHS does."""
        i = len(self.lower)
        keep = values != 0
        self.rows.append(np.full(int(keep.sum()), i, dtype=np.int64))
        self.vars.append(np.asarray(variables, dtype=np.int64)[keep])
        self.values.append(np.asarray(values, dtype=float)[keep])
        self.lower.append(lower)
        self.upper.append(upper)
        return i


def build_model(problem: FleetProblem, integer: bool = True, compact: bool = False) -> FleetModel:
    """`steady.build_lp(problem, integer)` as arrays (the module docstring): variables are
    numbered replicas, aggregated loads, pool loads, then renumbered by name as PuLP orders
    them. `compact`: one load per pool candidate and class in place of one per TTFT bucket,
    balanced by `_hall_rows`: the same fleets and costs from a model a third the size
    (mixed-traffic: 203 columns and 131 rows against 782 and 247), for the MIPs that ask the
    cost alone (its equal-cost ties may fall on another fleet than PuLP's model takes)."""
    n = problem.n_candidates
    role = disagg.roles_of(problem)
    load_c, load_w = np.nonzero(problem.capacity > 0)
    agg = role[load_c] == "aggregated"
    load_c, load_w = load_c[agg], load_w[agg]
    if compact:  # one load per pool candidate and class that some bucket admits
        eligible = disagg.eligibility(problem)
        pool_c, pool_w = np.nonzero(eligible.any(axis=2))
        pool_k = np.full(len(pool_c), -1)
    else:
        pool_c, pool_w, pool_k = disagg.pool_index(problem)
    n_load, n_pool = len(load_c), len(pool_c)
    load_var = n + np.arange(n_load)
    pool_var = n + n_load + np.arange(n_pool)
    names = [
        *(f"n_replicas_c{c}" for c in range(n)),
        *(f"x_load_c{c}_w{w}" for c, w in zip(load_c, load_w, strict=True)),
        *(
            f"x_load_c{c}_w{w}" + (f"_k{k}" if k >= 0 else "_pool")
            for c, w, k in zip(pool_c, pool_w, pool_k, strict=True)
        ),
    ]
    column = np.empty(len(names), dtype=np.int64)
    column[name_order(names)] = np.arange(len(names))

    cost = problem.cost_per_hour.astype(float)
    tp = np.asarray(problem.tp, dtype=np.int64)
    rows = _Rows()
    prefill = role[pool_c] == "prefill"
    demand_rows = []
    for w, demand in enumerate(problem.demand):
        served = np.concatenate([load_var[load_w == w], pool_var[(pool_w == w) & prefill]])
        demand_rows.append(rows.add(served, np.ones(len(served)), float(demand), float(demand)))
    for c in range(n):
        mine, pools = load_c == c, pool_c == c
        terms = np.concatenate([load_var[mine], pool_var[pools], [c]])
        caps = np.concatenate(
            [problem.capacity[c, load_w[mine]], problem.capacity[c, pool_w[pools]]]
        )
        rows.add(terms, np.append(1.0 / caps, -1.0), -np.inf, 0.0)
    if compact:
        _hall_rows(rows, problem, eligible[pool_c, pool_w], pool_c, pool_w, pool_var)
    else:
        _balance_rows(rows, problem, pool_c, pool_w, pool_k, pool_var)
    for gpu_id, avail in sorted(problem.inventory.items()):
        mine = np.flatnonzero(np.asarray(problem.gpu, dtype=object) == gpu_id)
        if len(mine):
            rows.add(mine, tp[mine].astype(float), -np.inf, float(avail))
    every = np.arange(n)
    if problem.max_gpus is not None:
        rows.add(every, tp.astype(float), -np.inf, float(problem.max_gpus))
    floor_row = None
    if problem.min_replicas > 0:
        floor_row = rows.add(every, np.ones(n), float(problem.min_replicas), np.inf)
    if problem.budget_per_hour is not None:
        rows.add(every, cost, -np.inf, float(problem.budget_per_hour))

    n_vars = len(names)
    objective = np.zeros(n_vars)
    objective[:n] = cost + TIE_BREAK_PER_GPU * tp
    upper = np.full(n_vars, np.inf)
    upper[:n] = replica_bounds(problem)
    is_integer = np.zeros(n_vars, dtype=bool)
    is_integer[:n] = integer
    model = Model(
        _renumbered(objective, column),
        np.zeros(n_vars),
        _renumbered(upper, column),
        _renumbered(is_integer, column),
        np.concatenate(rows.rows) if rows.rows else np.zeros(0, dtype=np.int64),
        column[np.concatenate(rows.vars)] if rows.vars else np.zeros(0, dtype=np.int64),
        np.concatenate(rows.values) if rows.values else np.zeros(0),
        np.array(rows.lower, dtype=float),
        np.array(rows.upper, dtype=float),
    )
    return FleetModel(
        model,
        column[:n],
        load_c,
        load_w,
        column[load_var],
        pool_c,
        pool_w,
        column[pool_var],
        np.array(demand_rows, dtype=np.int64),
        floor_row,
    )


def _renumbered(values: np.ndarray, column: np.ndarray) -> np.ndarray:
    """Per-variable values placed at each variable's column."""
    out = np.empty_like(values)
    out[column] = values
    return out


def _balance_rows(
    rows: _Rows,
    problem: FleetProblem,
    pool_c: np.ndarray,
    pool_w: np.ndarray,
    pool_k: np.ndarray,
    pool_var: np.ndarray,
) -> None:
    """`disagg.add_balance`'s rows: per class, bucket and KV balance group, prefill loads in
    equal decode loads out, in the order of their sorted keys."""
    if not len(pool_c):
        return
    role, group = disagg.roles_of(problem), disagg.groups_of(problem)
    flows: dict[tuple[int, int, str], list[int]] = {}
    keys = zip(pool_w.tolist(), pool_k.tolist(), pool_c.tolist(), strict=True)
    for i, (w, k, c) in enumerate(keys):
        flows.setdefault((w, k, group[c]), []).append(i)
    for key in sorted(flows):
        members = np.array(flows[key], dtype=np.int64)
        sign = np.where(role[pool_c[members]] == "prefill", 1.0, -1.0)
        rows.add(pool_var[members], sign, 0.0, 0.0)


def _hall_rows(
    rows: _Rows,
    problem: FleetProblem,
    eligible: np.ndarray,
    pool_c: np.ndarray,
    pool_w: np.ndarray,
    pool_var: np.ndarray,
) -> None:
    """The bucket balance of `_balance_rows` with one load per pool candidate and class.

    A prefill candidate may carry the buckets up to its last eligible one b, a decode candidate
    those from its first eligible one a (`disagg.eligibility`: the buckets' decode budgets
    rise), so a prefill and a decode candidate may pair exactly when a <= b, and the sets of
    partners are nested. Flows then balance over some buckets exactly when (Hall's condition,
    Gale's theorem for flows) the prefill and decode totals are equal and, for every bucket t,
    the decode candidates that need a bucket >= t carry no more than the prefill candidates
    that reach one: sum(y, a >= t) <= sum(x, b >= t); between two decode thresholds the
    left side stays and the right one only falls, so the thresholds are the rows. Per class
    and KV balance group."""
    if not len(pool_c):
        return
    role, group = disagg.roles_of(problem), disagg.groups_of(problem)
    # `eligible`: pool loads x buckets, `disagg.eligibility` at each load's candidate and class
    first = np.argmax(eligible, axis=1)
    last = eligible.shape[1] - 1 - np.argmax(eligible[:, ::-1], axis=1)
    prefill = role[pool_c] == "prefill"
    threshold = np.where(prefill, last, first)
    for w, g in sorted(set(zip(pool_w.tolist(), group[pool_c].tolist(), strict=True))):
        mine = (pool_w == w) & (group[pool_c] == g)
        rows.add(pool_var[mine], np.where(prefill[mine], -1.0, 1.0), 0.0, 0.0)  # in = out
        decode_needs = threshold[mine & ~prefill]
        for t in distinct(decode_needs[decode_needs > 0]):
            upper = mine & (threshold >= t)
            rows.add(pool_var[upper], np.where(prefill[upper], -1.0, 1.0), -np.inf, 0.0)
