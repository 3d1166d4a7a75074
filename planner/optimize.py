"""The only PuLP user: the fleet mixed-integer program of MODEL.md.

minimise    sum_c kappa[c] n[c]
subject to  sum_c x[c,w] = lambda[w]              demand_{w}
            sum_w x[c,w] / mu[c,w] <= n[c]        capacity_{c}  (mu already at rho)
            sum_{c on g} t[c] n[c] <= avail[g]    inventory_{g}
            sum_c t[c] n[c] <= max_gpus           max_gpus
            sum_c n[c] >= min_replicas            redundancy
            sum_c kappa[c] n[c] <= budget         budget
            n integer >= 0, x >= 0
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pulp

from planner.errors import SolverError

TIE_BREAK_PER_GPU = 1e-6  # among equal-cost fleets prefer fewer GPUs, deterministically


@dataclass(frozen=True)
class FleetProblem:
    """Candidates (rows) x request classes (columns) with capacities and costs."""

    gpu: tuple[str, ...]
    tp: tuple[int, ...]
    cost_per_hour: np.ndarray
    capacity: np.ndarray  # requests/s one replica carries per class at planned load; 0 = no
    demand: np.ndarray
    inventory: dict[str, int] = field(default_factory=dict)
    max_gpus: int | None = None
    budget_per_hour: float | None = None
    min_replicas: int = 0

    @property
    def n_candidates(self) -> int:
        return len(self.gpu)

    def restricted(self, keep: np.ndarray) -> FleetProblem:
        """The same problem over a subset of candidates."""
        idx = np.flatnonzero(keep)
        return FleetProblem(
            gpu=tuple(self.gpu[i] for i in idx),
            tp=tuple(self.tp[i] for i in idx),
            cost_per_hour=self.cost_per_hour[idx],
            capacity=self.capacity[idx],
            demand=self.demand,
            inventory=self.inventory,
            max_gpus=self.max_gpus,
            budget_per_hour=self.budget_per_hour,
            min_replicas=self.min_replicas,
        )

    def relaxed(self, *, budget: bool = False, gpus: bool = False) -> FleetProblem:
        """Drop the budget and/or the GPU-count limits (to explain infeasibility)."""
        return FleetProblem(
            gpu=self.gpu,
            tp=self.tp,
            cost_per_hour=self.cost_per_hour,
            capacity=self.capacity,
            demand=self.demand,
            inventory={} if gpus else self.inventory,
            max_gpus=None if gpus else self.max_gpus,
            budget_per_hour=None if budget else self.budget_per_hour,
            min_replicas=self.min_replicas,
        )


@dataclass(frozen=True)
class FleetSolution:
    """What the solver found, stated honestly."""

    status: str  # optimal | time_limit | infeasible
    replicas: np.ndarray
    load: np.ndarray
    cost_per_hour: float
    lower_bound: float
    solve_seconds: float
    backend: str

    @property
    def gap(self) -> float:
        """Relative gap between the plan and the LP lower bound (0 when proven optimal)."""
        if self.status == "optimal" or not math.isfinite(self.cost_per_hour):
            return 0.0
        return max(self.cost_per_hour - self.lower_bound, 0.0) / max(self.cost_per_hour, 1e-12)


def _replica_bound(problem: FleetProblem, c: int) -> int:
    """A safe upper bound on replicas of one candidate."""
    caps = problem.capacity[c]
    need = sum(d / m for d, m in zip(problem.demand, caps, strict=True) if m > 0)
    return int(math.ceil(need)) + problem.min_replicas + 1


def build_lp(problem: FleetProblem, integer: bool = True) -> tuple[pulp.LpProblem, list, dict]:
    """The PuLP model with named constraints: demand_<w>, capacity_<c>, inventory_<gpu>."""
    lp = pulp.LpProblem("fleet", pulp.LpMinimize)
    cat = pulp.LpInteger if integer else pulp.LpContinuous
    n = [
        pulp.LpVariable(f"n_{c}", lowBound=0, upBound=_replica_bound(problem, c), cat=cat)
        for c in range(problem.n_candidates)
    ]
    x: dict[tuple[int, int], pulp.LpVariable] = {}
    for c, w in zip(*np.nonzero(problem.capacity > 0), strict=True):
        x[int(c), int(w)] = pulp.LpVariable(f"x_{c}_{w}", lowBound=0)
    cost = pulp.lpSum(float(k) * v for k, v in zip(problem.cost_per_hour, n, strict=True))
    gpus = pulp.lpSum(t * v for t, v in zip(problem.tp, n, strict=True))
    lp += cost + TIE_BREAK_PER_GPU * gpus
    for w, demand in enumerate(problem.demand):
        lp += pulp.lpSum(v for (c, ww), v in x.items() if ww == w) == float(demand), f"demand_{w}"
    for c in range(problem.n_candidates):
        load = [v * (1.0 / float(problem.capacity[c, w])) for (cc, w), v in x.items() if cc == c]
        lp += pulp.lpSum(load) <= n[c], f"capacity_{c}"
    _add_fleet_limits(lp, problem, n, cost, gpus)
    return lp, n, x


def _add_fleet_limits(lp: pulp.LpProblem, problem: FleetProblem, n: list, cost, gpus) -> None:
    for gpu_id, avail in sorted(problem.inventory.items()):
        used = [t * v for g, t, v in zip(problem.gpu, problem.tp, n, strict=True) if g == gpu_id]
        if used:
            lp += pulp.lpSum(used) <= avail, f"inventory_{gpu_id}"
    if problem.max_gpus is not None:
        lp += gpus <= problem.max_gpus, "max_gpus"
    if problem.min_replicas > 0:
        lp += pulp.lpSum(n) >= problem.min_replicas, "redundancy"
    if problem.budget_per_hour is not None:
        lp += cost <= problem.budget_per_hour, "budget"


def _solver(backend: str, time_limit_s: float) -> pulp.LpSolver:
    if backend == "highs":
        try:
            return pulp.HiGHS(msg=False, timeLimit=time_limit_s)
        except Exception as exc:  # pragma: no cover - depends on the install
            raise SolverError(f"HiGHS is not available ({exc}); pip install highspy") from None
    return pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s)


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Silence solver banners written straight to file descriptor 1 (HiGHS prints one even
    with msg=False), so `--json` output stays one clean JSON object."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # captured stdout (tests): nothing to do
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def _run(lp: pulp.LpProblem, solver: pulp.LpSolver) -> None:
    with _quiet_stdout():
        lp.solve(solver)


def lp_lower_bound(problem: FleetProblem, backend: str = "cbc") -> float:
    """The LP relaxation's optimum: a lower bound on any fleet's cost."""
    lp, _, _ = build_lp(problem, integer=False)
    _run(lp, _solver(backend, 30.0))
    if pulp.LpStatus[lp.status] != "Optimal":
        return math.inf
    return float(pulp.value(lp.objective) or 0.0)


def solve_fleet(
    problem: FleetProblem,
    backend: str = "cbc",
    time_limit_s: float = 10.0,
    lp_path: str | None = None,
) -> FleetSolution:
    """Solve the fleet MIP; the status says optimal, time_limit (with gap) or infeasible."""
    empty = np.zeros(problem.n_candidates, dtype=np.int64)
    no_load = np.zeros(problem.capacity.shape)
    if problem.n_candidates == 0:
        return FleetSolution("infeasible", empty, no_load, math.inf, math.inf, 0.0, backend)
    lp, n, x = build_lp(problem)
    if lp_path:
        lp.writeLP(lp_path)
    start = time.perf_counter()
    try:
        _run(lp, _solver(backend, time_limit_s))
    except pulp.PulpSolverError as exc:
        raise SolverError(f"the {backend} solver failed: {exc}") from None
    elapsed = time.perf_counter() - start
    status = _status(lp)
    if status == "infeasible":
        return FleetSolution("infeasible", empty, no_load, math.inf, math.inf, elapsed, backend)
    if status == "none":
        raise SolverError(
            f"the {backend} solver stopped after {time_limit_s:g} s without any feasible "
            "fleet; raise solver.time_limit_s or narrow the search"
        )
    replicas = np.array([int(round(v.value() or 0)) for v in n], dtype=np.int64)
    load = no_load.copy()
    for (c, w), v in x.items():
        load[c, w] = max(v.value() or 0.0, 0.0)
    cost = float(np.dot(problem.cost_per_hour, replicas))
    bound = cost if status == "optimal" else lp_lower_bound(problem, backend)
    return FleetSolution(status, replicas, load, cost, bound, elapsed, backend)


def _status(lp: pulp.LpProblem) -> str:
    """Map PuLP's status and solution status onto optimal / time_limit / infeasible / none."""
    name = pulp.LpStatus[lp.status]
    if name in ("Infeasible", "Unbounded"):
        return "infeasible"
    sol = getattr(lp, "sol_status", None)
    if name == "Optimal" and sol in (None, pulp.LpSolutionOptimal):
        return "optimal"
    if sol == pulp.LpSolutionIntegerFeasible or name == "Optimal":
        return "time_limit"
    return "none"


