"""Issue 16 / #14: every period of a one-class plan over time solved exactly by enumeration.

A period of one request class with no inventory limit is a choice of integer replica counts
(stable and spot) only: the load split follows. Every stable mix that no single replica can
leave (a bigger one is never cheaper, prices being non-negative) is listed once per problem,
with its GPUs per type and its capacity; the cheapest spot cover of any shortfall comes from
the spot mixes' Pareto front. A period's optimum at any GPU prices, or with any held GPUs, is
then an argmin over arrays: exact, and a thousand times cheaper than a MIP solve (HiGHS spends
about 10 ms on the root of even an 8-integer MIP).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from planner.fleet.overtime import TIE_BREAK_PER_REPLICA, TimeProblem, _replica_bounds

MAX_MIXES = 1_000_000  # listed mixes (stable or spot) beyond which the MIP path is used
TOL = 1e-9
# (capacity, replica count, smallest replica's capacity) of partial mixes -> dominated?
Spare = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class PeriodTable:
    """Stable mixes (GPUs per type, capacity, replicas) and the spot front (capacity, GPUs
    per type, $/hour), shared by every period of one problem."""

    used: np.ndarray  # mixes x types
    capacity: np.ndarray  # mixes
    count: np.ndarray  # mixes
    spot_capacity: np.ndarray  # front, increasing
    spot_cost: np.ndarray  # $/hour, cheapest cover of at least that capacity
    spot_used: np.ndarray  # front x types
    rentable: np.ndarray  # types with an on-demand price (bool)
    on_demand: np.ndarray  # $/GPU-hour per type (0 where not rentable)
    periods: tuple[PeriodRows, ...] = ()


@dataclass(frozen=True)
class PeriodRows:
    """The mixes that can be a period's optimum (they serve it, spot within its share, and
    none of their replicas is spare there), each with its spot cover and its $/hour besides
    the stable GPUs (spot, tie-break)."""

    used: np.ndarray  # rows x types
    spot: np.ndarray  # index into the spot front
    own_per_hour: np.ndarray


def _mixes(bounds: np.ndarray, cap: np.ndarray, spare: Spare) -> np.ndarray | None:
    """Integer vectors within 0..bounds that `spare` does not call dominated, built one
    candidate at a time (a dominated partial mix stays dominated however it is extended);
    None when the partial list outgrows MAX_MIXES.

    Issue 16: the break-even over time enumerates at every demand scale it tries, so this is
    kept to O(kept mixes) a column. Each partial mix carries its capacity, replica count and
    smallest replica. Adding k replicas of column c only adds capacity and replicas, so the
    k that keep a mix undominated are 0..k* - 1, found per mix by a bisection on k; the
    columns are then read back from each mix's parent chain once, at the end."""
    total, count, smallest = np.zeros(1), np.zeros(1, dtype=np.int64), np.full(1, np.inf)
    steps: list[tuple[np.ndarray, np.ndarray]] = []  # per column: parent index, count added
    for c, b in enumerate(bounds.astype(np.int64)):
        keep = _undominated_counts(total, count, smallest, cap[c], int(b), spare)
        if int(keep.sum()) > MAX_MIXES:
            return None
        parent = np.repeat(np.arange(len(total)), keep)
        k = np.arange(len(parent)) - np.repeat(np.cumsum(keep) - keep, keep)
        total, count = total[parent] + k * cap[c], count[parent] + k
        smallest = np.where(k > 0, np.minimum(smallest[parent], cap[c]), smallest[parent])
        steps.append((parent, k))
    mixes = np.zeros((len(total), len(steps)), dtype=np.int64)
    row = np.arange(len(total))
    for c in range(len(steps) - 1, -1, -1):
        parent, k = steps[c]
        mixes[:, c] = k[row]
        row = parent[row]
    return mixes


def _undominated_counts(
    total: np.ndarray, count: np.ndarray, smallest: np.ndarray, cap: float, bound: int,
    spare: Spare,
) -> np.ndarray:  # fmt: skip
    """How many counts 0, 1, ... of a column of capacity `cap` (at most `bound`) each partial
    mix takes before `spare` calls it dominated: the least dominated k >= 1, or bound + 1.
    k = 0 leaves an undominated mix as it is; from k = 1 on the smallest replica is fixed and
    capacity and count only grow, so `spare` is monotone in k and a bisection finds k*."""
    low = np.ones(len(total), dtype=np.int64)
    high = np.full(len(total), bound + 1, dtype=np.int64)
    with_one = np.minimum(smallest, cap)
    while (open_ := low < high).any():
        mid = (low + high) // 2
        dominated = spare(total + mid * cap, count + mid, with_one) & open_
        high = np.where(dominated, mid, high)
        low = np.where(dominated | ~open_, low, mid + 1)
    return high


def build_table(problem: TimeProblem) -> PeriodTable | None:
    """The enumeration of a one-class problem with no inventory limit; None otherwise or
    when it would be too big."""
    if problem.capacity.shape[1] != 1 or problem.inventory:
        return None
    types = problem.gpu_types
    kind = np.array([types.index(g) for g in problem.gpu])
    tp, cap = np.array(problem.tp, float), problem.capacity[:, 0]
    onehot = np.zeros((len(kind), len(types)))
    onehot[np.arange(len(kind)), kind] = tp
    peak = float(problem.demand.max())
    stable = _stable_mixes(problem, cap, peak)
    if stable is None:
        return None
    front = _spot_front(problem, cap, onehot, peak)
    if front is None:
        return None
    od = np.array([problem.prices.on_demand.get(g, 0.0) for g in types])
    rentable = np.array([g in problem.prices.on_demand for g in types])
    spot_capacity, spot_cost, spot_used = front
    table = PeriodTable(
        stable @ onehot, stable @ cap, stable.sum(1), spot_capacity, spot_cost, spot_used,
        rentable, od,
    )  # fmt: skip
    smallest = np.where(stable > 0, cap[None, :], np.inf).min(axis=1)
    rows = tuple(_period_rows(table, problem, p, smallest) for p in range(len(problem.hours)))
    return replace(table, periods=rows)


