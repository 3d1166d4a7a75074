"""Issue 16 / #13 / #14: the plan over time solved by branch-and-price on the held GPUs.

Periods couple only through the GPUs held for the horizon (reserved, owned). The plain MIP's
LP bound is weak (every period rounds its replicas on its own) and branch-and-bound over all
periods at once does not close it. Here each period's integer plans are columns of a master LP
(Dantzig-Wolfe): a period plan is priced by a small MIP of that period alone, at GPU prices
given by the master's duals, so the master's bound holds every period's integrality. Branching
is on the held counts only; for held counts fixed, every period is solved exactly on its own.
Every step is bounded by counts (nodes, rounds), never by the clock, and a plan is called
optimal only against the proven bound.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from planner.fleet.decompose import column_blocks, solve_blocks
from planner.fleet.overtime import (
    TIE_BREAK_PER_REPLICA,
    TierPrices,
    TimeLayout,
    TimeProblem,
    build_time_model,
)
from planner.fleet.overtime_enum import PeriodTable, best_mix
from planner.fleet.solver import Model, Outcome, SolverOptions, Status, solve

MAX_NODES = 2_000  # boxes of held counts explored before handing over to the whole MIP
MAX_ROUNDS = 40  # pricing rounds per box
REDUCED_COST_TOL = 1e-7  # relative: a column enters only if it improves the master by this


@dataclass
class _Pool:
    """Period plans found so far: per period, GPUs in use per type (stable, spot) and cost."""

    n_types: int
    priced: dict[tuple, tuple] = field(default_factory=dict)  # (period, prices) -> result
    used: list[list[np.ndarray]] = field(default_factory=list)
    spot: list[list[np.ndarray]] = field(default_factory=list)
    cost: list[list[float]] = field(default_factory=list)

    def add(self, p: int, used: np.ndarray, spot: np.ndarray, cost: float) -> None:
        self.used[p].append(used)
        self.spot[p].append(spot)
        self.cost[p].append(cost)


@dataclass(frozen=True)
class _Held:
    """The held columns of the whole model (reserved and owned, per GPU type)."""

    columns: np.ndarray  # column index in the whole model
    type_of: np.ndarray  # index into gpu_types
    price: np.ndarray  # $ over the horizon per GPU held


def _held(problem: TimeProblem, lay: TimeLayout) -> _Held:
    types = problem.gpu_types
    h = float(problem.hours.sum())
    items = [(c, types.index(g), problem.prices.reserved[g] * h) for g, c in lay.reserved.items()]
    items += [(c, types.index(g), problem.prices.owned[g] * h) for g, c in lay.owned.items()]
    cols, kinds, price = zip(*items, strict=True) if items else ((), (), ())
    return _Held(np.array(cols, int), np.array(kinds, int), np.array(price, float))


def _usage(problem: TimeProblem, lay: TimeLayout, x: np.ndarray, p: int):
    """GPUs of each type in use (stable, spot) in period p of a point, and its spot and
    tie-break cost."""
    types = problem.gpu_types
    gpu, tp = np.array(problem.gpu), np.array(problem.tp, float)
    kind = np.array([types.index(g) for g in gpu])
    n = np.rint(x[lay.replicas[:, p]])
    q = np.rint(x[lay.spot_replicas[:, p]]) if len(lay.spot_candidates) else np.zeros(0)
    used = np.bincount(kind, weights=tp * n, minlength=len(types))
    sc = lay.spot_candidates
    spot = np.bincount(kind[sc], weights=tp[sc] * q, minlength=len(types)) if len(sc) else 0 * used
    price = np.array([problem.prices.spot.get(problem.gpu[c], 0.0) for c in sc])
    hours = float(problem.hours[p])
    cost = float((price * tp[sc] * q).sum() * hours + TIE_BREAK_PER_REPLICA * hours * n.sum())
    return used, spot, cost


def _price(
    problem: TimeProblem,
    p: int,
    beta: np.ndarray,
    gamma: np.ndarray,
    options: SolverOptions,
    table: PeriodTable | None = None,
):
    """The cheapest plan of period p alone when a GPU of each type in use costs beta (and a
    spot GPU gamma more): its usage, its true cost, and a proven bound on the priced optimum
    (by enumeration where the problem allows it, else a MIP)."""
    if table is not None and not gamma.any():
        plan = best_mix(table, problem, p, gpu_cost=beta)
        return None if plan is None else (plan.used, plan.spot, plan.cost, plan.value)
    types = problem.gpu_types
    hours = float(problem.hours[p])
    pr = problem.prices
    alone = replace(
        problem,
        demand=problem.demand[:, p : p + 1],
        hours=problem.hours[p : p + 1],
        prices=TierPrices(
            on_demand={g: float(beta[i]) / hours for i, g in enumerate(types)},
            spot={
                g: pr.spot[g] + float(gamma[i]) / hours for i, g in enumerate(types) if g in pr.spot
            },
        ),
    )
    model, lay = build_time_model(alone)
    found = solve(model, options)
    if found.values is None:
        return None
    used, spot, cost = _usage(alone, lay, found.values, 0)
    return used, spot, cost, found.bound


@dataclass(frozen=True)
class _Master:
    model: Model
    n_lambda: list[int]  # columns per period
    held_at: np.ndarray  # master column of each held column
    gpu_rows: np.ndarray  # types x periods
    inv_rows: dict[int, np.ndarray]  # type -> rows per period
    conv_rows: np.ndarray  # periods


def _master(problem: TimeProblem, pool: _Pool, held: _Held, lo: np.ndarray, hi: np.ndarray):
    """The restricted master LP: a convex combination of known plans per period, held GPUs
    within [lo, hi], on-demand GPUs for the rest."""
    types = problem.gpu_types
    n_t, n_p = len(types), len(problem.hours)
    inv_types = [i for i, g in enumerate(types) if g in problem.inventory]
    inv_at = np.full(n_t, -1)
    inv_at[inv_types] = np.arange(len(inv_types))
    gpu_rows = n_p + np.arange(n_t * n_p).reshape(n_t, n_p)
    inv_block = n_p + n_t * n_p + np.arange(len(inv_types) * n_p).reshape(-1, n_p)
    inv_rows = {t: inv_block[k] for k, t in enumerate(inv_types)}
    sizes = [len(c) for c in pool.cost]
    period = np.repeat(np.arange(n_p), sizes)
    used = np.array([u for us in pool.used for u in us]).reshape(-1, n_t)
    spot = np.array([u for us in pool.spot for u in us]).reshape(-1, n_t)
    n_l = len(period)
    parts = [(period, np.arange(n_l), np.ones(n_l))]  # convexity
    k, t = np.nonzero(used)
    parts.append((gpu_rows[t, period[k]], k, used[k, t]))
    k, t = np.nonzero(spot * (inv_at >= 0)[None, :])
    parts.append((inv_block[inv_at[t], period[k]], k, spot[k, t]))
    held_at = n_l + np.arange(len(held.columns))
    for j, t in enumerate(held.type_of):
        parts.append((gpu_rows[t], np.full(n_p, held_at[j]), -np.ones(n_p)))
        if t in inv_rows:
            parts.append((inv_rows[t], np.full(n_p, held_at[j]), np.ones(n_p)))
    rent = [i for i, g in enumerate(types) if g in problem.prices.on_demand]
    rent_at = held_at[-1] + 1 if len(held_at) else n_l
    o = rent_at + np.arange(len(rent) * n_p).reshape(-1, n_p)
    for r, i in enumerate(rent):
        parts.append((gpu_rows[i], o[r], -np.ones(n_p)))
        if i in inv_rows:
            parts.append((inv_rows[i], o[r], np.ones(n_p)))
    od = [problem.prices.on_demand[types[i]] * problem.hours for i in rent]
    cost = np.concatenate([np.concatenate(pool.cost), held.price, *od])
    n_rows = n_p + n_t * n_p + len(inv_types) * n_p
    inv_cap = [np.full(n_p, float(problem.inventory[types[i]])) for i in inv_types]
    model = Model(
        cost=cost,
        lower=np.concatenate([np.zeros(n_l), lo, np.zeros(o.size)]),
        upper=np.concatenate([np.full(n_l, np.inf), hi, np.full(o.size, np.inf)]),
        integer=np.zeros(len(cost), dtype=bool),
        rows=np.concatenate([q[0] for q in parts]).astype(int),
        cols=np.concatenate([q[1] for q in parts]).astype(int),
        values=np.concatenate([q[2] for q in parts]).astype(float),
        row_lower=np.concatenate([np.ones(n_p), np.full(n_rows - n_p, -np.inf)]),
        row_upper=np.concatenate([np.ones(n_p), np.zeros(n_t * n_p), *inv_cap]),
    )
    return _Master(model, sizes, held_at, gpu_rows, inv_rows, np.arange(n_p))


def _generate(
    problem: TimeProblem,
    pool: _Pool,
    held: _Held,
    lo: np.ndarray,
    hi: np.ndarray,
    options: SolverOptions,
    table: PeriodTable | None = None,
) -> tuple[float, np.ndarray | None]:
    """Column generation within a box of held counts: a proven lower bound on every plan in
    the box (inf when none) and the master's held counts at the last round."""
    n_t, n_p = len(problem.gpu_types), len(problem.hours)
    best = -math.inf
    for _ in range(MAX_ROUNDS):
        m = _master(problem, pool, held, lo, hi)
        out = solve(m.model, options)
        if out.status == "infeasible":
            return math.inf, None
        if out.values is None or out.duals is None:
            return best, None
        y = out.duals
        beta = np.maximum(-y[m.gpu_rows], 0.0)  # types x periods
        gamma = np.zeros((n_t, n_p))
        for i, r in m.inv_rows.items():
            gamma[i] = np.maximum(-y[r], 0.0)
        total, entered = 0.0, 0
        for p in range(n_p):
            key = (p, beta[:, p].tobytes(), gamma[:, p].tobytes())
            if key not in pool.priced:
                pool.priced[key] = _price(problem, p, beta[:, p], gamma[:, p], options, table)
            found = pool.priced[key]
            if found is None:
                return math.inf, None
            used, spot, cost, bound = found
            reduced_bound = bound - y[m.conv_rows[p]]
            total += min(reduced_bound, 0.0)
            priced = cost + beta[:, p] @ used + gamma[:, p] @ spot - y[m.conv_rows[p]]
            if priced < -REDUCED_COST_TOL * max(abs(out.objective), 1.0):
                pool.add(p, used, spot, cost)
                entered += 1
        best = max(best, out.objective + total)
        held_values = out.values[m.held_at]
        if not entered or out.objective - best <= 1e-6 * abs(out.objective):
            return max(best, -math.inf), held_values
    return best, held_values