# ---- the fleet over time: reserved/owned held for the horizon, on-demand and spot per period --
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
        p = self.prices
        prices = TierPrices(
            on_demand=p.on_demand,
            reserved={} if "reserved" in tiers else p.reserved,
            owned={} if "owned" in tiers else p.owned,
            spot={} if "spot" in tiers else p.spot,
        )
        return TimeProblem(
            self.gpu,
            self.tp,
            self.capacity,
            self.demand,
            self.hours,
            prices,
            self.spot_max_share,
            self.preemption_overhead,
            self.min_replicas,
            self.inventory,
        )


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


def _time_variables(tp_: TimeProblem, cat):
    n_c, n_w = tp_.capacity.shape
    periods = range(len(tp_.hours))
    v = {
        "n": {
            (c, p): pulp.LpVariable(f"n_{c}_{p}", 0, cat=cat) for c in range(n_c) for p in periods
        },
        "x": {
            (c, w, p): pulp.LpVariable(f"x_{c}_{w}_{p}", 0)
            for c in range(n_c)
            for w in range(n_w)
            for p in periods
            if tp_.capacity[c, w] > 0
        },
        "r": {
            g: pulp.LpVariable(f"reserved_{g}", 0, cat=cat)
            for g in tp_.prices.reserved
            if g in tp_.gpu_types
        },
        "w": {
            g: pulp.LpVariable(f"owned_{g}", 0, cat=cat)
            for g in tp_.prices.owned
            if g in tp_.gpu_types
        },
        # on-demand GPUs need not be integer variables: with integer replicas and integer
        # reserved/owned counts, the cheapest o is the integer shortfall anyway
        "o": {
            (g, p): pulp.LpVariable(f"ondemand_{g}_{p}", 0)
            for g in tp_.gpu_types
            if g in tp_.prices.on_demand
            for p in periods
        },
    }
    spot_ok = tp_.spot_max_share > 0 and tp_.prices.spot
    v["q"] = {
        (c, p): pulp.LpVariable(f"q_{c}_{p}", 0, cat=cat)
        for c in range(n_c)
        for p in periods
        if spot_ok and tp_.gpu[c] in tp_.prices.spot
    }
    v["y"] = {
        (c, w, p): pulp.LpVariable(f"y_{c}_{w}_{p}", 0) for (c, w, p) in v["x"] if (c, p) in v["q"]
    }
    return v


