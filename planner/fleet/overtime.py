"""The fleet over time: GPUs held for the horizon (reserved, owned) and GPUs rented per
period (on-demand, spot), every period meeting its demand at its SLA.

minimise   sum_g (r_g P^res_g + w_g P^own_g) H + sum_{g,p} o_{g,p} P^od_g h_p
           + sum_{c,p} q_{c,p} t_c P^spot_g h_p
subject to sum_c (x + y)[c,w,p] = lambda[w,p]                       demand_{w}_{p}
           sum_w x[c,w,p] / mu[c,w] <= n[c,p]                        capacity_{c}_{p}
           sum_w y[c,w,p] / (mu[c,w] (1 - preempt)) <= q[c,p]        spot_capacity_{c}_{p}
           sum_{c on g} t_c n[c,p] <= r_g + w_g + o_{g,p}            gpus_{g}_{p}
           r_g + w_g + o_{g,p} + sum spot GPUs <= inventory_g        inventory_{g}_{p}
           sum_{c,w} y[c,w,p] <= spot_share sum_w lambda[w,p]        spot_share_{p}
           sum_c n[c,p] >= min_replicas                              redundancy_{p}

The model is built with numpy as one sparse matrix (`fleet.solver.Model`), every variable
bounded by what any optimal plan can need (replicas by the demand they could carry, held GPUs
by the busiest period's, all within the inventory), and starts from a feasible plan: each
class on its most cost-efficient candidate, the GPUs held that pay for themselves over the
horizon. The gap is measured against the solver's own bound. Branch-and-price on the held
GPUs (`fleet.overtime_prices`) answers first where periods can be priced cheaply; at platform
scale, the aggregated LP and its rounding (`fleet.overtime_round`, issue 16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from planner.arrays import distinct
from planner.errors import SolverError
from planner.fleet.decompose import column_blocks, solve_by_blocks
from planner.fleet.solver import Model, Outcome, SolverOptions, solve


@dataclass(frozen=True)
class TierPrices:
    """$/GPU-hour per GPU type and tier; a missing key means the tier is not available."""

    on_demand: dict[str, float]
    reserved: dict[str, float] = field(default_factory=dict)
    owned: dict[str, float] = field(default_factory=dict)
    spot: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class TimeProblem:
    """Candidates x classes x periods. Periods carry their hours; demand is per class and
    period; spot replicas lose `preemption_overhead` of their capacity and may serve at most
    `spot_max_share` of each period's requests."""

    gpu: tuple[str, ...]
    tp: tuple[int, ...]
    capacity: np.ndarray  # candidates x classes, requests/s per replica at planned load
    demand: np.ndarray  # classes x periods
    hours: np.ndarray  # periods
    prices: TierPrices
    spot_max_share: float = 0.0
    preemption_overhead: float = 0.0
    min_replicas: int = 0
    inventory: dict[str, int] = field(default_factory=dict)

    @property
    def gpu_types(self) -> list[str]:
        return sorted(set(self.gpu))

    def without(self, *tiers: str) -> TimeProblem:
        """The same problem with some tiers taken away (for the comparison plans)."""
        gone: dict[str, dict[str, float]] = {
            t: {} for t in ("reserved", "owned", "spot") if t in tiers
        }
        return replace(self, prices=replace(self.prices, **gone))


@dataclass(frozen=True)
class TimeSolution:
    """Held GPUs per type and tier, per-period replicas and GPUs, and the cost."""

    status: str
    reserved: dict[str, int]
    owned: dict[str, int]
    on_demand: np.ndarray  # gpu types x periods
    spot_gpus: np.ndarray  # gpu types x periods
    replicas: np.ndarray  # candidates x periods (stable)
    spot_replicas: np.ndarray  # candidates x periods
    cost_by_tier: dict[str, float]
    total_cost: float
    lower_bound: float
    solve_seconds: float
    gpu_types: tuple[str, ...]

    @property
    def gap(self) -> float:
        if self.status == "optimal" or not math.isfinite(self.total_cost):
            return 0.0
        return max(self.total_cost - self.lower_bound, 0.0) / max(self.total_cost, 1e-12)


