"""The steady-state fleet mixed-integer program of MODEL.md.

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

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from planner.errors import SolverError
from planner.fleet import disagg
from planner.fleet.solver import Outcome, SolverOptions, solve, value

if TYPE_CHECKING:  # pulp is imported where a PuLP model is built: on HiGHS the plain fleet
    # MIP is built as arrays (`fleet/matrix.py`, issue 16)
    import pulp

TIE_BREAK_PER_GPU = 1e-6  # among equal-cost fleets prefer fewer GPUs, deterministically


@dataclass(frozen=True)
class FleetProblem:
    """Candidates (rows) x request classes (columns) with capacities and costs."""

    gpu: tuple[str, ...]
    tp: tuple[int, ...]  # GPUs per replica (tp x dp_attention x pp), what inventory counts
    cost_per_hour: np.ndarray
    capacity: np.ndarray  # requests/s one replica carries per class at planned load; 0 = no
    demand: np.ndarray
    inventory: dict[str, int] = field(default_factory=dict)
    max_gpus: int | None = None
    budget_per_hour: float | None = None
    min_replicas: int = 0
    # disaggregated prefill/decode (issue #11, fleet/disagg.py): each candidate's role (empty:
    # all aggregated), its part of the TTFT per class (ms) and each class's TTFT bound (inf: none)
    role: tuple[str, ...] = ()
    ttft_part_ms: np.ndarray | None = None
    ttft_sla_ms: np.ndarray | None = None
    # each pool's KV balance group: "" (scale-out, one fleet-wide balance) or the GPU type
    # whose nodes a scale-up (NVLink) pool shares with its partner pool (fleet/disagg.py)
    kv_group: tuple[str, ...] = ()
    # redundancy that holds and multi-model platforms (issue 12), see planner.fleet.redundancy:
    # survive losing any `redundancy` replicas; one vendor per service; each candidate's service
    redundancy: int = 0
    same_vendor: bool = False
    vendor: tuple[str, ...] = ()  # per candidate; () when same_vendor is off
    service: tuple[int, ...] = ()  # per candidate, the model it serves; () = one service
    demand_service: tuple[int, ...] = ()  # per demand column; () = one service
    min_replicas_per_service: int = 0
    # extra loss scenarios for k >= 2 ({line: replicas lost}); None: not generated yet
    loss_patterns: tuple[tuple[tuple[int, int], ...], ...] | None = None
    # the lines whose own failover (losing k of that line) the MIP writes; None: every line.
    # A line without replicas loses nothing, so only the lines a fleet uses bind
    # (`redundancy.solve_failover_as_needed` adds them as they are used, issue 16)
    failover_lines: tuple[int, ...] | None = None

    @property
    def n_candidates(self) -> int:
        return len(self.gpu)

    @property
    def names_candidates(self) -> bool:
        """Whether the MIP has rows that name particular candidates (n+k failover, one vendor,
        per-service floors: `fleet/redundancy.py`); the array model, the dominance pruning and
        the scaled break-even model all need a problem without them."""
        return bool(self.redundancy or self.same_vendor or self.min_replicas_per_service)

    def restricted(self, keep: np.ndarray) -> FleetProblem:
        """The same problem over a subset of candidates."""
        idx = np.flatnonzero(keep)
        return replace(
            self,
            gpu=tuple(self.gpu[i] for i in idx),
            tp=tuple(self.tp[i] for i in idx),
            cost_per_hour=self.cost_per_hour[idx],
            capacity=self.capacity[idx],
            role=tuple(self.role[i] for i in idx) if self.role else (),
            kv_group=tuple(self.kv_group[i] for i in idx) if self.kv_group else (),
            ttft_part_ms=None if self.ttft_part_ms is None else self.ttft_part_ms[idx],
            vendor=tuple(self.vendor[i] for i in idx) if self.vendor else (),
            service=tuple(self.service[i] for i in idx) if self.service else (),
            loss_patterns=None,  # they name candidates by position
            failover_lines=None,
        )

    def relaxed(self, *, budget: bool = False, gpus: bool = False) -> FleetProblem:
        """Drop the budget and/or the GPU-count limits (to explain infeasibility)."""
        return replace(
            self,
            inventory={} if gpus else self.inventory,
            max_gpus=None if gpus else self.max_gpus,
            budget_per_hour=None if budget else self.budget_per_hour,
        )

    def scaled(self, factor: float) -> FleetProblem:
        """The same problem at `factor` times the demand of every class."""
        return replace(self, demand=self.demand * factor)


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

    def widened(self, keep: np.ndarray) -> FleetSolution:
        """A solution of `problem.restricted(keep)` stated over the full candidate list."""
        replicas = np.zeros(keep.shape[0], dtype=np.int64)
        replicas[keep] = self.replicas
        load = np.zeros((keep.shape[0], self.load.shape[1]))
        load[keep] = self.load
        return replace(self, replicas=replicas, load=load)


def _replica_bound(problem: FleetProblem, c: int) -> int:
    """A safe upper bound on replicas of one candidate."""
    caps = problem.capacity[c]
    need = sum(d / m for d, m in zip(problem.demand, caps, strict=True) if m > 0)
    floor = problem.min_replicas + problem.min_replicas_per_service + problem.redundancy
    return int(math.ceil(need)) + floor + 1


def replica_bounds(problem: FleetProblem) -> np.ndarray:
    """`_replica_bound` of every candidate at once, each class's term added in class order as
    the loop adds them (the same float, so the same whole number)."""
    need = np.zeros(problem.n_candidates)
    with np.errstate(divide="ignore", invalid="ignore"):
        for w, demand in enumerate(problem.demand):
            caps = problem.capacity[:, w]
            need = np.where(caps > 0, need + demand / caps, need)
    floor = problem.min_replicas + problem.min_replicas_per_service + problem.redundancy
    return np.ceil(need) + floor + 1


def build_lp(
    problem: FleetProblem, integer: bool = True
) -> tuple[pulp.LpProblem, list, dict, disagg.PoolLoads]:
    """The PuLP model with named constraints: demand_<w>, capacity_<c>, inventory_<gpu>, and
    pools_w<w>_k<k> when prefill/decode pools are offered (fleet/disagg.py)."""
    import pulp

    lp = pulp.LpProblem("fleet", pulp.LpMinimize)
    cat = pulp.LpInteger if integer else pulp.LpContinuous
    # PuLP passes variables to the solver sorted by name, and equal-cost ties fall by that
    # order: the n_/x_ prefixes keep the column order the golden plans were solved in
    replicas = [
        pulp.LpVariable(f"n_replicas_c{c}", lowBound=0, upBound=_replica_bound(problem, c), cat=cat)
        for c in range(problem.n_candidates)
    ]
    load: dict[tuple[int, int], pulp.LpVariable] = {}
    aggregated = disagg.roles_of(problem) == "aggregated"
    for c, w in zip(*np.nonzero(problem.capacity > 0), strict=True):
        if aggregated[c]:
            load[int(c), int(w)] = pulp.LpVariable(f"x_load_c{c}_w{w}", lowBound=0)
    pools = disagg.pool_loads(problem)  # prefill/decode pools (issue #11); {} when none
    cost = pulp.lpSum(float(k) * v for k, v in zip(problem.cost_per_hour, replicas, strict=True))
    gpus = pulp.lpSum(t * v for t, v in zip(problem.tp, replicas, strict=True))
    lp += cost + TIE_BREAK_PER_GPU * gpus
    for w, demand in enumerate(problem.demand):
        served = [v for (c, ww), v in load.items() if ww == w]
        served += disagg.prefill_served(problem, pools, w)
        lp += pulp.lpSum(served) == float(demand), f"demand_{w}"
    # each candidate's loads gathered in one pass (issue #16: a scan of every load per
    # candidate made the build quadratic); the terms keep their order, so the model is the same
    used_by: dict[int, list] = {c: [] for c in range(problem.n_candidates)}
    for (c, w), v in load.items():
        used_by[c].append(v * (1.0 / float(problem.capacity[c, w])))
    for c, terms in disagg.pools_used(problem, pools).items():
        used_by[c] += terms
    for c in range(problem.n_candidates):
        lp += pulp.lpSum(used_by[c]) <= replicas[c], f"capacity_{c}"
    disagg.add_balance(lp, problem, pools)
    _add_fleet_limits(lp, problem, replicas, cost, gpus)
    if problem.names_candidates:
        from planner.fleet.redundancy import add_redundancy

        add_redundancy(lp, problem, replicas, integer)
    return lp, replicas, load, pools


def _add_fleet_limits(lp: pulp.LpProblem, problem: FleetProblem, replicas: list, cost, gpus):
    import pulp

    for gpu_id, avail in sorted(problem.inventory.items()):
        used = [
            t * v for g, t, v in zip(problem.gpu, problem.tp, replicas, strict=True) if g == gpu_id
        ]
        if used:
            lp += pulp.lpSum(used) <= avail, f"inventory_{gpu_id}"
    if problem.max_gpus is not None:
        lp += gpus <= problem.max_gpus, "max_gpus"
    if problem.min_replicas > 0:
        lp += pulp.lpSum(replicas) >= problem.min_replicas, "redundancy"
    if problem.budget_per_hour is not None:
        lp += cost <= problem.budget_per_hour, "budget"


def arrays_apply(problem: FleetProblem, options: SolverOptions) -> bool:
    """Whether the fleet MIP goes to HiGHS as arrays (`fleet/matrix.py`) rather than PuLP."""
    return options.backend == "highs" and not problem.names_candidates


def lp_lower_bound(problem: FleetProblem, options: SolverOptions) -> float:
    """The LP relaxation's optimum: a lower bound on any fleet's cost."""
    if arrays_apply(problem, options):
        from planner.fleet.matrix import build_model

        built = build_model(problem, integer=False)
        relaxed = solve(built.model, options)
        if relaxed.status != "optimal" or relaxed.values is None:
            return math.inf
        return float(built.model.cost @ relaxed.values)
    lp = build_lp(problem, integer=False)[0]
    if solve(lp, options).status != "optimal":
        return math.inf
    return value(lp.objective)


def solve_fleet(
    problem: FleetProblem,
    options: SolverOptions,
    lp_path: str | None = None,
    prune: bool = True,
) -> FleetSolution:
    """Solve the fleet MIP; the status says optimal, time_limit (with gap) or infeasible.
    With `prune` (not when writing `lp_path`), over the candidates no fleet of least cost and
    fewest GPUs needs (`dominance.undominated` with the tie-break): the same optimum."""
    if problem.redundancy >= 2 and problem.loss_patterns is None:
        from planner.fleet.redundancy import solve_spread

        return solve_spread(problem, options, lp_path)
    empty = np.zeros(problem.n_candidates, dtype=np.int64)
    no_load = np.zeros(problem.capacity.shape)
    infeasible = FleetSolution(
        "infeasible", empty, no_load, math.inf, math.inf, 0.0, options.backend
    )
    if problem.n_candidates == 0:
        return infeasible
    from planner.fleet import dominance  # it builds on this module

    keep = dominance.undominated(problem, tie_break=True) if prune and not lp_path else None
    if keep is not None and not keep.all():
        # the same optimum over fewer columns (`fleet/dominance.py`; mixed-traffic: 403 -> 68
        # candidates, its MIP 97 -> 26 ms)
        narrow = solve_fleet(problem.restricted(keep), options, prune=False)
        if narrow.status == "infeasible":
            return replace(infeasible, solve_seconds=narrow.solve_seconds)
        return narrow.widened(keep)
    if lp_path is None and arrays_apply(problem, options):
        return _solve_arrays(problem, options, infeasible)
    if lp_path is None and problem.redundancy and problem.failover_lines is None:
        from planner.fleet.redundancy import solve_failover_as_needed

        return solve_failover_as_needed(problem, options)
    lp, replicas, load, pools = build_lp(problem)
    if lp_path:
        lp.writeLP(lp_path)
    outcome = solve(lp, options)
    if outcome.status == "infeasible":
        return replace(infeasible, solve_seconds=outcome.seconds)
    if outcome.status == "none":
        raise no_fleet_found(options)
    chosen = np.array([int(round(value(v))) for v in replicas], dtype=np.int64)
    carried = no_load.copy()
    for (c, w), v in load.items():
        carried[c, w] = max(value(v), 0.0)
    carried += disagg.carried(pools, carried.shape)
    cost = float(np.dot(problem.cost_per_hour, chosen))
    bound = cost if outcome.status == "optimal" else lp_lower_bound(problem, options)
    return FleetSolution(
        outcome.status, chosen, carried, cost, bound, outcome.seconds, options.backend
    )


def _solve_arrays(
    problem: FleetProblem, options: SolverOptions, infeasible: FleetSolution
) -> FleetSolution:
    """`solve_fleet` on the model built as arrays (`fleet/matrix.py`): the same model, the same
    HiGHS options as PuLP's (its feasibility-jump heuristic on), so the same fleet."""
    from planner.fleet.matrix import build_model

    built = build_model(problem)
    # restarts off (issue 16): PuLP's HiGHS runs without them too, so both find one fleet
    outcome = solve(replace(built.model, feasibility_jump=True, restarts=False), options)
    values = solved_point(outcome, options)
    if values is None:
        return replace(infeasible, solve_seconds=outcome.seconds)
    chosen = built.replicas(values)
    carried = built.carried(values, problem.capacity.shape)
    cost = float(np.dot(problem.cost_per_hour, chosen))
    bound = cost if outcome.status == "optimal" else lp_lower_bound(problem, options)
    return FleetSolution(
        outcome.status, chosen, carried, cost, bound, outcome.seconds, options.backend
    )


def solved_point(outcome: Outcome, options: SolverOptions) -> np.ndarray | None:
    """An array fleet model's solved point, None where the MIP is infeasible; no point at all
    is an error."""
    if outcome.status == "infeasible":
        return None
    if outcome.status == "none" or outcome.values is None:
        raise no_fleet_found(options)
    return outcome.values


def no_fleet_found(options: SolverOptions) -> SolverError:
    """The error of a fleet MIP the solver's limit stopped before any feasible fleet."""
    return SolverError(
        f"the {options.backend} solver stopped after {options.time_limit_s:g} s without "
        "any feasible fleet; raise solver.time_limit_s or narrow the search"
    )