def build_time_lp(tp_: TimeProblem, integer: bool = True):
    """The time-expanded MIP with named constraints per period and GPU type."""
    cat = pulp.LpInteger if integer else pulp.LpContinuous
    v = _time_variables(tp_, cat)
    lp = pulp.LpProblem("fleet_over_time", pulp.LpMinimize)
    horizon = float(tp_.hours.sum())
    pr = tp_.prices
    cost = {
        "reserved": pulp.lpSum(pr.reserved[g] * horizon * x for g, x in v["r"].items()),
        "owned": pulp.lpSum(pr.owned[g] * horizon * x for g, x in v["w"].items()),
        "on_demand": pulp.lpSum(
            pr.on_demand[g] * float(tp_.hours[p]) * x for (g, p), x in v["o"].items()
        ),
        "spot": pulp.lpSum(
            pr.spot[tp_.gpu[c]] * tp_.tp[c] * float(tp_.hours[p]) * x
            for (c, p), x in v["q"].items()
        ),
    }
    lp += pulp.lpSum(cost.values())
    _time_constraints(lp, tp_, v)
    return lp, v, cost


def _group(items, key) -> dict:
    """Group (index tuple, variable) pairs by key(index): avoids quadratic scans."""
    out: dict = {}
    for idx, var in items:
        out.setdefault(key(idx), []).append((idx, var))
    return out


