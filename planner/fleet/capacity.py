"""Two integer programs of issue #12 beside the steady fleet MIP: the most demand a fixed fleet
carries, and the cheapest fleet that finishes a batch job by its deadline.

Largest demand scale (capacity of a fleet), classes w in a fixed mix p[w]:

    maximise    s                                         (requests/s, all classes together)
    subject to  sum_c x[c,w] = p[w] s                     demand_{w}
                sum_w x[c,w] / mu[c,w] <= n[c]            capacity_{c}  (mu already at rho)
                sum_{c on g} t[c] n[c] <= fleet[g]        inventory_{g}
                sum_c t[c] n[c] <= max_gpus, sum_c n[c] >= min_replicas
                n integer >= 0, x >= 0, s >= 0

Every constraint is linear in s, so one MIP gives the exact optimum (to the solver's relative
gap); a second solve keeps s and uses the fewest GPUs, so idle GPUs are shown as idle.

Cheapest batch job of N requests by deadline D hours, replica-hours y[c] of candidate c
(mu[c] its saturated rate, requests/s; kappa[c] $/h per replica):

    minimise    sum_c kappa[c] y[c]
    subject to  sum_c 3600 mu[c] y[c] >= N                work
                y[c] <= D n[c]                            deadline_{c}
                sum_{c on g} t[c] n[c] <= avail[g], sum_c t[c] n[c] <= max_gpus
                n integer >= 0, y >= 0

Each replica is billed for the hours it runs (per-second billing, released when done).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from planner.fleet.solver import Model, SolverOptions, solve

TIE_BREAK_PER_GPU = 1e-6  # among equally cheap jobs prefer fewer GPUs, deterministically
KEEP_SCALE = 1.0 - 1e-9  # the second solve keeps the first's scale up to rounding


@dataclass(frozen=True)
class ScaleProblem:
    """Candidates (rows) x classes (columns) with capacities, the class mix, the fleet."""

    gpu: tuple[str, ...]
    tp: tuple[int, ...]
    capacity: np.ndarray  # requests/s one replica carries per class at planned load; 0 = no
    mix: np.ndarray  # share of each class in the demand, summing to 1
    fleet: dict[str, int]
    max_gpus: int | None = None
    min_replicas: int = 0

    @property
    def n_candidates(self) -> int:
        return len(self.gpu)


@dataclass(frozen=True)
class ScaleSolution:
    """The largest demand found, the solver's bound on it, and the fleet carrying it."""

    status: str  # optimal | time_limit | infeasible
    scale: float  # requests/s of all classes together
    bound: float  # no fleet configuration carries more (the solver's own bound)
    replicas: np.ndarray
    load: np.ndarray  # candidates x classes, requests/s
    solve_seconds: float


class _Rows:
    """A sparse constraint matrix built row by row (nonzeros and row bounds)."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.values: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, cols: list[int], values: list[float], lower: float, upper: float) -> None:
        i = len(self.lower)
        self.rows += [i] * len(cols)
        self.cols += cols
        self.values += values
        self.lower.append(lower)
        self.upper.append(upper)

    def model(self, cost: np.ndarray, lower: np.ndarray, upper: np.ndarray, integer: np.ndarray):
        return Model(
            cost=cost,
            lower=lower,
            upper=upper,
            integer=integer,
            rows=np.asarray(self.rows, dtype=np.int64),
            cols=np.asarray(self.cols, dtype=np.int64),
            values=np.asarray(self.values, dtype=float),
            row_lower=np.asarray(self.lower, dtype=float),
            row_upper=np.asarray(self.upper, dtype=float),
        )


def _gpu_limits(
    rows: _Rows,
    gpu: tuple[str, ...],
    tp: tuple[int, ...],
    first: int,
    avail: dict[str, int],
    max_gpus: int | None,
) -> None:
    """inventory_{g} per GPU type with a limit, and max_gpus, on replica columns from `first`."""
    for gpu_id, count in sorted(avail.items()):
        mine = [c for c, g in enumerate(gpu) if g == gpu_id]
        if mine:
            rows.add([first + c for c in mine], [float(tp[c]) for c in mine], -math.inf, count)
    if max_gpus is not None:
        rows.add([first + c for c in range(len(gpu))], [float(t) for t in tp], -math.inf, max_gpus)


def _replica_caps(gpu: tuple[str, ...], tp: tuple[int, ...], avail: dict[str, int]) -> np.ndarray:
    """The most replicas of each candidate its GPU type's count allows (inf: no limit)."""
    return np.array(
        [
            math.floor(avail[g] / t) if g in avail else math.inf
            for g, t in zip(gpu, tp, strict=True)
        ],
        dtype=float,
    )


