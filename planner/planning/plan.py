"""The plan: what `planning.pipeline.plan()` returns and every renderer formats."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.arrays import row_groups
from planner.fleet.selection import CANDIDATE_KEY, Offered
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem
from planner.money.pricing import api_bill_usd
from planner.perf import columns
from planner.perf.candidates import Price
from planner.perf.table import Table, values
from planner.planning.accuracy import ExpectedError, Margin
from planner.schema.plan import ApiQuote, FleetSummary, RequestClassPlan
from planner.units import HOURS_PER_MONTH, SECONDS_PER_HOUR, TOKENS_PER_1K

if TYPE_CHECKING:  # issue #16: a single-period plan never loads the plan-over-time MIP
    import pandas as pd

    from planner.fleet.overtime import TimeProblem, TimeSolution


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
    discount_vs_on_demand: float | None = None  # set when derived as on-demand x (1 - d)
    # a reserved price times this: the term is paid in full where the horizon ends inside it
    term_factor: float = 1.0

    @property
    def plan_tier(self) -> str:
        """The tier as `TIERS` names it: a reserved price of any term is "reserved"."""
        return "reserved" if self.tier.startswith("reserved") else self.tier


@dataclass(frozen=True)
class SolveFact:
    """One solve behind the plan: what it decided, how it ended, the gap it left, how long."""

    name: str
    status: str  # optimal, time_limit, infeasible
    gap: float  # relative gap to the solver's bound (0 when optimal)
    seconds: float
    backend: str
    time_limit_s: float

    @property
    def label(self) -> str:
        """The status as every renderer writes it: "optimal", "time_limit (gap 10.9%)"."""
        if self.status == "optimal" or not np.isfinite(self.gap):
            return self.status
        return f"{self.status} (gap {self.gap:.1%})"


TIERS = ("reserved", "owned", "on_demand", "spot")  # held for the horizon, then rented


@dataclass(frozen=True)
class TierGpus:
    """GPUs of one type in one period, by tier, and how many of them carry replicas."""

    reserved: int
    owned: int
    on_demand: int
    spot: int
    in_use: int

    @property
    def held(self) -> int:
        """GPUs held for the whole horizon (reserved and owned)."""
        return self.reserved + self.owned


@dataclass(frozen=True)
class PeriodPlan:
    """One block of months at one demand slot: its hours, demand, GPUs by tier and cost."""

    months: tuple[int, ...]  # the block's months, from 1
    slot: int  # demand slot, from 1 (busiest first)
    hours: float  # hours of this slot over the whole block
    demand: dict[str, float]  # request class -> req/s
    gpus: dict[str, TierGpus]  # GPU type -> GPUs by tier (every type of the plan)
    cost_usd: float
    # requests/s the period's fleet carries at planned utilisation, capacity weighted by the
    # period's class mix, spot replicas net of pre-emption
    capacity_requests_per_s: float = 0.0

    @property
    def demand_requests_per_s(self) -> float:
        """All classes' demand in this period."""
        return sum(self.demand.values())

    @property
    def share_of_hours(self) -> float:
        """The slot's share of a month's hours."""
        return self.hours / (HOURS_PER_MONTH * len(self.months))


@dataclass(frozen=True)
class MonthPlan:
    """One month: peak and served demand, tokens and cost by tier (its block's cost split
    evenly over its months)."""

    month: int  # from 1
    peak_requests_per_s: float  # all classes' peak this month (the scenario's peak x growth)
    avg_requests_per_s: float  # served on average: the profile's mean x this month's peak
    input_tokens: float  # served in the month
    output_tokens: float
    reserved_usd: float
    owned_usd: float
    on_demand_usd: float
    spot_usd: float
    total_usd: float
    cost_per_1k_output_tokens_usd: float