def _period_rows(
    table: PeriodTable, problem: TimeProblem, p: int, smallest: np.ndarray
) -> PeriodRows:
    """The mixes a period can choose from (see PeriodRows)."""
    demand = float(problem.demand[0, p])
    short = demand - table.capacity
    share = problem.spot_max_share * demand if len(table.spot_capacity) > 1 else 0.0
    j = _spot_for(table, np.maximum(short, 0.0))
    ok = (short <= share + TOL * (1.0 + demand)) & (j < len(table.spot_capacity))
    ok &= table.count >= problem.min_replicas
    spare = (table.capacity - smallest >= demand - TOL) & (table.count - 1 >= problem.min_replicas)
    keep = np.flatnonzero(ok & ~spare)
    jj = j[keep]
    own = table.spot_cost[jj] + TIE_BREAK_PER_REPLICA * table.count[keep]
    return PeriodRows(table.used[keep], jj, own)


def _stable_mixes(problem: TimeProblem, cap: np.ndarray, peak: float) -> np.ndarray | None:
    """Stable mixes from which no replica can be dropped while still covering the peak
    period alone with the replicas the floor asks for."""
    bounds = _replica_bounds(problem, floor=problem.min_replicas).max(axis=1)

    def spare(total: np.ndarray, count: np.ndarray, smallest: np.ndarray) -> np.ndarray:
        return (total - smallest >= peak - TOL) & (count - 1 >= problem.min_replicas)

    return _mixes(bounds, cap, spare)


def _spot_front(problem: TimeProblem, cap: np.ndarray, onehot: np.ndarray, peak: float):
    """Spot mixes able to carry up to the spot share of the peak, reduced to the cheapest
    cover of each capacity: (capacity increasing, $/hour, GPUs per type)."""
    pr = problem.prices
    spot_ok = problem.spot_max_share > 0 and bool(pr.spot)
    able = np.array([spot_ok and g in pr.spot for g in problem.gpu])
    keep = 1.0 - problem.preemption_overhead
    n_t = onehot.shape[1]
    if not able.any():
        return np.zeros(1), np.zeros(1), np.zeros((1, n_t))
    bounds = np.where(able, _replica_bounds(problem, problem.spot_max_share, keep).max(1), 0)
    share = problem.spot_max_share * peak

    def spare(total: np.ndarray, count: np.ndarray, smallest: np.ndarray) -> np.ndarray:
        return total - smallest >= share

    mixes = _mixes(bounds, cap * keep, spare)
    if mixes is None:
        return None
    price = np.array([pr.spot.get(g, 0.0) for g in problem.gpu]) * np.array(problem.tp)
    capacity, cost = mixes @ (cap * keep), mixes @ price
    order = np.lexsort((cost, -capacity))  # by capacity, largest first
    cheapest = np.minimum.accumulate(cost[order])  # the cheapest cover of >= that capacity
    best = order[np.r_[True, cheapest[1:] < cheapest[:-1]]]  # keep strict improvements only
    best = best[::-1]  # capacity increasing, cost increasing
    return capacity[best], cost[best], mixes[best] @ onehot


def _spot_for(table: PeriodTable, short: np.ndarray) -> np.ndarray:
    """Index into the spot front of the cheapest cover of each shortfall (len = none)."""
    return np.searchsorted(table.spot_capacity, short - TOL * (1.0 + np.abs(short)), side="left")


@dataclass(frozen=True)
class PeriodPlan:
    """One period's chosen mix: GPUs per type in use (stable, spot), its spot and tie-break
    cost, and the optimum of the priced objective."""

    used: np.ndarray
    spot: np.ndarray
    cost: float
    value: float


def best_mix(
    table: PeriodTable,
    problem: TimeProblem,
    p: int,
    gpu_cost: np.ndarray | None = None,
    held: np.ndarray | None = None,
) -> PeriodPlan | None:
    """The period's cheapest mix, with each GPU in use costing `gpu_cost` (per period, a
    column-generation price) or, with `held`, GPUs beyond those held rented on demand (and
    types that cannot be rented limited to those held). None when no mix serves it."""
    hours = float(problem.hours[p])
    rows = table.periods[p]
    if not len(rows.own_per_hour):
        return None
    if held is not None:
        over = rows.used - held[None, :]
        stable = np.maximum(over, 0.0) @ (table.on_demand * hours)
        barred = ((over > TOL) & ~table.rentable[None, :]).any(axis=1)
        stable = np.where(barred, math.inf, stable)
    else:
        assert gpu_cost is not None
        stable = rows.used @ gpu_cost
    own = rows.own_per_hour * hours
    total = stable + own
    i = int(np.argmin(total))
    if not math.isfinite(total[i]):
        return None
    used, spot = rows.used[i], table.spot_used[rows.spot[i]]
    return PeriodPlan(used, spot, float(own[i]), float(total[i]))