def _seed(problem: TimeProblem, lay: TimeLayout, x: np.ndarray, pool: _Pool) -> None:
    """Every period's plan of a feasible point, as the master's first columns."""
    for p in range(len(problem.hours)):
        pool.add(p, *_usage(problem, lay, x, p))


@dataclass
class _Search:
    """Branch-and-price state: the incumbent, its cost, evaluated held vectors."""

    problem: TimeProblem
    model: Model
    lay: TimeLayout
    held: _Held
    block: np.ndarray
    options: SolverOptions
    best: np.ndarray | None = None
    best_cost: float = math.inf
    table: PeriodTable | None = None
    best_counts: np.ndarray | None = None
    seen: dict[tuple[int, ...], float] = field(default_factory=dict)
    leaves: list[float] = field(default_factory=list)  # bounds of boxes closed as points

    def evaluate(self, counts: np.ndarray) -> float:
        """Fix the held counts, solve every period on its own: a plan (kept if best) and the
        proven bound on any plan with these counts."""
        key = tuple(int(v) for v in counts)
        if key in self.seen:
            return self.seen[key]
        if self.table is not None:
            return self._enumerate(key, counts)
        fixed = np.zeros(self.model.n_cols)
        fixed[self.held.columns] = counts
        x, bound = solve_blocks(self.model, self.block, fixed, self.options)
        self.seen[key] = bound
        if x is not None and float(self.model.cost @ x) < self.best_cost:
            self.best, self.best_cost = x, float(self.model.cost @ x)
        return bound

    def _enumerate(self, key: tuple[int, ...], counts: np.ndarray) -> float:
        """`evaluate` by enumeration: the exact cost, the plan itself built only for a new
        incumbent (then by the per-period MIPs)."""
        assert self.table is not None
        n_t = len(self.problem.gpu_types)
        held = np.bincount(self.held.type_of, weights=counts, minlength=n_t)
        total = float(self.held.price @ counts)
        for p in range(len(self.problem.hours)):
            plan = best_mix(self.table, self.problem, p, held=held)
            if plan is None:
                self.seen[key] = math.inf
                return math.inf
            total += plan.value
        self.seen[key] = total
        if total < self.best_cost * (1 - 1e-12):
            self.best, self.best_cost = None, total
            self.best_counts = counts.copy()
        return total

    def plan(self) -> np.ndarray | None:
        """The incumbent as a point of the whole model (built once, at the end, by the
        per-period MIPs when it was found by enumeration)."""
        if self.best is None and self.best_counts is not None:
            fixed = np.zeros(self.model.n_cols)
            fixed[self.held.columns] = self.best_counts
            self.best, _ = solve_blocks(self.model, self.block, fixed, self.options)
        return self.best


