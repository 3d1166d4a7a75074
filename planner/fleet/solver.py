"""The one solver door: every MIP and LP of planner is solved here, with one set of options.

The backend is HiGHS (through highspy, in process) by default: on the shipped scenarios it is
faster than CBC and closes the plans over time that CBC leaves at a gap (README, "Solver").
CBC, bundled with PuLP (a subprocess), stays available with `--solver cbc`.

Two kinds of model come through the door: a PuLP problem (small models built by name) and a
`Model` of arrays (large models built with numpy, passed to HiGHS as one sparse matrix, with
an optional warm start, and the solver's own bound reported back).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import numpy as np

from planner.errors import InputError, SolverError
from planner.schema.scenario import Solver

if TYPE_CHECKING:  # pulp is imported where a PuLP model is solved, not with this module
    import pulp

Backend = Literal["cbc", "highs"]
Status = Literal["optimal", "time_limit", "infeasible", "none"]
BACKENDS: tuple[Backend, ...] = ("highs", "cbc")
DEFAULT_MAX_NODES = 20_000  # branch-and-bound nodes a MIP may explore before it stops
# HiGHS's feasibility-jump heuristic costs about 14 ms of CPU on every MIP however small
# (a 2-variable MIP: 15 ms with it, 1 ms without, HiGHS 1.16), off for array models (the split
# plan over time solves hundreds); the PuLP models keep it, so equal-cost ties (and the
# golden plans) stay as they were
_HIGHS_MIP = {"mip_heuristic_run_feasibility_jump": False}


@dataclass(frozen=True)
class SolverOptions:
    """How every solve of one plan runs: backend, wall-clock limit, relative gap, threads."""

    backend: Backend = "highs"
    # a safety net only: the node limit below stops a long search first, the same way on any
    # machine; a solve the clock stops says so (Outcome.limit)
    time_limit_s: float = 60.0
    # stop once the incumbent is within this of the best bound: HiGHS's own default, so a
    # reported "optimal" means within 0.01% of the proven bound on either backend
    relative_gap: float = 1e-4
    threads: int = 1
    # the deterministic work limit (issue 16): branch-and-bound nodes of every MIP, on both
    # backends; unlike the wall-clock limit, the same model stops at the same plan anywhere
    max_nodes: int | None = DEFAULT_MAX_NODES

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(f"solver.backend: '{self.backend}' is not one of {list(BACKENDS)}")
        if not (math.isfinite(self.time_limit_s) and self.time_limit_s > 0):
            raise InputError(f"solver.time_limit_s: must be positive, got {self.time_limit_s}")
        if not 0.0 <= self.relative_gap < 1.0:
            raise InputError(f"solver.relative_gap: must be in [0, 1), got {self.relative_gap}")
        if self.threads < 1:
            raise InputError(f"solver.threads: must be at least 1, got {self.threads}")
        if self.max_nodes is not None and self.max_nodes < 1:
            raise InputError(f"solver.max_nodes: must be at least 1, got {self.max_nodes}")

    @classmethod
    def of(cls, settings: Solver) -> SolverOptions:
        """The options a scenario's `solver:` section asks for."""
        return cls(**settings.model_dump())


@dataclass(frozen=True)
class Model:
    """A MIP (or LP) in arrays: minimise cost @ x subject to row_lower <= A x <= row_upper and
    lower <= x <= upper, x integer where `integer`; A is given by its nonzero entries."""

    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    integer: np.ndarray  # bool per column
    rows: np.ndarray  # row index of each nonzero of A
    cols: np.ndarray  # column index of each nonzero
    values: np.ndarray  # the nonzero's coefficient
    row_lower: np.ndarray
    row_upper: np.ndarray
    start: np.ndarray | None = None  # a feasible point to start the search from
    # issue 16: HiGHS's sub-MIP heuristics (RINS, RENS) off for small MIPs that branching
    # proves anyway (the break-even curve's: rag 3.2 -> 2.0 s, the same optima)
    sub_mips: bool = True
    # issue 16: HiGHS's restarts (presolve again once columns are fixed) off for the same small
    # MIPs: on the break-even MIPs of the pooled scenarios they halve the CPU, the same optima
    restarts: bool = True
    # issue 16: HiGHS's root reduced-cost heuristic (a sub-MIP over the columns the root LP's
    # reduced costs leave free) off for the break-even and least-cost MIPs, which branching
    # proves anyway: 22% of HiGHS's instructions on mixed-traffic's, the same costs. The
    # plan-over-time repair keeps it: at 1 node a period it is what finds its plans
    reduced_cost_heuristic: bool = True
    # HiGHS's feasibility jump (off for array models, `_HIGHS_MIP`): on for the fleet MIP built
    # as arrays (`fleet/matrix.py`), which PuLP solved with it, so its ties fall as they did
    feasibility_jump: bool = False

    @property
    def n_cols(self) -> int:
        return len(self.cost)

    @property
    def n_rows(self) -> int:
        return len(self.row_lower)

    def relaxed(self) -> Model:
        """The LP relaxation (every column continuous)."""
        return replace(self, integer=np.zeros(self.n_cols, dtype=bool), start=None)

    def branch_only(self) -> Model:
        """This model as a small cost-only MIP that branching proves anyway (the break-even
        and least-cost MIPs): HiGHS without its sub-MIP heuristics, its root reduced-cost
        heuristic and its restarts (the fields above say why)."""
        return replace(self, sub_mips=False, restarts=False, reduced_cost_heuristic=False)