def _time_constraints(lp, tp_: TimeProblem, v) -> None:
    n_c, n_w = tp_.capacity.shape
    keep = 1.0 - tp_.preemption_overhead
    by_wp = _group(list(v["x"].items()) + list(v["y"].items()), lambda i: (i[1], i[2]))
    x_by_cp = _group(v["x"].items(), lambda i: (i[0], i[2]))
    y_by_cp = _group(v["y"].items(), lambda i: (i[0], i[2]))
    cap = tp_.capacity
    for p in range(len(tp_.hours)):
        for w in range(n_w):
            served = [var for _, var in by_wp.get((w, p), [])]
            lp += pulp.lpSum(served) == float(tp_.demand[w, p]), f"demand_{w}_{p}"
        for c in range(n_c):
            load = [var / float(cap[c, i[1]]) for i, var in x_by_cp.get((c, p), [])]
            lp += pulp.lpSum(load) <= v["n"][c, p], f"capacity_{c}_{p}"
            if (c, p) in v["q"]:
                spot = [var / (float(cap[c, i[1]]) * keep) for i, var in y_by_cp.get((c, p), [])]
                lp += pulp.lpSum(spot) <= v["q"][c, p], f"spot_capacity_{c}_{p}"
        _time_gpu_limits(lp, tp_, v, p)


def _time_gpu_limits(lp, tp_: TimeProblem, v, p: int) -> None:
    n_c = len(tp_.gpu)
    for g in tp_.gpu_types:
        used = pulp.lpSum(tp_.tp[c] * v["n"][c, p] for c in range(n_c) if tp_.gpu[c] == g)
        held = [v["r"].get(g), v["w"].get(g), v["o"].get((g, p))]
        lp += used <= pulp.lpSum(h for h in held if h is not None), f"gpus_{g}_{p}"
        if g in tp_.inventory:
            spot = [
                tp_.tp[c] * v["q"][c, p] for c in range(n_c) if tp_.gpu[c] == g and (c, p) in v["q"]
            ]
            lp += (
                pulp.lpSum([h for h in held if h is not None] + spot) <= tp_.inventory[g],
                (f"inventory_{g}_{p}"),
            )
    spot_load = [y for (c, w, pp), y in v["y"].items() if pp == p]
    if spot_load:
        lp += (
            pulp.lpSum(spot_load) <= tp_.spot_max_share * float(tp_.demand[:, p].sum()),
            (f"spot_share_{p}"),
        )
    if tp_.min_replicas:
        lp += pulp.lpSum(v["n"][c, p] for c in range(n_c)) >= tp_.min_replicas, (f"redundancy_{p}")


def solve_time(tp_: TimeProblem, backend: str = "cbc", time_limit_s: float = 10.0) -> TimeSolution:
    """Solve the fleet over time; the status says optimal, time_limit (with gap), infeasible."""
    lp, v, cost = build_time_lp(tp_)
    start = time.perf_counter()
    _run(lp, _solver(backend, time_limit_s))
    elapsed = time.perf_counter() - start
    status = _status(lp)
    types = tuple(tp_.gpu_types)
    n_c, n_p = len(tp_.gpu), len(tp_.hours)
    if status in ("infeasible", "none"):
        if status == "none":
            raise SolverError(
                f"the {backend} solver stopped after {time_limit_s:g} s without "
                "a feasible plan over time; raise solver.time_limit_s"
            )
        zeros = np.zeros((len(types), n_p))
        return TimeSolution(
            "infeasible",
            {},
            {},
            zeros,
            zeros,
            np.zeros((n_c, n_p)),
            np.zeros((n_c, n_p)),
            {},
            math.inf,
            math.inf,
            elapsed,
            types,
        )
    val = lambda var: int(round(var.value() or 0)) if var is not None else 0  # noqa: E731
    on_demand = np.array([[val(v["o"].get((g, p))) for p in range(n_p)] for g in types])
    replicas = np.array([[val(v["n"][c, p]) for p in range(n_p)] for c in range(n_c)])
    spot_rep = np.array([[val(v["q"].get((c, p))) for p in range(n_p)] for c in range(n_c)])
    spot_gpus = np.array(
        [
            [
                sum(tp_.tp[c] * spot_rep[c, p] for c in range(n_c) if tp_.gpu[c] == g)
                for p in range(n_p)
            ]
            for g in types
        ]
    )
    by_tier = {k: float(pulp.value(e) or 0.0) for k, e in cost.items()}
    total = sum(by_tier.values())
    bound = total if status == "optimal" else _time_lower_bound(tp_, backend)
    return TimeSolution(
        status,
        {g: val(x) for g, x in v["r"].items()},
        {g: val(x) for g, x in v["w"].items()},
        on_demand,
        spot_gpus,
        replicas,
        spot_rep,
        by_tier,
        total,
        bound,
        elapsed,
        types,
    )