def scale_model(problem: ScaleProblem) -> tuple[Model, list[tuple[int, int]]]:
    """The array model of the largest-scale MIP; columns: s, n[c], then x[c,w] per pair."""
    n_c = problem.n_candidates
    pairs = [(int(c), int(w)) for c, w in zip(*np.nonzero(problem.capacity > 0), strict=True)]
    x0 = 1 + n_c
    rows = _Rows()
    for w, share in enumerate(problem.mix):
        mine = [x0 + k for k, (_, ww) in enumerate(pairs) if ww == w]
        rows.add([0, *mine], [-float(share), *[1.0] * len(mine)], 0.0, 0.0)
    for c in range(n_c):
        mine = [k for k, (cc, _) in enumerate(pairs) if cc == c]
        inverse = [1.0 / float(problem.capacity[c, pairs[k][1]]) for k in mine]
        rows.add([1 + c, *[x0 + k for k in mine]], [-1.0, *inverse], -math.inf, 0.0)
    _gpu_limits(rows, problem.gpu, problem.tp, 1, problem.fleet, problem.max_gpus)
    if problem.min_replicas > 0:
        rows.add(list(range(1, 1 + n_c)), [1.0] * n_c, problem.min_replicas, math.inf)
    n_cols = x0 + len(pairs)
    cost = np.zeros(n_cols)
    cost[0] = -1.0
    upper = np.full(n_cols, math.inf)
    upper[1:x0] = _replica_caps(problem.gpu, problem.tp, problem.fleet)
    integer = np.zeros(n_cols, dtype=bool)
    integer[1:x0] = True
    return rows.model(cost, np.zeros(n_cols), upper, integer), pairs


def max_scale(problem: ScaleProblem, options: SolverOptions) -> ScaleSolution:
    """The largest demand at the class mix the fleet carries, then the fewest GPUs doing it."""
    none = ScaleSolution(
        "infeasible", 0.0, 0.0, np.zeros(problem.n_candidates, dtype=np.int64),
        np.zeros(problem.capacity.shape), 0.0,
    )  # fmt: skip
    if problem.n_candidates == 0:
        return none
    model, pairs = scale_model(problem)
    first = solve(model, options)
    if first.status in ("infeasible", "none") or first.values is None:
        return replace(none, solve_seconds=first.seconds)
    scale = float(first.values[0])
    bound = -float(first.bound) if math.isfinite(first.bound) else math.inf
    n_c = problem.n_candidates
    fewest = np.zeros(model.n_cols)
    fewest[1 : 1 + n_c] = problem.tp
    lower = model.lower.copy()
    lower[0] = scale * KEEP_SCALE
    second = solve(replace(model, cost=fewest, lower=lower, start=first.values), options)
    chosen = second.values if second.values is not None else first.values
    return _scale_solution(
        problem, pairs, chosen, first.status, bound, first.seconds + second.seconds
    )