@dataclass(frozen=True)
class TimePlan:
    """The plan over the horizon, with what all-on-demand and all-reserved would cost."""

    solution: TimeSolution
    periods: tuple[PeriodPlan, ...]  # blocks of months in order, each block's slots in order
    monthly: tuple[MonthPlan, ...]
    all_on_demand: TimeSolution | None
    all_reserved_cost: float | None
    all_reserved_gpus: dict[str, int]
    prices: tuple[PriceFact, ...]
    profile: np.ndarray  # hourly total-demand fraction of peak
    hourly_demand: np.ndarray  # req/s of all classes in each hour of the profile, at month 1
    slots: Slots
    horizon_months: int
    growth_per_month: float
    output_tokens: float
    problem: TimeProblem
    notes: tuple[str, ...] = ()
    class_mean_level: dict[str, float] = field(default_factory=dict)  # class -> profile mean
    shared_profile: bool = True  # every class follows the scenario's one hourly profile
    # the share of every month's input tokens served from the prefix cache (the classes' mix
    # is the same each month, growth scaling them all), billed at an API's cached price
    cached_input_share: float = 0.0

    @property
    def cost_per_1k_output_tokens_usd(self) -> float:
        return self.solution.total_cost / self.output_tokens * 1e3

    @property
    def monthly_average_usd(self) -> float:
        """The horizon's cost a month on average: what self-hosting is compared at."""
        return self.solution.total_cost / self.horizon_months

    def held_gpus(self, times: str = " x ") -> str:
        """The GPUs held for the whole horizon, reserved then owned, joined by commas ('' when
        none): one list for the text and the workbook (an owned-only plan began ', 10 x')."""
        sol = self.solution
        parts = [f"{n}{times}{g} reserved" for g, n in sol.reserved.items() if n]
        parts += [f"{n}{times}{g} owned" for g, n in sol.owned.items() if n]
        return ", ".join(parts)

    def api_monthly_usd(self, quote: ApiQuote) -> float:
        """An API's bill a month averaged over the horizon: the tokens each month serves, its
        prefix-cached share at the cached-input price (`api_bill_usd`, as `compare` bills)."""
        share = self.cached_input_share
        total = sum(
            api_bill_usd(quote, m.input_tokens, m.input_tokens * share, m.output_tokens)
            for m in self.monthly
        )
        return total / self.horizon_months

    @property
    def monthly_total_usd(self) -> float:
        """The months' costs summed (the horizon total, month by month)."""
        return float(np.sum([m.total_usd for m in self.monthly]))

    @property
    def all_on_demand_cost_usd(self) -> float | None:
        """The horizon's cost with every GPU rented on demand; None when no such plan."""
        od = self.all_on_demand
        return None if od is None or od.status == "infeasible" else od.total_cost

    @property
    def saving_vs_all_on_demand_usd(self) -> float | None:
        """What this plan saves over the horizon against all on-demand."""
        od = self.all_on_demand_cost_usd
        return None if od is None else od - self.solution.total_cost

    @property
    def saving_vs_all_on_demand_fraction(self) -> float | None:
        """The saving against all on-demand as a fraction of the all-on-demand cost."""
        od, saving = self.all_on_demand_cost_usd, self.saving_vs_all_on_demand_usd
        return None if od is None or saving is None else saving / od

    @property
    def saving_vs_all_reserved_usd(self) -> float | None:
        """What this plan saves against reserving the busiest period's GPUs throughout."""
        res = self.all_reserved_cost
        return None if res is None else res - self.solution.total_cost

    @property
    def slot_capacity_requests_per_s(self) -> np.ndarray:
        """Requests/s the first block's fleet carries in each slot at planned utilisation
        (capacity weighted by the class mix; spot replicas net of pre-emption)."""
        problem, sol = self.problem, self.solution
        weights = problem.demand[:, 0] / problem.demand[:, 0].sum()
        per_replica = problem.capacity @ weights
        keep = 1.0 - problem.preemption_overhead
        first_block = range(len(self.slots.share))
        return np.array(
            [
                float((sol.replicas[:, p] + keep * sol.spot_replicas[:, p]) @ per_replica)
                for p in first_block
            ]
        )