@dataclass(frozen=True)
class Outcome:
    """What one solve ended with and how long it took; for a `Model`, the point found, its
    objective and the solver's own bound on the optimum."""

    status: Status
    seconds: float
    values: np.ndarray | None = None
    objective: float = math.nan
    bound: float = math.nan
    limit: Literal["", "nodes", "clock"] = ""  # what stopped a solve short of its gap
    # an LP's row duals (HiGHS's sign: d objective / d row bound), for column generation
    duals: np.ndarray | None = None


def _backend(options: SolverOptions) -> pulp.LpSolver:
    import pulp

    common = {
        "msg": False,
        "timeLimit": options.time_limit_s,
        "gapRel": options.relative_gap,
        "threads": options.threads,
    }
    if options.backend == "highs":
        if not pulp.HiGHS().available():
            raise SolverError("the HiGHS solver is not available: pip install highspy")
        nodes = {} if options.max_nodes is None else {"mip_max_nodes": int(options.max_nodes)}
        # no restarts, as the array models (issue 16: agent's fleet MIP 0.38 -> 0.09 s;
        # the same optimum, among equal-cost fleets possibly another)
        return pulp.HiGHS(**common, random_seed=0, mip_allow_restart=False, **nodes)
    return pulp.PULP_CBC_CMD(**common, maxNodes=options.max_nodes)


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


def solve(lp: pulp.LpProblem | Model, options: SolverOptions) -> Outcome:
    """Solve a PuLP model or an array `Model` under the options; map the result onto one of
    four statuses."""
    if isinstance(lp, Model):
        return _solve_model(lp, options)
    import pulp

    solver = _backend(options)
    start = time.perf_counter()
    try:
        with _quiet_stdout():
            lp.solve(solver)
    except pulp.PulpSolverError as exc:
        raise SolverError(f"the {options.backend} solver failed: {exc}") from None
    except KeyError:  # PuLP's HiGHS maps no status for a node limit (kSolutionLimit)
        _assign_stopped(lp)
    seconds = time.perf_counter() - start
    status = _status(lp)
    if status == "infeasible" and seconds >= options.time_limit_s:
        # stopped by the clock, "infeasible" proves nothing (CBC under a 1 ms limit said so
        # about one run in twelve): no plan, not an infeasible scenario
        status = "none"
    return Outcome(status, seconds, limit=_limit(status, seconds, options))


def _limit(status: Status, seconds: float, options: SolverOptions) -> Literal["", "nodes", "clock"]:
    """Which limit ended a solve that did not prove its gap: the clock when the time is up,
    else the node limit."""
    if status in ("optimal", "infeasible"):
        return ""
    return "clock" if seconds >= options.time_limit_s else "nodes"


def _assign_stopped(lp: pulp.LpProblem) -> None:
    """Give a PuLP model HiGHS stopped at its node limit the status of any stopped solve:
    its incumbent (PuLP has read the values already) or no solution."""
    import highspy
    import pulp

    found = _highs_status(lp.solverModel, highspy)
    if found == "time_limit":
        lp.assignStatus(pulp.LpStatusOptimal, pulp.LpSolutionIntegerFeasible)
    else:
        lp.assignStatus(pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound)


def _status(lp: pulp.LpProblem) -> Status:
    """Map PuLP's status and solution status onto optimal / time_limit / infeasible / none."""
    import pulp

    name = pulp.LpStatus[lp.status]
    if name in ("Infeasible", "Unbounded"):
        return "infeasible"
    sol = getattr(lp, "sol_status", None)
    if name == "Optimal" and sol in (None, pulp.LpSolutionOptimal):
        return "optimal"
    if sol == pulp.LpSolutionIntegerFeasible or name == "Optimal":
        return "time_limit"
    return "none"


def value(expression: pulp.LpAffineExpression | pulp.LpVariable | None) -> float:
    """The solved value of a variable or expression (0 for none)."""
    if expression is None:
        return 0.0
    import pulp

    return float(pulp.value(expression) or 0.0)


