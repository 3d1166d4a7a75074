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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pulp

from planner.errors import SolverError
from planner.fleet.solver import SolverOptions, solve, value


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


@dataclass(frozen=True)
class TimeVariables:
    """The decision variables of the MIP over time, by what they decide."""

    replicas: dict[tuple[int, int], pulp.LpVariable]  # (candidate, period)
    load: dict[tuple[int, int, int], pulp.LpVariable]  # (candidate, class, period)
    reserved: dict[str, pulp.LpVariable]  # gpu type
    owned: dict[str, pulp.LpVariable]  # gpu type
    on_demand: dict[tuple[str, int], pulp.LpVariable]  # (gpu type, period)
    spot_replicas: dict[tuple[int, int], pulp.LpVariable]  # (candidate, period)
    spot_load: dict[tuple[int, int, int], pulp.LpVariable]  # (candidate, class, period)

    def held(self, gpu: str, period: int) -> list[pulp.LpVariable]:
        """The GPUs of one type available in one period from the stable tiers."""
        found = [self.reserved.get(gpu), self.owned.get(gpu), self.on_demand.get((gpu, period))]
        return [h for h in found if h is not None]


def _time_variables(problem: TimeProblem, cat: str) -> TimeVariables:
    n_c, n_w = problem.capacity.shape
    periods = range(len(problem.hours))
    types = problem.gpu_types
    spot_ok = problem.spot_max_share > 0 and problem.prices.spot
    load = {
        (c, w, p): pulp.LpVariable(f"x_{c}_{w}_{p}", 0)
        for c in range(n_c)
        for w in range(n_w)
        for p in periods
        if problem.capacity[c, w] > 0
    }
    spot_replicas = {
        (c, p): pulp.LpVariable(f"q_{c}_{p}", 0, cat=cat)
        for c in range(n_c)
        for p in periods
        if spot_ok and problem.gpu[c] in problem.prices.spot
    }
    return TimeVariables(
        replicas={
            (c, p): pulp.LpVariable(f"n_{c}_{p}", 0, cat=cat) for c in range(n_c) for p in periods
        },
        load=load,
        reserved={
            g: pulp.LpVariable(f"reserved_{g}", 0, cat=cat)
            for g in problem.prices.reserved
            if g in types
        },
        owned={
            g: pulp.LpVariable(f"owned_{g}", 0, cat=cat) for g in problem.prices.owned if g in types
        },
        # on-demand GPUs need not be integer variables: with integer replicas and integer
        # reserved/owned counts, the cheapest count is the integer shortfall anyway
        on_demand={
            (g, p): pulp.LpVariable(f"ondemand_{g}_{p}", 0)
            for g in types
            if g in problem.prices.on_demand
            for p in periods
        },
        spot_replicas=spot_replicas,
        spot_load={
            (c, w, p): pulp.LpVariable(f"y_{c}_{w}_{p}", 0)
            for (c, w, p) in load
            if (c, p) in spot_replicas
        },
    )


def build_time_lp(
    problem: TimeProblem, integer: bool = True
) -> tuple[pulp.LpProblem, TimeVariables, dict[str, Any]]:
    """The time-expanded MIP with named constraints per period and GPU type."""
    cat = pulp.LpInteger if integer else pulp.LpContinuous
    v = _time_variables(problem, cat)
    lp = pulp.LpProblem("fleet_over_time", pulp.LpMinimize)
    horizon = float(problem.hours.sum())
    pr = problem.prices
    cost = {
        "reserved": pulp.lpSum(pr.reserved[g] * horizon * x for g, x in v.reserved.items()),
        "owned": pulp.lpSum(pr.owned[g] * horizon * x for g, x in v.owned.items()),
        "on_demand": pulp.lpSum(
            pr.on_demand[g] * float(problem.hours[p]) * x for (g, p), x in v.on_demand.items()
        ),
        "spot": pulp.lpSum(
            pr.spot[problem.gpu[c]] * problem.tp[c] * float(problem.hours[p]) * x
            for (c, p), x in v.spot_replicas.items()
        ),
    }
    lp += pulp.lpSum(cost.values())
    _time_constraints(lp, problem, v)
    return lp, v, cost


def _group(items: Iterable[tuple[tuple, Any]], key: Callable[[tuple], Any]) -> dict:
    """Group (index tuple, variable) pairs by key(index): avoids quadratic scans."""
    out: dict = {}
    for idx, var in items:
        out.setdefault(key(idx), []).append((idx, var))
    return out


