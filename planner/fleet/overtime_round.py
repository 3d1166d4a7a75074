"""Issue 16: plans over time at platform scale (many classes, periods and GPU types), solved
by a relaxation with aggregated capacity and a rounding that keeps within its bound.

The LP relaxation of the time MIP needs no replica columns: a replica's capacity is shared
between classes linearly, so a (candidate, class) pair's replicas z = load / capacity carry
the whole relaxation (capacity left idle counted as served beyond the demand), and the
capacity and cover rows drop out (`aggregated_lp`). That LP is
a relaxation of the MIP (its bound is proven), has a fifth of the rows, and solves in seconds
where the whole relaxation took minutes. The plan: the held GPUs at the LP's, rounded; every
period's replicas floored and the shortfall covered one replica at a time, each the cheapest
per request at the LP's own prices (its demand duals), with GPUs held for the horizon free;
the held counts then re-chosen for the replicas found. Where that plan is short of the gap,
its worst periods are re-solved as small MIPs with the held GPUs fixed (`_repaired`), while
their excess over each period's proven floor could still close it. Nothing here stops by the
clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from planner.fleet.decompose import column_blocks, period_models
from planner.fleet.overtime import (
    TIE_BREAK_PER_REPLICA,
    TimeLayout,
    TimeProblem,
    _Columns,
    _hold,
    _replica_bounds,
    _Rows,
    _within,
)
from planner.fleet.solver import Model, Outcome, SolverOptions, solve

TOL = 1e-9


@dataclass(frozen=True)
class AggregatedLayout:
    """Where each decision of the aggregated LP sits among its columns and rows."""

    pairs: np.ndarray  # (candidate, class) pairs that can serve, k x 2
    stable: np.ndarray  # pairs x periods: replicas of the pair's candidate on the pair's class
    spot_pairs: np.ndarray  # positions in `pairs` of pairs whose candidate may run on spot
    spot: np.ndarray  # spot pairs x periods
    held: dict[str, list[int]]  # gpu type -> held columns (reserved, owned)
    on_demand: dict[str, np.ndarray]  # gpu type -> column per period
    demand_rows: np.ndarray  # classes x periods


def aggregated_lp(problem: TimeProblem) -> tuple[Model, AggregatedLayout]:
    """The relaxation over pairs (see the module's note): demand met per class and period,
    GPUs in use within those held or rented, the inventory, the spot share, the floor."""
    n_c, n_w = problem.capacity.shape
    hours, pr = problem.hours, problem.prices
    n_p = len(hours)
    keep = 1.0 - problem.preemption_overhead
    cols, rows = _Columns(), _Rows()
    pairs = np.argwhere(problem.capacity > 0)
    mu = problem.capacity[pairs[:, 0], pairs[:, 1]]
    need = problem.demand[pairs[:, 1]] / mu[:, None]  # replicas to carry the class alone
    most = np.maximum(need, problem.min_replicas)  # or to meet the floor
    z = cols.add((len(pairs), n_p), TIE_BREAK_PER_REPLICA * hours, most, False)
    spot_ok = problem.spot_max_share > 0 and bool(pr.spot)
    sp = np.flatnonzero([spot_ok and problem.gpu[c] in pr.spot for c in pairs[:, 0]])
    spot_price = np.array([pr.spot[problem.gpu[c]] * problem.tp[c] for c in pairs[sp, 0]])
    s = cols.add((len(sp), n_p), spot_price[:, None] * hours, need[sp] / keep, False)
    idle_c = np.flatnonzero(~(problem.capacity > 0).any(axis=1))  # serve no class: floor only
    idle = cols.add((len(idle_c), n_p), TIE_BREAK_PER_REPLICA * hours, problem.min_replicas, False)
    held, on_demand = _tier_columns(problem, cols)
    lay = AggregatedLayout(pairs, z, sp, s, held, on_demand, np.zeros(0, dtype=np.int64))
    demand = rows.add(problem.demand, np.inf, (n_w, n_p))  # more is capacity left idle
    rows.put(demand[pairs[:, 1]], z, mu[:, None])
    rows.put(demand[pairs[sp, 1]], s, mu[sp, None] * keep)
    if len(sp):
        share = rows.add(-np.inf, problem.spot_max_share * problem.demand.sum(axis=0), (n_p,))
        rows.put(share[None, :], s, mu[sp, None] * keep)
    if problem.min_replicas:
        floor = rows.add(problem.min_replicas, np.inf, (n_p,))
        rows.put(floor[None, :], z, 1.0)
        rows.put(floor[None, :], idle, 1.0)
    _gpu_rows(problem, lay, rows, idle_c, idle)
    cost, upper, is_int = cols.arrays()
    r, c, v = (np.concatenate([e[i] for e in rows.entries]) for i in range(3))
    model = Model(
        cost, np.zeros(cols.count), upper, is_int, r, c, v,
        np.concatenate(rows.lower), np.concatenate(rows.upper),
    )  # fmt: skip
    return model, AggregatedLayout(pairs, z, sp, s, held, on_demand, demand)


def _tier_columns(
    problem: TimeProblem, cols: _Columns
) -> tuple[dict[str, list[int]], dict[str, np.ndarray]]:
    """Held (reserved, owned) and on-demand GPU columns per type, bounded as the MIP's."""
    pr, hours = problem.prices, problem.hours
    rep_ub = _replica_bounds(problem, floor=problem.min_replicas)
    gpu, tp = np.array(problem.gpu), np.array(problem.tp, float)
    horizon = float(hours.sum())
    held: dict[str, list[int]] = {}
    on_demand: dict[str, np.ndarray] = {}
    for g in problem.gpu_types:
        gpu_ub = (tp[gpu == g, None] * rep_ub[gpu == g]).sum(axis=0)
        top = min(float(gpu_ub.max()), float(problem.inventory.get(g, math.inf)))
        held[g] = [
            int(cols.add((1,), prices[g] * horizon, top, False)[0])
            for prices in (pr.reserved, pr.owned)
            if g in prices
        ]
        if g in pr.on_demand:
            on_demand[g] = cols.add((len(hours),), pr.on_demand[g] * hours, gpu_ub, False)
    return held, on_demand


def _gpu_rows(
    problem: TimeProblem, lay: AggregatedLayout, rows: _Rows, idle_c: np.ndarray, idle: np.ndarray
) -> None:
    """Per GPU type and period: GPUs in use within those held or rented, and everything of
    the type (spot included) within its inventory."""
    n_p = len(problem.hours)
    gpu = np.array(problem.gpu)[lay.pairs[:, 0]]
    tp = np.array(problem.tp, float)[lay.pairs[:, 0]]
    idle_gpu = np.array(problem.gpu)[idle_c]
    idle_tp = np.array(problem.tp, float)[idle_c]
    for g in problem.gpu_types:
        on_g = np.flatnonzero(gpu == g)
        used = rows.add(-np.inf, 0.0, (n_p,))
        rows.put(used[None, :], lay.stable[on_g], tp[on_g, None])
        idle_on_g = np.flatnonzero(idle_gpu == g)
        rows.put(used[None, :], idle[idle_on_g], idle_tp[idle_on_g, None])
        available = [*lay.held[g], *([lay.on_demand[g]] if g in lay.on_demand else [])]
        for col in available:
            rows.put(used, col, -1.0)
        if g not in problem.inventory:
            continue
        limit = rows.add(-np.inf, float(problem.inventory[g]), (n_p,))
        for col in available:
            rows.put(limit, col, 1.0)
        spot_on_g = np.flatnonzero(gpu[lay.spot_pairs] == g)
        rows.put(limit[None, :], lay.spot[spot_on_g], tp[lay.spot_pairs[spot_on_g], None])


@dataclass(frozen=True)
class _Period:
    """What one period's rounding needs: capacities, GPUs per replica, prices. Rows
    0..n-1 of the candidate arrays are stable replicas, n..2n-1 the same candidates on spot
    (capacity less the pre-emption overhead; zero where spot is not offered)."""

    problem: TimeProblem
    pairs: np.ndarray
    kind: np.ndarray  # gpu type index of each candidate
    tp: np.ndarray
    held: np.ndarray  # GPUs held per type (free in every period)
    od: np.ndarray  # $/GPU-hour on demand per type (inf where not rentable)
    inventory: np.ndarray  # per type (inf where none)
    upper: np.ndarray  # 2 candidates x periods: replicas any optimal plan can use
    cap: np.ndarray  # 2 candidates x classes
    spot_cost: np.ndarray  # $/hour of each candidate's spot replica (inf where none)


def _period_data(problem: TimeProblem, pairs: np.ndarray, held: np.ndarray) -> _Period:
    """`_Period` of a problem, the held GPUs per type given."""
    types, pr = problem.gpu_types, problem.prices
    keep = 1.0 - problem.preemption_overhead
    spot_ok = problem.spot_max_share > 0 and bool(pr.spot)
    able = np.array([spot_ok and g in pr.spot for g in problem.gpu])
    tp = np.array(problem.tp, float)
    spot_price = np.array([pr.spot.get(g, 0.0) for g in problem.gpu]) * tp
    spot_ub = _replica_bounds(problem, problem.spot_max_share, keep) * able[:, None]
    return _Period(
        problem, pairs, np.array([types.index(g) for g in problem.gpu]), tp, held,
        np.array([pr.on_demand.get(g, math.inf) for g in types]),
        np.array([float(problem.inventory.get(g, math.inf)) for g in types]),
        np.concatenate([_replica_bounds(problem, floor=problem.min_replicas), spot_ub]),
        np.concatenate([problem.capacity, problem.capacity * keep * able[:, None]]),
        np.where(able, spot_price, math.inf),
    )  # fmt: skip


def solve_by_rounding(
    problem: TimeProblem, model: Model, lay: TimeLayout, options: SolverOptions
) -> Outcome | None:
    """The aggregated LP's bound and a plan rounded from it (see the module's note): optimal
    when within the relative gap of that bound, else time_limit with it; None when the LP
    fails or the rounding breaks a row."""
    agg, alay = aggregated_lp(problem)
    lp = solve(agg, options)
    if lp.status != "optimal" or lp.values is None or lp.duals is None:
        return None
    v, duals = lp.values, lp.duals
    held_at = {g: np.rint(v[cols]) for g, cols in alay.held.items()}
    best: np.ndarray | None = None
    for _ in range(ROUND_PASSES):
        plan = _round_all(problem, model, lay, alay, v, duals, held_at)
        if plan is None:
            break
        if best is None or float(model.cost @ plan) < float(model.cost @ best):
            best = plan
        cost = float(model.cost @ best)
        if cost - lp.objective <= options.relative_gap * max(abs(cost), 1e-12):
            break
        again = {g: plan[[c for c in (lay.reserved.get(g), lay.owned.get(g)) if c is not None]]
                 for g in problem.gpu_types}  # fmt: skip
        if all(np.array_equal(again[g], held_at[g]) for g in held_at):
            break
        held_at = again  # the held counts the rounding chose: round every period again
    if best is None:
        return None
    x = _repaired(problem, model, lay, best, lp.objective, options)
    cost = float(model.cost @ x)
    bound = min(lp.objective, cost)
    closed = cost - bound <= options.relative_gap * max(abs(cost), 1e-12)
    return Outcome(
        "optimal" if closed else "time_limit", lp.seconds, x, cost, bound,
        "" if closed else "nodes",
    )  # fmt: skip


ROUND_PASSES = 3  # roundings of every period, each at the held counts the last one chose
# work limit of each period's MIP in the repair's two passes (deterministic): one node for
# every period that could help, then a deeper search where the first left the most to gain
# (3 x 12 x 17, seed 1: 2.10% -> 1.11% in 64 period MIPs, -> 1.00% in 22 more)
REPAIR_NODES = (1, 100)
PERIOD_GAP = 1e-4  # each period's MIP is solved to this gap within its node limit


def _repaired(
    problem: TimeProblem,
    model: Model,
    lay: TimeLayout,
    x: np.ndarray,
    bound: float,
    options: SolverOptions,
) -> np.ndarray:
    """The rounded plan with its worst periods re-solved, held GPUs fixed (issue 16: the greedy
    cover packs held GPUs less tightly than a period's MIP; 3 x 24 x 17, seed 1, stopped at
    1.42% and went on to the whole MIP). A period costs at least its LP, and at least the
    bound of any MIP solved on it, so the plan can gain at most its excess over those floors:
    periods go most excess first while what is left to gain could still close the gap, and
    not at all when it could not."""

    def gap_left(point: np.ndarray) -> float:
        cost = float(model.cost @ point)
        return cost - bound - options.relative_gap * max(abs(cost), 1e-12)

    if gap_left(x) <= 0:
        return x
    parts = period_models(model, column_blocks(model, lay.period_columns()), x)
    if parts is None:
        return x
    floor = np.array([_lp_cost(part, options) for _, part in parts])
    if gap_left(x) > _excess(parts, x, floor).sum():
        return x  # every period at its floor would still not close the gap
    out = x.copy()
    for nodes in REPAIR_NODES:
        work = replace(options, max_nodes=nodes, relative_gap=min(options.relative_gap, PERIOD_GAP))
        excess = _excess(parts, out, floor)
        for b in np.argsort(-excess, kind="stable"):
            if gap_left(out) <= 0 or gap_left(out) > excess.sum():
                break  # closed, or the periods left cannot close it
            cols, part = parts[b]
            found = solve(replace(part, start=out[cols], sub_mips=False, restarts=False), work)
            if found.values is not None and part.cost @ found.values < part.cost @ out[cols]:
                out[cols] = found.values
            if math.isfinite(found.bound):
                floor[b] = max(floor[b], found.bound)
            excess[b] = 0.0
    return out if _within(model, out) else x


def _excess(parts: list[tuple[np.ndarray, Model]], x: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """Each period's cost in `x` above its proven floor (none below 0)."""
    cost = np.array([float(part.cost @ x[cols]) for cols, part in parts])
    return np.maximum(cost - floor, 0.0)


def _lp_cost(part: Model, options: SolverOptions) -> float:
    """A period's LP optimum (a bound on its MIP; -inf where the LP fails)."""
    lp = solve(part.relaxed(), options)
    return lp.objective if lp.status == "optimal" else -math.inf


def _round_all(
    problem: TimeProblem,
    model: Model,
    lay: TimeLayout,
    alay: AggregatedLayout,
    v: np.ndarray,
    duals: np.ndarray,
    held_at: dict[str, np.ndarray],
) -> np.ndarray | None:
    """Every period rounded with these held counts (per held column of each type), as a
    point of the whole model with its held counts re-chosen; None if a row breaks."""
    held = np.array([held_at[g].sum() for g in problem.gpu_types])
    period = _period_data(problem, alay.pairs, held)
    n_c, pairs = len(problem.gpu), alay.pairs
    x = np.zeros(model.n_cols)
    for p in range(len(problem.hours)):
        found = _round_period(period, p, v[alay.stable[:, p]], v[alay.spot[:, p]],
                              duals[alay.demand_rows[:, p]], alay.spot_pairs)  # fmt: skip
        if found is None:
            return None
        n, load = found
        x[lay.replicas[:, p]] = n[:n_c]
        x[lay.load[:, p]] = load[pairs[:, 0], pairs[:, 1]]
        if len(lay.spot_candidates):
            sp = pairs[lay.spot_pairs]
            x[lay.spot_replicas[:, p]] = n[n_c + lay.spot_candidates]
            x[lay.spot_load[:, p]] = load[n_c + sp[:, 0], sp[:, 1]]
    return _held_for(problem, model, lay, x, held_at)


def _held_for(
    problem: TimeProblem,
    model: Model,
    lay: TimeLayout,
    x: np.ndarray,
    held_lp: dict[str, np.ndarray],
) -> np.ndarray | None:
    """The cheaper feasible of two choices of held GPUs for the rounded replicas: the best
    count per type (`overtime._hold`), and the LP's held counts rounded, with on-demand GPUs
    for the rest."""
    replicas = x[lay.replicas]
    best = x.copy()
    _hold(problem, lay, replicas, best)
    by_lp = x.copy()
    gpu, tp = np.array(problem.gpu), np.array(problem.tp, float)
    for g in problem.gpu_types:
        mine = [c for c in (lay.reserved.get(g), lay.owned.get(g)) if c is not None]
        by_lp[mine] = held_lp[g]
        used = (tp[gpu == g, None] * replicas[gpu == g]).sum(axis=0)
        if g in lay.on_demand:
            by_lp[lay.on_demand[g]] = np.maximum(used - held_lp[g].sum(), 0.0)
    fits = [p for p in (best, by_lp) if _within(model, p)]
    return min(fits, key=lambda p: float(model.cost @ p), default=None)


def _round_period(
    period: _Period,
    p: int,
    z: np.ndarray,
    s: np.ndarray,
    price: np.ndarray,
    spot_pairs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """One period's integer replicas (stable, then spot: 2 candidates) and their loads
    (2 candidates x classes) from the LP's pair replicas z (stable) and s (spot): rounded up
    where the fraction reaches a threshold, else floored, the loads scaled to fit, the
    shortfall covered by `_cover`; the cheapest of a few thresholds and rules."""
    problem, pairs = period.problem, period.pairs
    n_c, n_w = problem.capacity.shape
    rows = np.concatenate([pairs[:, 0], n_c + pairs[spot_pairs, 0]])
    cls = np.concatenate([pairs[:, 1], pairs[spot_pairs, 1]])
    amount = np.concatenate([z, s])
    n_real = np.bincount(rows, weights=amount, minlength=2 * n_c)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for threshold, rule in VARIANTS:
        n = np.floor(n_real + 1e-6)
        up = (n_real - n >= threshold) & (np.arange(2 * n_c) < n_c)  # stable only
        up &= n + 1 <= period.upper[:, p] + TOL
        n = _within_inventory(period, np.where(up, np.ceil(n_real - 1e-6), n), n)
        scale = np.minimum(n / np.where(n_real > 0, n_real, 1.0), 1.0)
        load = np.zeros((2 * n_c, n_w))
        np.add.at(load, (rows, cls), period.cap[rows, cls] * amount * scale[rows])
        short = np.maximum(problem.demand[:, p] - load.sum(axis=0), 0.0)
        if not _cover(period, p, n, load, short, np.maximum(price, 0.0), rule):
            continue
        cost = _period_cost(period, p, n)
        if best is None or cost < best[0] - 1e-9 * abs(cost):
            best = (cost, n, load)
    if best is None:
        return None
    _, n, load = best
    total = load.sum(axis=0)  # the LP may leave capacity idle: each class served exactly
    load *= np.minimum(1.0, problem.demand[:, p] / np.where(total > 0, total, 1.0))
    return n, load


def _within_inventory(period: _Period, n: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """`n`, except back at `floor` on the GPU types whose inventory it breaks."""
    n_c, n_t = len(period.tp), len(period.held)
    used = np.bincount(period.kind, weights=period.tp * n[:n_c], minlength=n_t)
    spot = np.bincount(period.kind, weights=period.tp * n[n_c:], minlength=n_t)
    over = np.maximum(period.held, used) + spot > period.inventory + TOL
    back = np.concatenate([over[period.kind], over[period.kind]])
    return np.where(back, floor, n)


# (fraction from which a stable replica is rounded up, the cover's rule); packing the held
# GPUs anew as well was tried: 1.42% -> 1.34% on seed 1 of 3 x 24 x 17, for 10x the time
VARIANTS = ((1.0, "ratio"), (1.0, "margin"), (0.75, "ratio"), (0.5, "margin"))


def _period_cost(period: _Period, p: int, n: np.ndarray) -> float:
    """$ of a period's replicas: stable GPUs beyond those held (on demand), spot, and the
    tie-break."""
    n_c = len(period.tp)
    used = np.bincount(period.kind, weights=period.tp * n[:n_c], minlength=len(period.held))
    over = np.maximum(used - period.held, 0.0)
    od = np.where(np.isfinite(period.od), period.od, 0.0)
    spot = np.where(n[n_c:] > 0, period.spot_cost, 0.0) @ n[n_c:]
    hours = float(period.problem.hours[p])
    return float((over @ od + spot + TIE_BREAK_PER_REPLICA * n[:n_c].sum()) * hours)


def _cover(
    period: _Period,
    p: int,
    n: np.ndarray,
    load: np.ndarray,
    short: np.ndarray,
    price: np.ndarray,
    rule: str,
) -> bool:
    """Carry every class's shortfall and meet the replica floor, changing `n` and `load` in
    place: first on the spare capacity of the replicas there, then one new replica at a
    time, the one that costs least per request it takes on ("ratio") or least beyond what
    those requests are worth ("margin"), requests weighed by the LP's price of each class
    (held GPUs left idle cost nothing; spot within its share). False when none can take
    the rest."""
    problem = period.problem
    cap, demand, hours = period.cap, problem.demand[:, p], float(problem.hours[p])
    n_c = len(period.tp)
    price = price + 1e-9 * max(float(price.max()), 1.0)
    finite = period.od[np.isfinite(period.od)]
    eps = 1e-6 * hours * (float(finite.min()) if len(finite) else 1.0)
    per = np.where(cap > 0, 1.0 / np.where(cap > 0, cap, 1.0), 0.0)
    spare = np.maximum(n - (load * per).sum(axis=1), 0.0)
    share_room = problem.spot_max_share * demand.sum() - load[n_c:].sum()
    for c in np.flatnonzero(spare > TOL):
        room = max(share_room, 0.0) if c >= n_c else math.inf
        take_c = _fill(cap[c : c + 1], short, price, spare[c : c + 1])[0]
        take_c *= min(1.0, room / max(take_c.sum(), 1e-300))
        load[c] += take_c
        short = np.maximum(short - take_c, 0.0)
        share_room -= take_c.sum() if c >= n_c else 0.0
    for _ in range(MAX_STEPS):
        open_ = short > TOL * (1.0 + demand)
        if not open_.any() and n[:n_c].sum() >= problem.min_replicas:
            return True
        cost = _marginal(period, p, n) + eps * np.concatenate([period.tp, period.tp])
        take = _fill(cap, np.where(open_, short, 0.0), price, np.ones(len(n)))
        spot_load = np.maximum(take[n_c:].sum(axis=1), 1e-300)
        take[n_c:] *= np.minimum(1.0, max(share_room, 0.0) / spot_load)[:, None]
        if not open_.any():  # the floor: stable replicas only
            score = np.where(np.arange(len(n)) < n_c, cost, np.inf)
        else:
            value = take @ price
            gain = value > TOL * float(price.max())
            if rule == "ratio":
                score = np.where(gain, cost / np.where(gain, value, 1.0), np.inf)
            else:
                score = np.where(gain, cost - value, np.inf)
        j = int(np.argmin(score))
        if not np.isfinite(score[j]):
            return False
        n[j] += 1
        load[j] += take[j]
        short = np.maximum(short - take[j], 0.0)
        share_room -= take[j].sum() if j >= n_c else 0.0
    return False


MAX_STEPS = 10_000  # replicas one period's rounding may add (a count, never the clock)


def _marginal(period: _Period, p: int, n: np.ndarray) -> np.ndarray:
    """$ of one more replica of each (stable, spot) candidate in this period: stable GPUs
    beyond those held and idle at the on-demand price, spot at its price; inf where it
    breaks the inventory or the replica bound."""
    kind, tp, hours = period.kind, period.tp, float(period.problem.hours[p])
    n_c, n_t = len(tp), len(period.held)
    used = np.bincount(kind, weights=tp * n[:n_c], minlength=n_t)[kind]
    spot = np.bincount(kind, weights=tp * n[n_c:], minlength=n_t)[kind]
    held, limit = period.held[kind], period.inventory[kind] + TOL
    extra = np.maximum(tp - np.maximum(held - used, 0.0), 0.0)
    od = period.od[kind]
    stable = extra * np.where(np.isfinite(od), od, 0.0) * hours
    stable[(extra > 0) & ~np.isfinite(od)] = np.inf
    stable[np.maximum(held, used + tp) + spot > limit] = np.inf
    spot_cost = period.spot_cost * hours
    spot_cost[np.maximum(held, used) + spot + tp > limit] = np.inf
    cost = np.concatenate([stable, spot_cost])
    return np.where(n + 1 > period.upper[:, p] + TOL, np.inf, cost)


def _fill(cap: np.ndarray, short: np.ndarray, price: np.ndarray, room: np.ndarray) -> np.ndarray:
    """The load `room` replicas of each candidate would take on (candidates x classes):
    the classes it can serve, most valuable per unit of its capacity first, each up to its
    shortfall, until they are full (a fractional knapsack per row)."""
    ok = cap > 0
    need = np.where(ok, short[None, :] / np.where(ok, cap, 1.0), 0.0)
    density = np.where(need > 0, cap * price[None, :], -1.0)
    order = np.argsort(-density, axis=1, kind="stable")
    f = np.take_along_axis(need, order, axis=1)
    before = np.cumsum(f, axis=1) - f
    frac = np.clip(room[:, None] - before, 0.0, f)
    out = np.zeros_like(cap)
    np.put_along_axis(out, order, frac * np.take_along_axis(cap, order, axis=1), axis=1)
    return out
