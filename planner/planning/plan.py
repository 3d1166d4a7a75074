"""The plan: what `planning.pipeline.plan()` returns and every renderer formats."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from planner.fleet.overtime import TimeProblem, TimeSolution
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem
from planner.perf.candidates import Price
from planner.schema.plan import ApiQuote, FleetSummary, RequestClassPlan


@dataclass(frozen=True)
class Slots:
    """Hours grouped into demand levels: the level of each class and the share of hours."""

    level: np.ndarray  # classes x slots, fraction of the class's peak (max over the group)
    share: np.ndarray  # slots, fraction of all hours
    hour_slot: np.ndarray  # hour index -> slot index


@dataclass(frozen=True)
class PriceFact:
    """One tier price used, with where it came from."""

    gpu: str
    tier: str
    usd_per_gpu_hour: float
    source: str
    assumption: bool


@dataclass(frozen=True)
class TimePlan:
    """The plan over the horizon, with what all-on-demand and all-reserved would cost."""

    solution: TimeSolution
    periods: pd.DataFrame  # one row per (month, slot)
    monthly: pd.DataFrame  # one row per month
    all_on_demand: TimeSolution | None
    all_reserved_cost: float | None
    all_reserved_gpus: dict[str, int]
    prices: tuple[PriceFact, ...]
    profile: np.ndarray  # hourly total-demand fraction of peak
    slots: Slots
    horizon_months: int
    output_tokens: float
    problem: TimeProblem
    notes: tuple[str, ...] = ()

    @property
    def cost_per_1k_output_tokens_usd(self) -> float:
        return self.solution.total_cost / self.output_tokens * 1e3


@dataclass(frozen=True)
class Plan:
    """Everything planner concluded for one scenario."""

    scenario_name: str
    model_id: str
    engine: str
    classes: tuple[RequestClassPlan, ...]
    utilisation: float
    fleet: FleetSummary
    single_gpu_best: FleetSummary | None
    single_gpu_best_gpu: str | None
    candidates: pd.DataFrame  # every evaluated row, with sla_ok and why it failed
    offered: pd.DataFrame  # SLA-feasible candidates given to the solver, capacity per class
    api_quotes: tuple[ApiQuote, ...]
    assumptions: pd.DataFrame
    notes: tuple[str, ...] = field(default_factory=tuple)
    gpu_prices: dict[str, Price] = field(default_factory=dict)  # GPU id -> price it was planned at
    timings_s: dict[str, float] = field(default_factory=dict)
    over_time: TimePlan | None = None  # when the scenario has a finance section
    problem: FleetProblem | None = None  # the fleet problem the plan was solved from
    solver: SolverOptions = field(default_factory=SolverOptions)  # for every later re-solve

    @property
    def average_demand_factor(self) -> float:
        """Mean demand over the day or week as a fraction of the peak (1 without a profile)."""
        if self.over_time is None:
            return 1.0
        return float(self.over_time.profile.mean())

    @property
    def total_requests_per_s(self) -> float:
        return sum(c.requests_per_second for c in self.classes)

    @property
    def cheapest_api(self) -> ApiQuote | None:
        return min(self.api_quotes, key=lambda q: q.cost_per_hour_usd, default=None)