def solve_by_prices(
    problem: TimeProblem,
    model: Model,
    lay: TimeLayout,
    start: np.ndarray,
    options: SolverOptions,
    table: PeriodTable | None = None,
) -> Outcome | None:
    """The plan over time by branch-and-price on the held counts, from a feasible start.
    Optimal when the incumbent is within the relative gap of the proven bound, else
    time_limit (with that bound) after MAX_NODES boxes; None if no plan could be rebuilt."""
    clock = time.perf_counter()
    held = _held(problem, lay)
    blocks = column_blocks(model, lay.period_columns())
    search = _Search(problem, model, lay, held, blocks, options, table=table)
    search.best, search.best_cost = start, float(model.cost @ start)
    n_p = len(problem.hours)
    pool = _Pool(len(problem.gpu_types), {}, [[] for _ in range(n_p)], [[] for _ in range(n_p)])
    pool.cost = [[] for _ in range(n_p)]
    _seed(problem, lay, start, pool)
    first = search.evaluate(np.rint(start[held.columns]))
    bound = first if not len(held.columns) else _branch(search, pool)
    x = search.plan()
    if x is None:
        return None
    cost = float(model.cost @ x)
    bound = min(bound, cost)
    status: Status = "optimal" if _done(cost, bound, options) else "time_limit"
    limit: Literal["", "nodes"] = "" if status == "optimal" else "nodes"
    return Outcome(status, time.perf_counter() - clock, x, cost, bound, limit)