def _solve_model(model: Model, options: SolverOptions) -> Outcome:
    """An array model through HiGHS in process, or through PuLP for CBC."""
    if options.backend == "cbc":
        return _solve_model_cbc(model, options)
    import highspy

    start = time.perf_counter()
    with _quiet_stdout():
        h = highspy.Highs()
        _highs_options(h, options)
        if not model.sub_mips:
            for name in ("mip_heuristic_run_rins", "mip_heuristic_run_rens"):
                h.setOptionValue(name, False)
        if not model.restarts:
            h.setOptionValue("mip_allow_restart", False)
        if not model.reduced_cost_heuristic:
            h.setOptionValue("mip_heuristic_run_root_reduced_cost", False)
        if model.feasibility_jump:
            h.setOptionValue("mip_heuristic_run_feasibility_jump", True)
        _pass_model(h, model)
        if model.start is not None and model.integer.any():
            h.setSolution(
                model.n_cols, np.arange(model.n_cols, dtype=np.int32), model.start.astype(float)
            )
        h.run()
    seconds = time.perf_counter() - start
    info = h.getInfo()
    status = _highs_status(h, highspy)
    limit = _limit(status, seconds, options)
    if status in ("infeasible", "none"):
        return Outcome(status, seconds, limit=limit)
    values = np.asarray(h.getSolution().col_value, dtype=float)
    objective = float(info.objective_function_value)
    is_mip = bool(model.integer.any())
    bound = float(info.mip_dual_bound) if is_mip else objective
    duals = None if is_mip else np.asarray(h.getSolution().row_dual, dtype=float)
    return Outcome(status, seconds, values, objective, min(bound, objective), limit, duals)


def _highs_options(h: object, options: SolverOptions) -> None:
    """Quiet, single-run HiGHS settings from the options (a fixed seed: same model, same
    answer)."""
    for name, setting in (
        ("output_flag", False),
        ("time_limit", float(options.time_limit_s)),
        ("mip_rel_gap", float(options.relative_gap)),
        ("threads", int(options.threads)),
        ("random_seed", 0),
        *_HIGHS_MIP.items(),
    ):
        h.setOptionValue(name, setting)  # type: ignore[attr-defined]
    if options.max_nodes is not None:
        h.setOptionValue("mip_max_nodes", int(options.max_nodes))  # type: ignore[attr-defined]


def _pass_model(h: object, model: Model) -> None:
    """Hand HiGHS the model as one column-wise sparse matrix."""
    order = np.lexsort((model.rows, model.cols))
    counts = np.bincount(model.cols, minlength=model.n_cols)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    h.passModel(  # type: ignore[attr-defined]
        model.n_cols,
        model.n_rows,
        len(order),
        1,  # column-wise
        1,  # minimise
        0.0,
        model.cost.astype(float),
        model.lower.astype(float),
        model.upper.astype(float),
        model.row_lower.astype(float),
        model.row_upper.astype(float),
        starts,
        model.rows[order].astype(np.int32),
        model.values[order].astype(float),
        model.integer.astype(np.int32),
    )


def _highs_status(h: object, highspy: object) -> Status:
    """HiGHS's model status and whether it holds a feasible point, as one of four statuses."""
    kinds = highspy.HighsModelStatus  # type: ignore[attr-defined]
    found = h.getModelStatus()  # type: ignore[attr-defined]
    if found == kinds.kOptimal:
        return "optimal"
    if found in (kinds.kInfeasible, kinds.kUnboundedOrInfeasible, kinds.kUnbounded):
        return "infeasible"
    feasible = h.getInfo().primal_solution_status == 2  # type: ignore[attr-defined]
    return "time_limit" if feasible else "none"


def _solve_model_cbc(model: Model, options: SolverOptions) -> Outcome:
    """An array model as a PuLP problem, solved by CBC (which reports no bound of its own)."""
    import pulp

    lp = pulp.LpProblem("model", pulp.LpMinimize)
    cols = [
        pulp.LpVariable(
            f"v{j}",
            lowBound=float(lo),
            upBound=None if math.isinf(hi) else float(hi),
            cat=pulp.LpInteger if integer else pulp.LpContinuous,
        )
        for j, (lo, hi, integer) in enumerate(
            zip(model.lower, model.upper, model.integer, strict=True)
        )
    ]
    lp += pulp.LpAffineExpression([(cols[j], float(c)) for j, c in enumerate(model.cost) if c])
    order = np.argsort(model.rows, kind="stable")
    bounds = np.searchsorted(model.rows[order], np.arange(model.n_rows + 1))
    for i in range(model.n_rows):
        span = order[bounds[i] : bounds[i + 1]]
        expr = pulp.LpAffineExpression(
            [(cols[j], float(a)) for j, a in zip(model.cols[span], model.values[span], strict=True)]
        )
        lo, hi = float(model.row_lower[i]), float(model.row_upper[i])
        if lo == hi:
            lp += expr == lo
            continue
        if math.isfinite(lo):
            lp += expr >= lo
        if math.isfinite(hi):
            lp += expr <= hi
    outcome = solve(lp, options)
    if outcome.status in ("infeasible", "none"):
        return outcome
    values = np.array([c.varValue or 0.0 for c in cols])
    objective = float(model.cost @ values)
    bound = objective if outcome.status == "optimal" else math.nan
    return Outcome(outcome.status, outcome.seconds, values, objective, bound, outcome.limit)
