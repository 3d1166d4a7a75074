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