def _branch(search: _Search, pool: _Pool) -> float:
    """Best-first search over boxes of held counts; the proven bound at the end."""
    model, columns, options = search.model, search.held.columns, search.options
    boxes: list[tuple[float, np.ndarray, np.ndarray]] = [
        (-math.inf, model.lower[columns].copy(), model.upper[columns].copy())
    ]
    for _ in range(MAX_NODES):
        if not boxes:
            break
        boxes.sort(key=lambda b: b[0])
        if _done(search.best_cost, boxes[0][0], options):
            break
        parent, lo, hi = boxes.pop(0)
        boxes.extend(_explore(search, pool, parent, lo, hi))
    return min([b[0] for b in boxes] + search.leaves + [search.best_cost])


def _done(cost: float, bound: float, options: SolverOptions) -> bool:
    return cost - bound <= options.relative_gap * max(abs(cost), 1e-12)


def _explore(search: _Search, pool: _Pool, parent: float, lo: np.ndarray, hi: np.ndarray):
    """Bound one box, try its rounded held counts, and split it (or close it)."""
    lb, values = _generate(search.problem, pool, search.held, lo, hi, search.options, search.table)
    lb = max(lb, parent)
    if values is None and lb < math.inf:  # the master failed (not infeasible): keep its bound
        search.leaves.append(lb)
    if values is None or _done(search.best_cost, lb, search.options):
        return []
    for counts in (np.rint(values), np.floor(values + 1e-9), np.ceil(values - 1e-9)):
        search.evaluate(np.clip(counts, lo, hi))
    if _done(search.best_cost, lb, search.options):
        return []
    frac = np.abs(values - np.rint(values))
    width = hi - lo
    j = int(np.argmax(np.where(width > 0, frac + 1e-3 * width, -1)))
    cut = math.floor(values[j] + 1e-9)
    if cut >= hi[j]:
        cut = int(hi[j]) - 1
    left_hi, right_lo = hi.copy(), lo.copy()
    left_hi[j], right_lo[j] = cut, cut + 1
    children = []
    for a, b in ((lo, left_hi), (right_lo, hi)):
        if (a == b).all():  # held counts fixed: every period solved on its own, closed
            search.leaves.append(max(search.evaluate(a), lb))
            continue
        children.append((lb, a, b))
    return children