def _scale_solution(
    problem: ScaleProblem,
    pairs: list[tuple[int, int]],
    values: np.ndarray,
    status: str,
    bound: float,
    seconds: float,
) -> ScaleSolution:
    n_c = problem.n_candidates
    replicas = np.rint(values[1 : 1 + n_c]).astype(np.int64)
    load = np.zeros(problem.capacity.shape)
    for k, (c, w) in enumerate(pairs):
        load[c, w] = max(float(values[1 + n_c + k]), 0.0)
    scale = float(load.sum())
    return ScaleSolution(status, scale, max(bound, scale), replicas, load, seconds)


# ---- the cheapest batch job ------------------------------------------------------------------
@dataclass(frozen=True)
class JobProblem:
    """Candidates with their saturated rate and cost, the job's size and deadline, limits."""

    gpu: tuple[str, ...]
    tp: tuple[int, ...]
    cost_per_hour: np.ndarray  # $/h per replica
    rate: np.ndarray  # requests/s one replica completes when never idle
    requests: float
    deadline_hours: float
    inventory: dict[str, int] = field(default_factory=dict)
    max_gpus: int | None = None
    # hours one request takes on a replica (TTFT + (O - 1) TPOT at its batch); None: 0. A
    # replica that runs at all runs at least that long, so y[c] >= one_request_hours[c] n[c]
    one_request_hours: np.ndarray | None = None

    @property
    def n_candidates(self) -> int:
        return len(self.gpu)


@dataclass(frozen=True)
class JobSolution:
    """Replicas and replica-hours per candidate, the job's cost and the solver's bound."""

    status: str
    replicas: np.ndarray
    replica_hours: np.ndarray
    cost_usd: float
    bound_usd: float
    solve_seconds: float


def job_model(problem: JobProblem) -> Model:
    """The array model of the batch-job MIP; columns: n[c], then y[c] (replica-hours), with
    one_request_hours[c] n[c] <= y[c] <= deadline n[c]."""
    n_c = problem.n_candidates
    rows = _Rows()
    per_hour = 3600.0 * problem.rate / problem.requests  # share of the job per replica-hour
    rows.add(list(range(n_c, 2 * n_c)), per_hour.tolist(), 1.0, math.inf)
    for c in range(n_c):
        rows.add([c, n_c + c], [-problem.deadline_hours, 1.0], -math.inf, 0.0)
    if problem.one_request_hours is not None:  # a replica runs at least one whole request
        for c in range(n_c):
            rows.add([c, n_c + c], [-float(problem.one_request_hours[c]), 1.0], 0.0, math.inf)
    _gpu_limits(rows, problem.gpu, problem.tp, 0, problem.inventory, problem.max_gpus)
    alone = np.ceil(1.0 / (per_hour * problem.deadline_hours))  # enough to finish by itself
    upper = np.concatenate(
        [np.minimum(alone, _replica_caps(problem.gpu, problem.tp, problem.inventory)),
         np.full(n_c, math.inf)]
    )  # fmt: skip
    cost = np.concatenate(
        [TIE_BREAK_PER_GPU * np.asarray(problem.tp, float), problem.cost_per_hour]
    )
    integer = np.concatenate([np.ones(n_c, dtype=bool), np.zeros(n_c, dtype=bool)])
    return rows.model(cost, np.zeros(2 * n_c), upper, integer)


def cheapest_job(problem: JobProblem, options: SolverOptions) -> JobSolution:
    """The cheapest replicas and hours that complete the job by its deadline."""
    n_c = problem.n_candidates
    none = JobSolution(
        "infeasible", np.zeros(n_c, dtype=np.int64), np.zeros(n_c), math.inf, math.inf, 0.0
    )
    if n_c == 0:
        return none
    outcome = solve(job_model(problem), options)
    if outcome.status in ("infeasible", "none") or outcome.values is None:
        return replace(none, solve_seconds=outcome.seconds)
    replicas = np.rint(outcome.values[:n_c]).astype(np.int64)
    hours = np.maximum(outcome.values[n_c:], 0.0)
    cost = float(problem.cost_per_hour @ hours)
    return JobSolution(
        outcome.status, replicas, hours, cost, min(outcome.bound, cost), outcome.seconds
    )