def _time_constraints(lp: pulp.LpProblem, problem: TimeProblem, v: TimeVariables) -> None:
    n_c, n_w = problem.capacity.shape
    keep = 1.0 - problem.preemption_overhead
    by_class_period = _group(
        list(v.load.items()) + list(v.spot_load.items()), lambda i: (i[1], i[2])
    )
    load_by_cp = _group(v.load.items(), lambda i: (i[0], i[2]))
    spot_by_cp = _group(v.spot_load.items(), lambda i: (i[0], i[2]))
    cap = problem.capacity
    for p in range(len(problem.hours)):
        for w in range(n_w):
            served = [var for _, var in by_class_period.get((w, p), [])]
            lp += pulp.lpSum(served) == float(problem.demand[w, p]), f"demand_{w}_{p}"
        for c in range(n_c):
            used = [var / float(cap[c, i[1]]) for i, var in load_by_cp.get((c, p), [])]
            lp += pulp.lpSum(used) <= v.replicas[c, p], f"capacity_{c}_{p}"
            if (c, p) in v.spot_replicas:
                spot = [var / (float(cap[c, i[1]]) * keep) for i, var in spot_by_cp.get((c, p), [])]
                lp += pulp.lpSum(spot) <= v.spot_replicas[c, p], f"spot_capacity_{c}_{p}"
        _time_gpu_limits(lp, problem, v, p)


def _time_gpu_limits(lp: pulp.LpProblem, problem: TimeProblem, v: TimeVariables, p: int) -> None:
    n_c = len(problem.gpu)
    for g in problem.gpu_types:
        on_g = [c for c in range(n_c) if problem.gpu[c] == g]
        used = pulp.lpSum(problem.tp[c] * v.replicas[c, p] for c in on_g)
        lp += used <= pulp.lpSum(v.held(g, p)), f"gpus_{g}_{p}"
        if g in problem.inventory:
            spot = [
                problem.tp[c] * v.spot_replicas[c, p] for c in on_g if (c, p) in v.spot_replicas
            ]
            lp += pulp.lpSum(v.held(g, p) + spot) <= problem.inventory[g], f"inventory_{g}_{p}"
    spot_load = [y for (_, _, pp), y in v.spot_load.items() if pp == p]
    if spot_load:
        share = problem.spot_max_share * float(problem.demand[:, p].sum())
        lp += pulp.lpSum(spot_load) <= share, f"spot_share_{p}"
    if problem.min_replicas:
        replicas = pulp.lpSum(v.replicas[c, p] for c in range(n_c))
        lp += replicas >= problem.min_replicas, f"redundancy_{p}"


def solve_time(problem: TimeProblem, options: SolverOptions) -> TimeSolution:
    """Solve the fleet over time; the status says optimal, time_limit (with gap), infeasible."""
    lp, v, cost = build_time_lp(problem)
    outcome = solve(lp, options)
    types = tuple(problem.gpu_types)
    n_c, n_p = len(problem.gpu), len(problem.hours)
    if outcome.status == "none":
        raise SolverError(
            f"the {options.backend} solver stopped after {options.time_limit_s:g} s without "
            "a feasible plan over time; raise solver.time_limit_s"
        )
    if outcome.status == "infeasible":
        zeros = np.zeros((len(types), n_p))
        no_replicas = np.zeros((n_c, n_p))
        return TimeSolution(
            "infeasible", {}, {}, zeros, zeros, no_replicas, no_replicas, {}, math.inf, math.inf,
            outcome.seconds, types,
        )  # fmt: skip

    def count(var: pulp.LpVariable | None) -> int:
        return int(round(value(var)))

    on_demand = np.array([[count(v.on_demand.get((g, p))) for p in range(n_p)] for g in types])
    replicas = np.array([[count(v.replicas[c, p]) for p in range(n_p)] for c in range(n_c)])
    spot = np.array([[count(v.spot_replicas.get((c, p))) for p in range(n_p)] for c in range(n_c)])
    tp = np.array(problem.tp)
    spot_gpus = np.array([(tp[:, None] * spot)[np.array(problem.gpu) == g].sum(0) for g in types])
    by_tier = {k: value(e) for k, e in cost.items()}
    total = sum(by_tier.values())
    bound = total if outcome.status == "optimal" else _time_lower_bound(problem, options)
    return TimeSolution(
        outcome.status,
        {g: count(x) for g, x in v.reserved.items()},
        {g: count(x) for g, x in v.owned.items()},
        on_demand,
        spot_gpus.reshape(len(types), n_p),
        replicas,
        spot,
        by_tier,
        total,
        bound,
        outcome.seconds,
        types,
    )


def _time_lower_bound(problem: TimeProblem, options: SolverOptions) -> float:
    lp, _, _ = build_time_lp(problem, integer=False)
    return value(lp.objective) if solve(lp, options).status == "optimal" else math.inf