@dataclass(frozen=True)
class EnergyPlan:
    """The plan's power, energy per 1K output tokens and CO2, with the inputs they use."""

    tdp_w: dict[str, float]  # GPU type of the plan -> its catalog TDP
    utilisation: float
    pue: float
    grid_g_co2_per_kwh: float | None
    power_kw: float  # the peak fleet at planned utilisation, facility included
    wh_per_1k_output_tokens: float  # the peak fleet at the peak demand
    over_time_wh_per_1k_output_tokens: float | None  # the plan over time, whole horizon
    missing_tdp: tuple[str, ...] = ()  # GPU types without a TDP (left out of the power)

    @property
    def g_co2_per_1k_output_tokens(self) -> float | None:
        """CO2 per 1K output tokens at the peak: energy x grid intensity."""
        grid = self.grid_g_co2_per_kwh
        return None if grid is None else self.wh_per_1k_output_tokens / 1e3 * grid

    @property
    def over_time_g_co2_per_1k_output_tokens(self) -> float | None:
        """CO2 per 1K output tokens over the horizon of the plan over time."""
        grid, wh = self.grid_g_co2_per_kwh, self.over_time_wh_per_1k_output_tokens
        return None if grid is None or wh is None else wh / 1e3 * grid


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
    # every evaluated row (perf.columns.CANDIDATE_COLUMNS): a Table (a DataFrame is taken too)
    candidate_table: Any
    offered: Offered  # SLA-feasible candidates given to the solver, capacity per class
    api_quotes: tuple[ApiQuote, ...]
    assumption_rows: tuple[tuple, ...]  # planning.assumptions.COLUMNS, one tuple per fact
    notes: tuple[str, ...] = field(default_factory=tuple)
    gpu_prices: dict[str, Price] = field(default_factory=dict)  # GPU id -> price it was planned at
    timings_s: dict[str, float] = field(default_factory=dict)
    over_time: TimePlan | None = None  # when the scenario has a finance section
    problem: FleetProblem | None = None  # the fleet problem the plan was solved from
    solver: SolverOptions = field(default_factory=SolverOptions)  # for every later re-solve
    energy: EnergyPlan | None = None  # power, energy and CO2 per token
    # redundancy that holds (issue 12): each line's failover share, when n+k is asked
    failover: tuple = ()
    # the engine profile's measured error for the model on each GPU of the fleet (issue #10)
    prediction_errors: tuple[ExpectedError, ...] = ()
    # the factors each fleet GPU's predictions were planned at (search.prediction_margin: p90)
    prediction_margins: tuple[Margin, ...] = ()

    @functools.cached_property
    def candidates(self) -> pd.DataFrame:
        """Every evaluated row as a DataFrame, for the workbook, charts and library users
        (pandas is loaded here, not on the solve path: issue #16)."""
        table = self.candidate_table
        if not isinstance(table, Table):
            return table
        return columns.conform(table.to_pandas(), columns.CANDIDATE_COLUMNS)

    @property
    def candidates_table(self) -> Table:
        """Every evaluated row as a `Table`, what the workbook reads (a DataFrame given as
        `candidate_table` is read as one); `candidates` is the same as a DataFrame."""
        table = self.candidate_table
        if table is None or isinstance(table, Table):
            return Table({}) if table is None else table
        return Table.from_pandas(table.reset_index(drop=True))

    @property
    def sheet_candidates(self) -> Table:
        """The workbook's Candidates rows: every evaluated candidate but the batches above the
        first one its configuration (class, GPU, layout, quant, KV, speculation, role) cannot
        hold, which only repeat it, out of memory by more (mixed-traffic: 3,056 of 13,572
        rows; the first such row stays, naming the largest batch that fits)."""
        table = self.candidates_table
        if not len(table) or "fits" not in table or "batch" not in table:
            return table
        fits = values(table, "fits").astype(bool)
        if fits.all():
            return table
        group = row_groups(
            [table.codes(k) for k in ("class", *CANDIDATE_KEY) if k != "batch" and k in table]
        )
        batch = values(table, "batch").astype(np.int64)
        first_out = np.full(int(group.max()) + 1, np.iinfo(np.int64).max)
        np.minimum.at(first_out, group[~fits], batch[~fits])
        return table.take(np.flatnonzero(fits | (batch <= first_out[group])))

    @functools.cached_property
    def assumptions(self) -> pd.DataFrame:
        """The facts the plan rests on, one row each (`planning.assumptions.COLUMNS`)."""
        import pandas as pd

        from planner.planning.assumptions import COLUMNS

        return pd.DataFrame(list(self.assumption_rows), columns=COLUMNS)

    @property
    def solves(self) -> tuple[SolveFact, ...]:
        """Every solve behind the figures: the peak plan, the best single-GPU-type plan (unless
        it is the peak plan's own fleet, with no solve), the plan over time and its
        all-on-demand comparison, each with its status and gap."""
        opt = self.solver
        out = [_solve_fact("peak plan", self.fleet, opt)]
        if self.single_gpu_best is not None and self.single_gpu_best is not self.fleet:
            out.append(_solve_fact("best single-GPU-type plan", self.single_gpu_best, opt))
        ot = self.over_time
        if ot is not None:
            for name, sol in (("plan over time", ot.solution), ("all on-demand", ot.all_on_demand)):
                if sol is not None:
                    fact = SolveFact(
                        name, sol.status, sol.gap, sol.solve_seconds, opt.backend, opt.time_limit_s
                    )
                    out.append(fact)
        return tuple(out)

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
    def capacity_requests_per_s(self) -> float:
        """Requests/s the peak fleet carries at planned utilisation (every line summed)."""
        return float(sum(d.capacity_requests_per_s for d in self.fleet.deployments))

    @property
    def input_tokens_per_s(self) -> float:
        """Input tokens a second of every class at its peak demand."""
        return sum(c.requests_per_second * c.input_tokens for c in self.classes)

    @property
    def output_tokens_per_s(self) -> float:
        """Output tokens a second of every class at its peak demand."""
        return sum(c.requests_per_second * c.output_tokens for c in self.classes)

    @property
    def mix_saving_monthly_usd(self) -> float | None:
        """What the GPU mix saves a month against the best single-GPU-type plan."""
        single = self.single_gpu_best
        return None if single is None else single.monthly_cost_usd - self.fleet.monthly_cost_usd

    @property
    def mix_saving_fraction(self) -> float | None:
        """The mix's saving as a fraction of the single-GPU-type plan's cost."""
        single, saving = self.single_gpu_best, self.mix_saving_monthly_usd
        if single is None or saving is None or not single.monthly_cost_usd:
            return None
        return saving / single.monthly_cost_usd

    @property
    def cheapest_api(self) -> ApiQuote | None:
        return min(self.api_quotes, key=lambda q: q.cost_per_hour_usd, default=None)

    def api_monthly_usd(self, quote: ApiQuote) -> float:
        """An API's bill a month for the tokens served: at the average demand, averaged over
        the horizon's months when there is a plan over time."""
        if self.over_time is not None:
            return self.over_time.api_monthly_usd(quote)
        return quote.monthly_cost_usd * self.average_demand_factor

    @property
    def self_hosted_monthly_usd(self) -> float:
        """Self-hosting's cost a month as APIs are compared with it: the plan over time's
        average month when there is one, else the fleet sized for the peak, 24/7."""
        if self.over_time is not None:
            return self.over_time.monthly_average_usd
        return self.fleet.monthly_cost_usd

    @property
    def self_hosted_basis(self) -> str:
        """What `self_hosted_monthly_usd` is, for every renderer to say."""
        ot = self.over_time
        if ot is not None:
            return (
                f"average month of the {ot.horizon_months}-month plan over time (reserved, "
                "owned, on-demand and spot)"
            )
        return f"fleet sized for the peak, 24/7 ({self.fleet.total_gpus} GPUs)"

    @property
    def cheapest_api_monthly_usd(self) -> float | None:
        """The cheapest API's bill a month at the average demand."""
        api = self.cheapest_api
        return None if api is None else self.api_monthly_usd(api)

    @property
    def api_saving_monthly_usd(self) -> float | None:
        """What self-hosting saves a month against the cheapest API (negative: the API is
        cheaper), both as `self_hosted_monthly_usd` and `api_monthly_usd` have them."""
        api = self.cheapest_api_monthly_usd
        return None if api is None else api - self.self_hosted_monthly_usd

    @property
    def deployment_cost_per_1k_output_tokens_usd(self) -> tuple[float, ...]:
        """Each fleet line's $ per 1K output tokens with its replicas at planned capacity
        (output length of the first class), to set beside the candidates' figures."""
        out_len = self.classes[0].output_tokens
        return tuple(
            d.cost_per_hour_usd
            / max(d.replicas, 1)
            / (SECONDS_PER_HOUR * max(d.capacity_requests_per_s / d.replicas, 1e-9) * out_len)
            * TOKENS_PER_1K
            for d in self.fleet.deployments
        )


def _solve_fact(name: str, fleet: FleetSummary, options: SolverOptions) -> SolveFact:
    """A solved fleet's status, gap and time as a SolveFact."""
    return SolveFact(
        name, fleet.status, fleet.gap, fleet.solve_seconds, options.backend, options.time_limit_s
    )