TIE_BREAK_PER_REPLICA = 1e-7  # $ per replica-hour: among equal-cost plans, the fewest replicas


class _Columns:
    """Allocates blocks of columns (variables) of an array model."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.count = 0

    def add(self, shape: tuple[int, ...], cost, upper, integer: bool) -> np.ndarray:
        """A block of nonnegative columns; returns their indices in `shape`."""
        size = int(np.prod(shape))
        idx = np.arange(self.count, self.count + size).reshape(shape)
        self.count += size
        full = np.broadcast_to
        self.parts.append(
            (
                full(np.asarray(cost, float), shape).ravel(),
                full(np.asarray(upper, float), shape).ravel(),
                np.full(size, integer),
                idx.ravel(),
            )
        )
        return idx

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cost, upper bound and integrality of every column, in index order."""
        if not self.parts:
            return np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool)
        return tuple(np.concatenate([p[i] for p in self.parts]) for i in range(3))  # type: ignore[return-value]


class _Rows:
    """Collects rows (constraints) of an array model as nonzero entries and bounds."""

    def __init__(self) -> None:
        self.entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.lower: list[np.ndarray] = []
        self.upper: list[np.ndarray] = []
        self.count = 0

    def add(self, lower, upper, shape: tuple[int, ...]) -> np.ndarray:
        """A block of rows with these bounds; returns their indices in `shape`."""
        size = int(np.prod(shape))
        idx = np.arange(self.count, self.count + size).reshape(shape)
        self.count += size
        self.lower.append(np.broadcast_to(np.asarray(lower, float), shape).ravel())
        self.upper.append(np.broadcast_to(np.asarray(upper, float), shape).ravel())
        return idx

    def put(self, rows, cols, values) -> None:
        """Nonzeros A[rows, cols] = values (broadcast together)."""
        r, c, v = np.broadcast_arrays(np.asarray(rows), np.asarray(cols), np.asarray(values, float))
        self.entries.append((r.ravel(), c.ravel(), v.ravel()))


@dataclass(frozen=True)
class TimeLayout:
    """Where each decision of the MIP over time sits among the model's columns."""

    replicas: np.ndarray  # candidates x periods
    pairs: np.ndarray  # (candidate, class) pairs that can serve, k x 2
    load: np.ndarray  # pairs x periods
    spot_candidates: np.ndarray  # candidates that may run on spot
    spot_replicas: np.ndarray  # spot candidates x periods
    spot_pairs: np.ndarray  # positions in `pairs` of spot candidates' pairs
    spot_load: np.ndarray  # spot pairs x periods
    reserved: dict[str, int]  # gpu type -> column
    owned: dict[str, int]
    on_demand: dict[str, np.ndarray]  # gpu type -> column per period

    def period_columns(self) -> list[np.ndarray]:
        """The columns of every period (arrays of shape (..., periods)): all but the held
        GPUs, which alone couple the periods."""
        return [self.replicas, self.load, self.spot_replicas, self.spot_load,
                *self.on_demand.values()]  # fmt: skip