def _time_lower_bound(tp_: TimeProblem, backend: str) -> float:
    lp, _, _ = build_time_lp(tp_, integer=False)
    _run(lp, _solver(backend, 30.0))
    return float(pulp.value(lp.objective) or 0.0) if _status(lp) == "optimal" else math.inf


def balance_load(
    problem: FleetProblem, replicas: np.ndarray, backend: str = "cbc"
) -> np.ndarray | None:
    """Split each class's demand over the chosen replicas so the busiest candidate is as idle
    as possible (what a load balancer aims at), with a fixed tie-break so the split is the same
    on every run. Returns candidates x classes, or None if the replicas cannot carry it."""
    lp = pulp.LpProblem("balance", pulp.LpMinimize)
    z = pulp.LpVariable("max_utilisation", 0)
    n_w = problem.capacity.shape[1]
    x = {
        (int(c), int(w)): pulp.LpVariable(f"x_{c}_{w}", 0)
        for c, w in zip(*np.nonzero(problem.capacity > 0), strict=True)
        if replicas[c] > 0
    }
    tie = pulp.lpSum(
        1e-6 * (c * n_w + w + 1) / max(float(problem.demand[w]), 1e-9) * v
        for (c, w), v in x.items()
    )
    lp += z + tie
    for w, demand in enumerate(problem.demand):
        lp += pulp.lpSum(v for (c, ww), v in x.items() if ww == w) == float(demand)
    for c in np.flatnonzero(replicas):
        load = [v / float(problem.capacity[c, w]) for (cc, w), v in x.items() if cc == c]
        lp += pulp.lpSum(load) <= z * float(replicas[c])
    _run(lp, _solver(backend, 10.0))
    if _status(lp) != "optimal":
        return None
    out = np.zeros(problem.capacity.shape)
    for (c, w), v in x.items():
        out[c, w] = max(v.value() or 0.0, 0.0)
    return out


def synthetic_problem(
    n_gpu_types: int, n_classes: int, per_type: int, seed: int = 0
) -> FleetProblem:
    """A random but realistic fleet problem for benchmarks and solver tests: costs grow with
    the GPUs per replica, capacities sit around cost-efficiency 1 with +-30% spread (no
    candidate is trivially best), 30% of (candidate, class) pairs fail their SLA, every
    other GPU type has an inventory limit, and at least two replicas are required."""
    rng = np.random.default_rng(seed)
    n = n_gpu_types * per_type
    gpu = tuple(f"g{i // per_type}" for i in range(n))
    tp = tuple(int(rng.choice([1, 2, 4, 8])) for _ in range(n))
    price = rng.uniform(1, 6, n_gpu_types)
    cost = np.array([price[i // per_type] * tp[i] for i in range(n)])
    cap = cost[:, None] * rng.uniform(0.7, 1.3, (n, n_classes))
    cap[rng.random((n, n_classes)) < 0.3] = 0.0
    cap[:, 0] = np.maximum(cap[:, 0], 0.1)
    demand = rng.uniform(5, 50, n_classes)
    inventory = {f"g{i}": int(rng.integers(8, 64)) for i in range(0, n_gpu_types, 2)}
    return FleetProblem(
        gpu=gpu,
        tp=tp,
        cost_per_hour=cost,
        capacity=cap,
        demand=demand,
        inventory=inventory,
        min_replicas=2,
    )
