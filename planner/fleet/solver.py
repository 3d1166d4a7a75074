"""The one solver door: every MIP and LP of planner is solved here, with one set of options.

The backend is HiGHS (through highspy) by default: on the shipped scenarios it is faster than
CBC and closes the plans over time that CBC leaves at a gap (README, "Solver"). CBC, bundled
with PuLP, stays available with `--solver cbc`.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import pulp

from planner.errors import InputError, SolverError
from planner.schema.scenario import Solver

Backend = Literal["cbc", "highs"]
Status = Literal["optimal", "time_limit", "infeasible", "none"]
BACKENDS: tuple[Backend, ...] = ("highs", "cbc")


@dataclass(frozen=True)
class SolverOptions:
    """How every solve of one plan runs: backend, wall-clock limit, relative gap, threads."""

    backend: Backend = "highs"
    time_limit_s: float = 5.0
    # stop once the incumbent is within this of the best bound: HiGHS's own default, so a
    # reported "optimal" means within 0.01% of the proven bound on either backend
    relative_gap: float = 1e-4
    threads: int = 1

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(f"solver.backend: '{self.backend}' is not one of {list(BACKENDS)}")
        if not (math.isfinite(self.time_limit_s) and self.time_limit_s > 0):
            raise InputError(f"solver.time_limit_s: must be positive, got {self.time_limit_s}")
        if not 0.0 <= self.relative_gap < 1.0:
            raise InputError(f"solver.relative_gap: must be in [0, 1), got {self.relative_gap}")
        if self.threads < 1:
            raise InputError(f"solver.threads: must be at least 1, got {self.threads}")

    @classmethod
    def of(cls, settings: Solver) -> SolverOptions:
        """The options a scenario's `solver:` section asks for."""
        return cls(**settings.model_dump())


@dataclass(frozen=True)
class Outcome:
    """What one solve ended with, and how long it took."""

    status: Status
    seconds: float


def _backend(options: SolverOptions) -> pulp.LpSolver:
    common = {
        "msg": False,
        "timeLimit": options.time_limit_s,
        "gapRel": options.relative_gap,
        "threads": options.threads,
    }
    if options.backend == "highs":
        if not pulp.HiGHS().available():
            raise SolverError("the HiGHS solver is not available: pip install highspy")
        return pulp.HiGHS(**common)
    return pulp.PULP_CBC_CMD(**common)


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


def solve(lp: pulp.LpProblem, options: SolverOptions) -> Outcome:
    """Solve a PuLP model under the options; map the result onto one of four statuses."""
    solver = _backend(options)
    start = time.perf_counter()
    try:
        with _quiet_stdout():
            lp.solve(solver)
    except pulp.PulpSolverError as exc:
        raise SolverError(f"the {options.backend} solver failed: {exc}") from None
    seconds = time.perf_counter() - start
    status = _status(lp)
    if status == "infeasible" and seconds >= options.time_limit_s:
        # stopped by the clock, "infeasible" proves nothing (CBC under a 1 ms limit said so
        # about one run in twelve): no plan, not an infeasible scenario
        status = "none"
    return Outcome(status, seconds)


def _status(lp: pulp.LpProblem) -> Status:
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


def value(expression: pulp.LpAffineExpression | pulp.LpVariable | None) -> float:
    """The solved value of a variable or expression (0 for none)."""
    if expression is None:
        return 0.0
    return float(pulp.value(expression) or 0.0)
