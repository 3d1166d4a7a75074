"""Planning over time: demand by hour and month, reserved/owned/on-demand/spot tiers.

Pure functions of (scenario, catalog, single-period plan): hours are grouped into demand
levels ("slots"), each month of the horizon gets those slots scaled by growth, and the MIP of
`fleet.overtime.solve_time` chooses GPUs held for the whole horizon (reserved, owned) and GPUs
rented per period (on-demand, spot).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from planner.arrays import distinct
from planner.errors import InfeasibleError, InputError
from planner.fleet.overtime import TierPrices, TimeProblem, TimeSolution, solve_time
from planner.fleet.solver import SolverOptions
from planner.inputs.catalog import Catalog
from planner.perf.table import Table, values
from planner.planning.plan import (
    MonthPlan,
    PeriodPlan,
    Plan,
    PriceFact,
    Slots,
    TierGpus,
    TimePlan,
)
from planner.planning.time_pools import pool_units
from planner.schema.finance import DemandProfile, Finance, Owned
from planner.schema.hardware import Gpu
from planner.schema.scenario import Scenario
from planner.units import HOURS_PER_MONTH, SECONDS_PER_HOUR

MAX_CANDIDATES_PER_GPU = 1  # per GPU type, the most cost-efficient offered candidates


def hourly_profiles(profile: DemandProfile, class_names: list[str]) -> np.ndarray:
    """classes x hours of fractions of each class's peak (a CSV was read into `hourly`)."""
    base = np.asarray(profile.hourly, float)
    rows = []
    for name in class_names:
        own = profile.by_class.get(name)
        values = np.asarray(own, float) if own is not None else base
        rows.append(values)
    length = max(len(r) for r in rows)
    rows = [np.tile(r, length // len(r)) for r in rows]  # a 24-h profile repeats over a week
    return np.vstack(rows)


def group_slots(profiles: np.ndarray, weights: np.ndarray, n_slots: int) -> Slots:
    """Group hours whose demand looks alike into at most `n_slots` slots; a slot's level for
    each class is the highest hour in it, so every hour's demand is covered.

    Hours are points of per-class demand (req/s); k-means from quantile starts of the total
    groups them, so a class that peaks at night keeps its own slot when another peaks by
    day. Slots are ordered busiest first; empty groups are dropped."""
    points = (weights[:, None] * profiles).T  # hours x classes, req/s
    assign = _kmeans(points, min(n_slots, len(points)))
    groups = [np.flatnonzero(assign == k) for k in distinct(assign)]
    groups.sort(key=lambda g: (-points[g].sum(axis=1).max(), int(g[0])))
    level = np.stack([profiles[:, g].max(axis=1) for g in groups], axis=1)
    share = np.array([len(g) / len(points) for g in groups])
    hour_slot = np.empty(len(points), dtype=int)
    for s, g in enumerate(groups):
        hour_slot[g] = s
    return Slots(level, share, hour_slot)


def _kmeans(points: np.ndarray, k: int, iterations: int = 50) -> np.ndarray:
    """Deterministic k-means: starts at quantiles of the total demand."""
    order = np.argsort(-points.sum(axis=1), kind="stable")
    starts = [order[int(i)] for i in np.linspace(0, len(order) - 1, k).round()]
    centres = points[starts].astype(float)
    assign = np.zeros(len(points), dtype=int)
    for _ in range(iterations):
        dist = ((points[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        new = dist.argmin(axis=1)
        if (new == assign).all() and _ > 0:
            break
        assign = new
        for j in range(k):
            if (assign == j).any():
                centres[j] = points[assign == j].mean(axis=0)
    return assign


def owned_hourly_cost(gpu: Gpu, owned: Owned) -> float:
    """Amortised purchase + power (TDP x utilisation x PUE x electricity) + hosting, per hour."""
    if gpu.tdp_w is None:
        raise InputError(
            f"finance.owned.{gpu.id}: the catalog has no TDP for {gpu.id}, so its "
            "power cost cannot be computed"
        )
    capital = owned.purchase_usd_per_gpu / (owned.amortisation_months * HOURS_PER_MONTH)
    power = gpu.tdp_w / 1000 * owned.utilisation_of_tdp * owned.pue * owned.electricity_usd_per_kwh
    return capital + power + owned.hosting_usd_per_gpu_month / HOURS_PER_MONTH


def tier_prices(
    finance: Finance,
    gpus: dict[str, Gpu],
    on_demand: dict[str, float],
    od_sources: dict[str, tuple[str, bool]],
) -> tuple[TierPrices, list[PriceFact]]:
    """Every tier price per GPU: catalog facts where published, else scenario assumptions."""
    facts = [PriceFact(g, "on_demand", p, *od_sources[g]) for g, p in on_demand.items()]
    reserved, spot, owned = {}, {}, {}
    for g, gpu in gpus.items():
        if finance.reserved is not None:
            found = _reserved_price(finance, gpu, on_demand.get(g))
            if found:
                reserved[g] = found[0]
                fact = PriceFact(g, f"reserved_{finance.reserved.term}", *found)
                facts.append(replace(fact, term_factor=term_factor(finance)))
        if finance.spot is not None and finance.spot.enabled:
            found = _spot_price(finance, gpu)
            if found:
                spot[g] = found[0]
                facts.append(PriceFact(g, "spot", *found))
        if g in finance.owned:
            owned[g] = owned_hourly_cost(gpu, finance.owned[g])
            facts.append(
                PriceFact(
                    g,
                    "owned",
                    owned[g],
                    "scenario finance.owned (purchase, "
                    "amortisation, TDP x PUE x electricity, hosting)",
                    True,
                )
            )
    return TierPrices(on_demand, reserved, owned, spot), facts


TERM_MONTHS = {"1y": 12, "3y": 36}


def term_factor(finance: Finance) -> float:
    """How many times its horizon's hours a reserved GPU is paid for: a commitment runs its
    whole term, so a 3-month horizon under a 1-year term pays 12 months (x 4), and 18 months
    pay two terms (x 24/18). 1 when the horizon is a whole number of terms."""
    res = finance.reserved
    if res is None:
        return 1.0
    term, horizon = TERM_MONTHS[res.term], finance.horizon_months
    return math.ceil(horizon / term) * term / horizon


def _reserved_price(finance: Finance, gpu: Gpu, od: float | None):
    """The reserved $/GPU-hour over the horizon: the scenario's, the catalog's or on-demand
    less the discount, times `term_factor` where the horizon ends inside a term."""
    found = _reserved_list_price(finance, gpu, od)
    factor = term_factor(finance)
    if found is None or factor == 1.0:
        return found
    res = finance.reserved
    assert res is not None
    price, source, *rest = found
    paid = round(factor * finance.horizon_months)  # the months of whole terms
    note = (
        f"{source}; x {factor:.3g}: the {res.term} commitment is paid for {paid} months "
        f"over the {finance.horizon_months}-month horizon"
    )
    return (price * factor, note, *rest)


def _reserved_list_price(finance: Finance, gpu: Gpu, od: float | None):
    res = finance.reserved
    assert res is not None
    if gpu.id in res.usd_per_gpu_hour:
        return res.usd_per_gpu_hour[gpu.id], "scenario finance.reserved.usd_per_gpu_hour", True
    row = gpu.price(f"reserved_{res.term}")
    if row is not None:
        return row.usd_per_gpu_hour, f"{row.provider}: {row.source} ({row.as_of})", False
    if res.discount_vs_on_demand is not None and od is not None:
        return (
            od * (1 - res.discount_vs_on_demand),
            f"on-demand x (1 - {res.discount_vs_on_demand:g}) from "
            "finance.reserved.discount_vs_on_demand",
            True,
            res.discount_vs_on_demand,
        )
    return None


def _spot_price(finance: Finance, gpu: Gpu):
    sp = finance.spot
    assert sp is not None
    if gpu.id in sp.usd_per_gpu_hour:
        return sp.usd_per_gpu_hour[gpu.id], "scenario finance.spot.usd_per_gpu_hour", True
    row = gpu.price("spot")
    if row is not None:
        return row.usd_per_gpu_hour, f"{row.provider}: {row.source} ({row.as_of})", False
    return None


def _shortlist(plan: Plan) -> tuple[Table, np.ndarray]:
    """Per GPU type and request class, the most cost-efficient offered candidates (keeps the
    MIP small while every class keeps a way to be served on every GPU type that can): their
    keys, and their capacity per class. On the offered `Table` (issue 16: no pandas)."""
    keys, capacity = plan.offered.keys, plan.offered.capacity
    gpu = values(keys, "gpu").astype(str)
    alone = values(keys, "role").astype(str) == "aggregated"  # a pool serves no request
    cost = values(keys, "cost_per_hour_usd", float)
    keep: set[int] = set()
    for cap in capacity.T:
        able = np.flatnonzero((cap > 0) & alone)
        # by GPU id, then capacity per $ highest first; ties in offered order (a stable sort)
        ranked = able[np.lexsort((-(cap[able] / cost[able]), gpu[able]))]
        taken: dict[str, int] = {}
        for i in ranked.tolist():
            if taken.get(gpu[i], 0) < MAX_CANDIDATES_PER_GPU:
                taken[gpu[i]] = taken.get(gpu[i], 0) + 1
                keep.add(i)
    short = np.array(sorted(keep), dtype=np.int64)
    units, unit_cap = pool_units(plan)  # issue #11: prefill + decode pools as fixed units
    if units.empty:
        return keys.take(short), capacity[short]
    out = Table.concat([keys.take(short), units[keys.columns]])
    return out, np.vstack([capacity[short], unit_cap])


def plan_over_time(
    scenario: Scenario, catalog: Catalog, plan: Plan, comparisons: bool = True
) -> TimePlan:
    """Reserved/owned baseline plus per-period on-demand and spot, over the horizon; with
    `comparisons`, also what all on-demand and all reserved would cost."""
    fin = scenario.finance
    assert fin is not None
    names = [c.name for c in plan.classes]
    peaks = np.array([c.requests_per_second for c in plan.classes])
    profiles = hourly_profiles(fin.profile, names)
    slots = group_slots(profiles, peaks, fin.slots)
    blocks = month_blocks(fin.horizon_months, fin.months_per_period)
    growth = (1.0 + fin.growth_per_month) ** np.array([_busiest(b, fin) for b in blocks])
    demand = np.concatenate([peaks[:, None] * slots.level * g for g in growth], axis=1)
    hours = np.concatenate([slots.share * HOURS_PER_MONTH * len(b) for b in blocks])
    short, capacity = _shortlist(plan)
    short_gpu = [str(g) for g in values(short, "gpu")]
    short_tp = [int(t) for t in values(short, "gpus_per_replica")]  # GPUs per replica
    short_cost = values(short, "cost_per_hour_usd", float)
    gpus = {g: catalog.gpu(g) for g in sorted(set(short_gpu))}
    first = {g: short_gpu.index(g) for g in gpus}  # each type's first shortlisted row
    od = {g: float(short_cost[first[g]] / short_tp[first[g]]) for g in gpus}
    sources = _od_sources(plan, gpus)
    prices, facts = tier_prices(fin, gpus, od, sources)
    problem = TimeProblem(
        gpu=tuple(short_gpu),
        tp=tuple(short_tp),
        capacity=capacity,
        demand=demand,
        hours=hours,
        prices=prices,
        spot_max_share=fin.spot.max_share if fin.spot and fin.spot.enabled else 0.0,
        preemption_overhead=fin.spot.preemption_overhead if fin.spot else 0.0,
        min_replicas=scenario.constraints.min_replicas,
        inventory={g: n for g, n in scenario.hardware.available().items() if g in gpus},
    )
    options = SolverOptions.of(scenario.solver)
    solution = solve_time(problem, options)
    if solution.status == "infeasible":
        raise InfeasibleError(
            "plan over time: no fleet serves the busiest slot of every block of months"
            + (
                " within hardware.inventory; raise it or lower finance.growth_per_month"
                if problem.inventory
                else "; lower finance.growth_per_month or the horizon"
            )
        )
    on_demand_only, all_res_cost, all_res_gpus = None, None, {}
    if comparisons:
        on_demand_only = solve_time(problem.without("reserved", "owned", "spot"), options)
        all_res_cost, all_res_gpus = _all_reserved(problem, on_demand_only)
    monthly = _months(problem, solution, plan, fin, profiles.mean(axis=1))
    profile = (peaks @ profiles) / peaks.sum()
    return TimePlan(
        solution=solution,
        periods=_periods(problem, solution, names, fin),
        monthly=monthly,
        all_on_demand=on_demand_only,
        all_reserved_cost=all_res_cost,
        all_reserved_gpus=all_res_gpus,
        prices=tuple(facts),
        profile=profile,
        hourly_demand=profile * plan.total_requests_per_s,
        slots=slots,
        horizon_months=fin.horizon_months,
        growth_per_month=fin.growth_per_month,
        output_tokens=float(np.sum([m.output_tokens for m in monthly])),
        problem=problem,
        notes=_time_notes(prices, gpus),
        class_mean_level={n: float(m) for n, m in zip(names, profiles.mean(axis=1), strict=True)},
        shared_profile=not fin.profile.by_class,
        cached_input_share=_cached_share(plan, profiles.mean(axis=1)),
    )


def _cached_share(plan: Plan, mean_level: np.ndarray) -> float:
    """The share of the input tokens served that are prefix-cached: the same every month,
    since growth scales every class alike (what an API bills at its cached price)."""
    served = np.array([c.requests_per_second for c in plan.classes], float) * mean_level
    cached = np.array([c.prefix_cached_tokens for c in plan.classes], float) @ served
    total = np.array([c.input_tokens for c in plan.classes], float) @ served
    return float(cached / total) if total > 0 else 0.0


def month_blocks(horizon: int, per_period: int) -> list[list[int]]:
    """Months (0-based) grouped into planning blocks of `per_period` months."""
    months = list(range(horizon))
    return [months[i : i + per_period] for i in range(0, horizon, per_period)]


def _busiest(block: list[int], fin: Finance) -> int:
    """The month of a block with the most demand: the last if growing, the first if not."""
    return block[-1] if fin.growth_per_month >= 0 else block[0]


def _od_sources(plan: Plan, gpus: dict[str, Gpu]) -> dict[str, tuple[str, bool]]:
    """Where each GPU's on-demand price came from, as the plan priced it."""
    out = {}
    for g in gpus:
        price = plan.gpu_prices.get(g)
        if price is None:
            out[g] = ("catalog", False)
        else:
            source = f"$/GPU-hour ({price.provider}): {price.source} ({price.as_of})"
            out[g] = (source, price.assumption)
    return out


def _all_reserved(problem: TimeProblem, on_demand_only: TimeSolution):
    """Reserve, for the whole horizon, the GPUs the busiest period needs on demand."""
    if on_demand_only.status == "infeasible":
        return None, {}
    busiest = int(np.argmax(problem.demand.sum(axis=0)))
    peak = np.ceil(on_demand_only.on_demand[:, busiest] - 1e-9)
    gpus = {g: int(n) for g, n in zip(on_demand_only.gpu_types, peak, strict=True) if n}
    if any(g not in problem.prices.reserved for g in gpus):
        return None, gpus
    horizon = float(problem.hours.sum())
    return sum(problem.prices.reserved[g] * n * horizon for g, n in gpus.items()), gpus


def _periods(
    problem: TimeProblem, sol: TimeSolution, names: list[str], fin: Finance
) -> tuple[PeriodPlan, ...]:
    """One record per (block of months, demand slot): demand, GPUs per tier, in use, cost."""
    blocks = month_blocks(fin.horizon_months, fin.months_per_period)
    n_slots = len(problem.hours) // len(blocks)
    return tuple(
        PeriodPlan(
            months=tuple(m + 1 for m in blocks[p // n_slots]),
            slot=p % n_slots + 1,
            hours=float(hours),
            demand={n: float(problem.demand[w, p]) for w, n in enumerate(names)},
            gpus={g: _tier_gpus(problem, sol, i, p) for i, g in enumerate(sol.gpu_types)},
            cost_usd=float(_period_cost(problem, sol, p)),
            capacity_requests_per_s=_period_capacity(problem, sol, p),
        )
        for p, hours in enumerate(problem.hours)
    )


def _period_capacity(problem: TimeProblem, sol: TimeSolution, p: int) -> float:
    """Requests/s period p's replicas carry at planned utilisation, each candidate's
    capacity weighted by the period's class mix; spot replicas net of pre-emption."""
    demand = problem.demand[:, p]
    weights = demand / demand.sum() if demand.sum() > 0 else np.full(len(demand), 1 / len(demand))
    per_replica = problem.capacity @ weights
    keep = 1.0 - problem.preemption_overhead
    return float((sol.replicas[:, p] + keep * sol.spot_replicas[:, p]) @ per_replica)


def _tier_gpus(problem: TimeProblem, sol: TimeSolution, i: int, p: int) -> TierGpus:
    """GPUs of the solution's i-th type in period p, by tier, and those carrying replicas."""
    g = sol.gpu_types[i]
    used = sum(
        problem.tp[c] * sol.replicas[c, p] for c in range(len(problem.gpu)) if problem.gpu[c] == g
    )
    return TierGpus(
        reserved=sol.reserved.get(g, 0),
        owned=sol.owned.get(g, 0),
        on_demand=int(round(sol.on_demand[i, p])),
        spot=int(sol.spot_gpus[i, p]),
        in_use=int(used + sol.spot_gpus[i, p]),
    )


def _period_cost(problem: TimeProblem, sol: TimeSolution, p: int) -> float:
    pr, h = problem.prices, float(problem.hours[p])
    held = sum(pr.reserved[g] * n for g, n in sol.reserved.items())
    held += sum(pr.owned[g] * n for g, n in sol.owned.items())
    rented = sum(
        pr.on_demand[g] * sol.on_demand[i, p] + pr.spot.get(g, 0) * sol.spot_gpus[i, p]
        for i, g in enumerate(sol.gpu_types)
    )
    return (held + rented) * h


def _tier_cost(problem: TimeProblem, sol: TimeSolution, periods: list[int]) -> dict[str, float]:
    """Cost by tier (reserved, owned, on_demand, spot) over some periods."""
    pr = problem.prices
    hours = float(problem.hours[periods].sum())
    return {
        "reserved": sum(pr.reserved[g] * n for g, n in sol.reserved.items()) * hours,
        "owned": sum(pr.owned[g] * n for g, n in sol.owned.items()) * hours,
        "on_demand": float(
            sum(
                pr.on_demand[g] * sol.on_demand[i, p] * problem.hours[p]
                for i, g in enumerate(sol.gpu_types)
                for p in periods
            )
        ),
        "spot": float(
            sum(
                pr.spot.get(g, 0) * sol.spot_gpus[i, p] * problem.hours[p]
                for i, g in enumerate(sol.gpu_types)
                for p in periods
            )
        ),
    }


def _months(
    problem: TimeProblem, sol: TimeSolution, plan: Plan, fin: Finance, mean_level: np.ndarray
) -> tuple[MonthPlan, ...]:
    """One record per month: the volume served, cost by tier (a block's cost split evenly
    over its months), total and cost per 1K output tokens.

    The volume is each class's profile mean (`mean_level`, fraction of its peak) times the
    month's peak, not the slots' levels: a slot carries the highest hour of its group so
    that capacity covers every hour, which would overstate the traffic served and billed."""
    blocks = month_blocks(fin.horizon_months, fin.months_per_period)
    n_slots = len(problem.hours) // len(blocks)
    peaks = np.array([c.requests_per_second for c in plan.classes], float)
    in_len = np.array([c.input_tokens for c in plan.classes], float)
    out_len = np.array([c.output_tokens for c in plan.classes], float)
    seconds = HOURS_PER_MONTH * SECONDS_PER_HOUR
    out = []
    for b, block in enumerate(blocks):
        costs = _tier_cost(problem, sol, list(range(b * n_slots, (b + 1) * n_slots)))
        for m in block:
            served = peaks * mean_level * (1.0 + fin.growth_per_month) ** m  # req/s by class
            tokens = float(out_len @ served * seconds)
            n, total = len(block), sum(costs.values()) / len(block)
            out.append(
                MonthPlan(
                    month=m + 1,
                    peak_requests_per_s=float(peaks.sum() * (1.0 + fin.growth_per_month) ** m),
                    avg_requests_per_s=float(served.sum()),
                    input_tokens=float(in_len @ served * seconds),
                    output_tokens=tokens,
                    reserved_usd=costs["reserved"] / n,
                    owned_usd=costs["owned"] / n,
                    on_demand_usd=costs["on_demand"] / n,
                    spot_usd=costs["spot"] / n,
                    total_usd=total,
                    cost_per_1k_output_tokens_usd=total / tokens * 1e3,
                )
            )
    return tuple(out)


def _time_notes(prices: TierPrices, gpus: dict[str, Gpu]) -> tuple[str, ...]:
    notes = [
        f"the plan over time uses the {MAX_CANDIDATES_PER_GPU} most cost-efficient "
        "SLA-feasible deployment(s) per GPU type and request class, each block of months "
        "sized for its busiest month"
    ]
    no_res = [g for g in gpus if g not in prices.reserved]
    if no_res:
        notes.append(
            "no reserved price (catalog or scenario) for: "
            + ", ".join(no_res)
            + "; set finance.reserved.usd_per_gpu_hour or discount_vs_on_demand"
        )
    no_spot = [g for g in gpus if g not in prices.spot]
    if no_spot and prices.spot:
        notes.append("no spot price for: " + ", ".join(no_spot))
    return tuple(notes)