def _replica_bounds(
    problem: TimeProblem, share: float = 1.0, keep: float = 1.0, floor: int = 0
) -> np.ndarray:
    """Replicas of each candidate in each period that any optimal plan can use: enough to
    carry, alone, every class it can serve (at most `share` of each period's requests, at
    `keep` of its capacity), at least `floor`, within the inventory."""
    cap = problem.capacity
    per = np.where(cap > 0, 1.0 / np.where(cap > 0, cap, 1.0), 0.0)  # candidates x classes
    demand = np.minimum(problem.demand, share * problem.demand.sum(axis=0))
    bound = np.maximum(np.ceil(per @ demand / keep - 1e-9), floor)
    for c, g in enumerate(problem.gpu):
        if g in problem.inventory:
            bound[c] = np.minimum(bound[c], problem.inventory[g] // problem.tp[c])
    return bound


def build_time_model(problem: TimeProblem, integer: bool = True) -> tuple[Model, TimeLayout]:
    """The MIP over time as arrays, with its layout (which column is which decision)."""
    n_c, n_w = problem.capacity.shape
    n_p = len(problem.hours)
    cols, rows = _Columns(), _Rows()
    pr, hours = problem.prices, problem.hours
    types = problem.gpu_types
    gpu = np.array(problem.gpu)
    tp = np.array(problem.tp, float)
    keep = 1.0 - problem.preemption_overhead
    rep_ub = _replica_bounds(problem, floor=problem.min_replicas)
    gpu_ub = {g: (tp[gpu == g, None] * rep_ub[gpu == g]).sum(axis=0) for g in types}
    held_ub = {g: float(gpu_ub[g].max()) for g in types}
    for g, count in problem.inventory.items():
        if g in held_ub:
            held_ub[g] = min(held_ub[g], float(count))
    n = cols.add((n_c, n_p), TIE_BREAK_PER_REPLICA * hours, rep_ub, integer)
    pairs = np.argwhere(problem.capacity > 0)
    demand = problem.demand
    x = cols.add((len(pairs), n_p), 0.0, demand[pairs[:, 1]], False)
    spot_ok = problem.spot_max_share > 0 and bool(pr.spot)
    spot_c = np.array([c for c in range(n_c) if spot_ok and problem.gpu[c] in pr.spot], int)
    spot_ub = _replica_bounds(problem, problem.spot_max_share, keep)[spot_c]
    spot_cost = np.array([pr.spot[problem.gpu[c]] * problem.tp[c] for c in spot_c])
    q = cols.add((len(spot_c), n_p), spot_cost[:, None] * hours, spot_ub, integer)
    spot_pairs = np.flatnonzero(np.isin(pairs[:, 0], spot_c))
    share = problem.spot_max_share * demand.sum(axis=0)
    y_ub = np.minimum(demand[pairs[spot_pairs, 1]], share)
    y = cols.add((len(spot_pairs), n_p), 0.0, y_ub, False)
    horizon = float(hours.sum())
    reserved = {
        g: int(cols.add((1,), pr.reserved[g] * horizon, held_ub[g], integer)[0])
        for g in types
        if g in pr.reserved
    }
    owned = {
        g: int(cols.add((1,), pr.owned[g] * horizon, held_ub[g], integer)[0])
        for g in types
        if g in pr.owned
    }
    on_demand = {
        g: cols.add((n_p,), pr.on_demand[g] * hours, gpu_ub[g], False)
        for g in types
        if g in pr.on_demand
    }
    layout = TimeLayout(n, pairs, x, spot_c, q, spot_pairs, y, reserved, owned, on_demand)
    _demand_rows(rows, problem, layout)
    _gpu_rows(rows, problem, layout, keep)
    cost, upper, is_int = cols.arrays()
    r, c, v = (np.concatenate([e[i] for e in rows.entries]) for i in range(3))
    model = Model(
        cost=cost,
        lower=np.zeros(cols.count),
        upper=upper,
        integer=is_int,
        rows=r,
        cols=c,
        values=v,
        row_lower=np.concatenate(rows.lower),
        row_upper=np.concatenate(rows.upper),
    )
    return model, layout


def _demand_rows(rows: _Rows, problem: TimeProblem, lay: TimeLayout) -> None:
    """Demand met per class and period; load within capacity per candidate and period."""
    n_c, n_w = problem.capacity.shape
    n_p = len(problem.hours)
    demand = rows.add(problem.demand, problem.demand, (n_w, n_p))
    pairs = lay.pairs
    rows.put(demand[pairs[:, 1]], lay.load, 1.0)
    sp = pairs[lay.spot_pairs]
    rows.put(demand[sp[:, 1]], lay.spot_load, 1.0)
    capacity = rows.add(-np.inf, 0.0, (n_c, n_p))
    per = 1.0 / problem.capacity[pairs[:, 0], pairs[:, 1]]
    rows.put(capacity[pairs[:, 0]], lay.load, per[:, None])
    rows.put(capacity, lay.replicas, -1.0)
    if len(lay.spot_candidates):
        keep = 1.0 - problem.preemption_overhead
        spot_cap = rows.add(-np.inf, 0.0, (len(lay.spot_candidates), n_p))
        where = np.searchsorted(lay.spot_candidates, sp[:, 0])
        per_spot = 1.0 / (problem.capacity[sp[:, 0], sp[:, 1]] * keep)
        rows.put(spot_cap[where], lay.spot_load, per_spot[:, None])
        rows.put(spot_cap, lay.spot_replicas, -1.0)
        share = rows.add(-np.inf, problem.spot_max_share * problem.demand.sum(axis=0), (n_p,))
        rows.put(share[None, :], lay.spot_load, 1.0)
    _cover_rows(rows, problem, lay)
    if problem.min_replicas:
        redundancy = rows.add(problem.min_replicas, np.inf, (n_p,))
        rows.put(redundancy[None, :], lay.replicas, 1.0)


def _cover_rows(rows: _Rows, problem: TimeProblem, lay: TimeLayout) -> None:
    """Capacity aggregated per class and period: the replicas able to serve a class carry at
    least its demand. Implied by the rows above, but it states the covering in the integer
    replicas alone, which lets the solver round it (cuts) without going through the load."""
    pairs = lay.pairs
    cover = rows.add(problem.demand, np.inf, problem.demand.shape)
    cap = problem.capacity[pairs[:, 0], pairs[:, 1]]
    rows.put(cover[pairs[:, 1]], lay.replicas[pairs[:, 0]], cap[:, None])
    if len(lay.spot_candidates):
        keep = 1.0 - problem.preemption_overhead
        sp = pairs[lay.spot_pairs]
        where = np.searchsorted(lay.spot_candidates, sp[:, 0])
        spot_cap = problem.capacity[sp[:, 0], sp[:, 1]] * keep
        rows.put(cover[sp[:, 1]], lay.spot_replicas[where], spot_cap[:, None])


def _gpu_rows(rows: _Rows, problem: TimeProblem, lay: TimeLayout, keep: float) -> None:
    """GPUs in use within those held or rented; everything of a type within its inventory."""
    n_p = len(problem.hours)
    gpu = np.array(problem.gpu)
    tp = np.array(problem.tp, float)
    for g in problem.gpu_types:
        on_g = np.flatnonzero(gpu == g)
        used = rows.add(-np.inf, 0.0, (n_p,))
        rows.put(used[None, :], lay.replicas[on_g], tp[on_g, None])
        held = _held_columns(lay, g)
        for col in held:
            rows.put(used, col, -1.0)
        if g not in problem.inventory:
            continue
        limit = rows.add(-np.inf, float(problem.inventory[g]), (n_p,))
        for col in held:
            rows.put(limit, col, 1.0)
        spot_on_g: np.ndarray = (
            np.flatnonzero(gpu[lay.spot_candidates] == g)
            if len(lay.spot_candidates)
            else np.zeros(0, dtype=np.int64)
        )
        if len(spot_on_g):
            rows.put(
                limit[None, :],
                lay.spot_replicas[spot_on_g],
                tp[lay.spot_candidates[spot_on_g], None],
            )


def _held_columns(lay: TimeLayout, g: str) -> list:
    """The columns of GPUs of type g available in each period (reserved, owned, on-demand)."""
    out: list = []
    if g in lay.reserved:
        out.append(lay.reserved[g])
    if g in lay.owned:
        out.append(lay.owned[g])
    if g in lay.on_demand:
        out.append(lay.on_demand[g])
    return out


def _warm_start(
    problem: TimeProblem, model: Model, lay: TimeLayout, options: SolverOptions
) -> np.ndarray | None:
    """A feasible plan to start from, built on the peak plan: the busiest period solved on its
    own (on-demand and spot), its load per class scaled to every period's demand, replicas
    rounded up, and per GPU type the held GPUs that pay for themselves over the horizon. None
    when that breaks a limit (the solver then starts from scratch)."""
    peak = int(np.argmax(problem.demand.sum(axis=0)))
    alone = replace(
        problem.without("reserved", "owned"),
        demand=problem.demand[:, peak : peak + 1],
        hours=problem.hours[peak : peak + 1],
    )
    small, small_lay = build_time_model(alone)
    found = solve(small, replace(options, relative_gap=max(options.relative_gap, 1e-3)))
    if found.values is None:
        return None
    x = np.zeros(model.n_cols)
    ratio = problem.demand / np.maximum(problem.demand[:, peak : peak + 1], 1e-12)
    load = found.values[small_lay.load] * ratio[lay.pairs[:, 1]]  # pairs x periods
    spot = found.values[small_lay.spot_load] * ratio[lay.pairs[lay.spot_pairs, 1]]
    share = problem.spot_max_share * problem.demand.sum(axis=0)
    over = spot.sum(axis=0) > share * (1 - 1e-9)  # periods where spot would exceed its share
    load[np.ix_(lay.spot_pairs, np.flatnonzero(over))] += spot[:, over]
    spot[:, over] = 0.0
    x[lay.load], x[lay.spot_load] = load, spot
    cap = problem.capacity[lay.pairs[:, 0], lay.pairs[:, 1]]
    busy = np.zeros(lay.replicas.shape)
    np.add.at(busy, lay.pairs[:, 0], load / cap[:, None])
    replicas = np.ceil(busy - 1e-9)
    short = np.maximum(problem.min_replicas - replicas.sum(axis=0), 0)
    replicas[int(np.argmax(found.values[small_lay.replicas][:, 0])), :] += short
    x[lay.replicas] = replicas
    keep = 1.0 - problem.preemption_overhead
    spot_busy = np.zeros(lay.spot_replicas.shape)
    where = np.searchsorted(lay.spot_candidates, lay.pairs[lay.spot_pairs, 0])
    np.add.at(spot_busy, where, spot / (cap[lay.spot_pairs, None] * keep))
    x[lay.spot_replicas] = np.ceil(spot_busy - 1e-9)
    _hold(problem, lay, replicas, x)
    return x if _within(model, x) else None


NEIGHBOURHOOD_NODES = 500  # work limit of the rounding sub-problem (deterministic)


def _rounded_start(
    problem: TimeProblem,
    model: Model,
    lay: TimeLayout,
    options: SolverOptions,
    lp: Outcome | None = None,
) -> tuple[np.ndarray | None, float]:
    """A plan rounded from the LP relaxation, and the LP's optimum (a bound on any plan).

    Held GPUs are fixed at the LP's, rounded; every replica count may move within [floor,
    ceil + 1] of its LP value; that neighbourhood is solved under a node limit, and the held
    counts are then re-chosen for the replicas found."""
    lp = lp or solve(model.relaxed(), options)
    if lp.status != "optimal" or lp.values is None:
        return None, -math.inf
    v = lp.values
    lower, upper = model.lower.copy(), model.upper.copy()
    ints = np.flatnonzero(model.integer)
    lower[ints] = np.floor(v[ints] + 1e-9)
    upper[ints] = np.minimum(np.ceil(v[ints] - 1e-9) + 1, model.upper[ints])
    held = np.array([*lay.reserved.values(), *lay.owned.values()], dtype=int)
    lower[held] = upper[held] = np.clip(np.rint(v[held]), model.lower[held], model.upper[held])
    sub = replace(model, lower=lower, upper=upper, start=None)
    work = replace(options, relative_gap=options.relative_gap / 4, max_nodes=NEIGHBOURHOOD_NODES)
    found = solve(sub, work)
    if found.values is None:
        return None, lp.objective
    x = found.values.copy()
    _hold(problem, lay, np.rint(x[lay.replicas]), x)
    return (x if _within(model, x) else found.values), lp.objective


PERIOD_NODES = 1  # work limit of each period's MIP in the split plan (deterministic)
SPLIT_COLUMNS = 20_000  # below this the whole MIP closes fast (README, "Speed"): no split


def _period_start(
    problem: TimeProblem, model: Model, lay: TimeLayout, lp: Outcome, options: SolverOptions
) -> np.ndarray | None:
    """The held GPUs at the LP's, rounded, and every period then solved on its own
    (`fleet.decompose`): with the held counts fixed nothing couples two periods."""
    if model.n_cols < SPLIT_COLUMNS or lp.status != "optimal" or lp.values is None:
        return None
    held = np.array([*lay.reserved.values(), *lay.owned.values()], dtype=int)
    fixed = lp.values.copy()  # held GPUs rounded; replicas rounded up: each period's start
    fixed[held] = np.clip(np.rint(lp.values[held]), model.lower[held], model.upper[held])
    for idx in (lay.replicas, lay.spot_replicas):
        fixed[idx] = np.minimum(np.ceil(lp.values[idx] - 1e-9), model.upper[idx])
    gpu, tp = np.array(problem.gpu), np.array(problem.tp, float)
    for g, cols in lay.on_demand.items():
        used = (tp[gpu == g, None] * fixed[lay.replicas[gpu == g]]).sum(axis=0)
        mine = [c for c in (lay.reserved.get(g), lay.owned.get(g)) if c is not None]
        fixed[cols] = np.maximum(used - fixed[mine].sum(), 0.0)
    block = column_blocks(model, lay.period_columns())
    x = solve_by_blocks(model, block, fixed, replace(options, max_nodes=PERIOD_NODES))
    return x if x is not None and _within(model, x) else None


def _better(model: Model, *points: np.ndarray | None) -> np.ndarray | None:
    """The cheapest of some candidate points (None ignored)."""
    found = [p for p in points if p is not None]
    return min(found, key=lambda p: float(model.cost @ p), default=None)


def _hold(problem: TimeProblem, lay: TimeLayout, replicas: np.ndarray, x: np.ndarray) -> None:
    """Per GPU type, hold (on the cheaper of reserved and owned) the count k that minimises
    k x held price x horizon + on-demand for the rest; rent the remainder on demand."""
    pr, hours = problem.prices, problem.hours
    gpu, tp = np.array(problem.gpu), np.array(problem.tp, float)
    for g in problem.gpu_types:
        used = (tp[gpu == g, None] * replicas[gpu == g]).sum(axis=0)
        tiers = [(pr.reserved[g], lay.reserved[g])] if g in lay.reserved else []
        tiers += [(pr.owned[g], lay.owned[g])] if g in lay.owned else []
        od = pr.on_demand.get(g, np.inf)
        held = 0.0
        if tiers:
            price, col = min(tiers)
            levels = distinct(np.concatenate([[0.0], used]))
            if not np.isfinite(od):
                levels = levels[-1:]
            rent = np.maximum(used[None, :] - levels[:, None], 0.0) @ hours
            total = price * hours.sum() * levels + (od * rent if np.isfinite(od) else 0.0)
            held = float(levels[int(np.argmin(total))])
            x[col] = held
        if g in lay.on_demand:
            x[lay.on_demand[g]] = np.maximum(used - held, 0.0)


def _within(model: Model, x: np.ndarray, tol: float = 1e-6) -> bool:
    """Whether a point keeps every bound and row of the model."""
    if (x < model.lower - tol).any() or (x > model.upper + tol).any():
        return False
    activity = np.bincount(model.rows, weights=model.values * x[model.cols], minlength=model.n_rows)
    scale = 1.0 + np.abs(activity)
    ok_low = activity >= model.row_lower - tol * scale
    ok_high = activity <= model.row_upper + tol * scale
    return bool((ok_low & ok_high).all())


def solve_time(problem: TimeProblem, options: SolverOptions) -> TimeSolution:
    """Solve the fleet over time; the status says optimal, time_limit (with the gap to the
    solver's own bound), or infeasible."""
    model, lay = build_time_model(problem)
    at_scale = _by_rounding(problem, model, lay, options)  # issue 16: platform scale
    if at_scale is not None and at_scale.status == "optimal":
        return _time_solution(problem, lay, at_scale, at_scale.bound)
    lp = solve(model.relaxed(), options)
    priced = _by_prices(problem, model, lay, lp, options) or at_scale  # issues 13, 14, 16
    if priced is not None and priced.status == "optimal":
        return _time_solution(problem, lay, priced, priced.bound)
    by_period = _period_start(problem, model, lay, lp, options)  # issue 16
    start: np.ndarray | None
    if by_period is not None and _closed(model, by_period, lp.objective, options):
        start, lp_bound = by_period, lp.objective
    else:
        rounded, lp_bound = _rounded_start(problem, model, lay, options, lp)
        start = _better(model, _warm_start(problem, model, lay, options), rounded, by_period)
    if priced is not None:  # branch-and-price stopped at its node limit: its plan and bound
        start, lp_bound = _better(model, start, priced.values), max(lp_bound, priced.bound)
    if start is not None and _closed(model, start, lp_bound, options):
        outcome = Outcome("optimal", 0.0, start, float(model.cost @ start), lp_bound)
    else:
        outcome = solve(replace(model, start=start), options)
        if priced is not None:
            outcome = _with_bound(model, outcome, priced, options)
    types = tuple(problem.gpu_types)
    n_c, n_p = len(problem.gpu), len(problem.hours)
    if outcome.status == "none":
        raise SolverError(
            f"the {options.backend} solver stopped after {options.time_limit_s:g} s without "
            "a feasible plan over time; raise solver.time_limit_s"
        )
    if outcome.status == "infeasible" or outcome.values is None:
        zeros = np.zeros((len(types), n_p))
        no_replicas = np.zeros((n_c, n_p))
        return TimeSolution(
            "infeasible", {}, {}, zeros, zeros, no_replicas, no_replicas, {}, math.inf, math.inf,
            outcome.seconds, types,
        )  # fmt: skip
    return _time_solution(problem, lay, outcome, _bound(model, outcome, options))


def _by_prices(
    problem: TimeProblem, model: Model, lay: TimeLayout, lp: Outcome, options: SolverOptions
) -> Outcome | None:
    """The branch-and-price path (`fleet.overtime_prices`): every period priced and solved
    by enumeration where it can be (`fleet.overtime_enum`: one class, no inventory limit),
    else by its own MIP where the problem is small enough for that (several classes,
    inventory limits: at most PRICE_BY_MIP candidate-periods); else None."""
    from planner.fleet.overtime_enum import build_table
    from planner.fleet.overtime_prices import solve_by_prices

    if options.backend != "highs":
        return None
    table = build_table(problem)
    if table is None and len(problem.gpu) * len(problem.hours) > PRICE_BY_MIP:
        return None
    start = _warm_start(problem, model, lay, options)
    if start is None and lp.status == "optimal" and lp.values is not None:
        start, _ = _rounded_start(problem, model, lay, options, lp)
    if start is None:
        return None
    return solve_by_prices(problem, model, lay, start, options, table)


PRICE_BY_MIP = 64  # candidates x periods up to which periods are priced by their own MIPs
ROUND_COLUMNS = 20_000  # from this many columns the aggregated LP and rounding go first


def _by_rounding(
    problem: TimeProblem, model: Model, lay: TimeLayout, options: SolverOptions
) -> Outcome | None:
    """The platform-scale path (`fleet.overtime_round`): the aggregated LP's bound and a
    plan rounded from it, for models of ROUND_COLUMNS columns or more (HiGHS only)."""
    if options.backend != "highs" or model.n_cols < ROUND_COLUMNS:
        return None
    from planner.fleet.overtime_round import solve_by_rounding

    return solve_by_rounding(problem, model, lay, options)


def _with_bound(model: Model, outcome: Outcome, priced: Outcome, options: SolverOptions) -> Outcome:
    """The whole MIP's outcome with the better of its bound and branch-and-price's (and of
    their plans); optimal when they meet within the gap."""
    x = _better(model, outcome.values, priced.values)
    if x is None:
        return outcome
    cost, bound = float(model.cost @ x), max(outcome.bound, priced.bound)
    if not math.isfinite(bound):
        bound = priced.bound
    status = outcome.status
    if status in ("none", "time_limit"):
        status = "optimal" if _closed(model, x, bound, options) else "time_limit"
    limit = "" if status == "optimal" else (outcome.limit or "nodes")
    return replace(
        outcome, status=status, values=x, objective=cost, bound=min(bound, cost), limit=limit
    )


def _closed(model: Model, start: np.ndarray, bound: float, options: SolverOptions) -> bool:
    """Whether a plan is already within the relative gap of a proven bound."""
    cost = float(model.cost @ start)
    return cost - bound <= options.relative_gap * max(abs(cost), 1e-12)


def _bound(model: Model, outcome: Outcome, options: SolverOptions) -> float:
    """The solver's own bound; the LP relaxation's optimum where the backend gives none."""
    if math.isfinite(outcome.bound):
        return outcome.bound
    relaxed = solve(model.relaxed(), options)
    return relaxed.objective if relaxed.status == "optimal" else math.inf


def _time_solution(
    problem: TimeProblem, lay: TimeLayout, outcome: Outcome, bound: float
) -> TimeSolution:
    """Counts and costs by tier read from the solved columns."""
    x = outcome.values
    assert x is not None
    types = tuple(problem.gpu_types)
    n_c, n_p = len(problem.gpu), len(problem.hours)
    pr, hours = problem.prices, problem.hours
    count = np.rint(x).astype(np.int64)
    on_demand = np.zeros((len(types), n_p), dtype=np.int64)
    for i, g in enumerate(types):
        if g in lay.on_demand:
            on_demand[i] = count[lay.on_demand[g]]
    replicas = count[lay.replicas]
    spot = np.zeros((n_c, n_p), dtype=np.int64)
    spot[lay.spot_candidates] = count[lay.spot_replicas]
    tp, gpu = np.array(problem.tp), np.array(problem.gpu)
    spot_gpus = np.array([(tp[:, None] * spot)[gpu == g].sum(0) for g in types]).reshape(
        len(types), n_p
    )
    reserved = {g: int(count[c]) for g, c in lay.reserved.items()}
    owned = {g: int(count[c]) for g, c in lay.owned.items()}
    horizon = float(hours.sum())
    by_tier = {
        "reserved": sum(pr.reserved[g] * horizon * k for g, k in reserved.items()),
        "owned": sum(pr.owned[g] * horizon * k for g, k in owned.items()),
        "on_demand": float(
            sum(pr.on_demand[g] * (x[lay.on_demand[g]] @ hours) for g in lay.on_demand)
        ),
        "spot": float(
            sum(pr.spot.get(g, 0.0) * (spot_gpus[i] @ hours) for i, g in enumerate(types))
        ),
    }
    total = float(sum(by_tier.values()))
    bound = min(total, bound) if outcome.status == "optimal" else bound
    return TimeSolution(
        outcome.status, reserved, owned, on_demand, spot_gpus, replicas, spot, by_tier, total,
        bound, outcome.seconds, types,
    )  # fmt: skip
