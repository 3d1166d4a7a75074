"""Build vs buy: self-hosting on the optimal fleet against every API offering of the model.

An API is paid per token of the traffic actually served. Without a plan over time the
self-hosted fleet is sized for the peak and paid around the clock. With one (a `finance:`
section) self-hosting costs what the plan over time costs (reserved, owned, on-demand and
spot, month by month), averaged over the horizon, and the API bills the tokens each month
serves (the profile's mean times the month's peak), averaged the same way; break-even
volumes scale that whole horizon's demand and re-solve the plan over time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from planner.arrays import distinct
from planner.errors import SolverError
from planner.fleet import disagg, dominance, scaled
from planner.fleet.bounds import cheapest_per_request
from planner.fleet.solver import SolverOptions, solve
from planner.fleet.steady import FleetProblem, FleetSolution, solve_fleet
from planner.money.pricing import api_bill_usd, api_usd_per_hour
from planner.planning.plan import Plan, TimePlan
from planner.schema.plan import ApiQuote
from planner.units import HOURS_PER_MONTH, SECONDS_PER_HOUR

if TYPE_CHECKING:  # the plan over time's solver is imported where one is re-solved (issue 16:
    # 3 ms of every single-period workbook's imports)
    from planner.fleet.overtime import TimeProblem

SCALES = np.geomspace(1e-3, 1e3, 61)
WALK_STEPS = 6  # steps of the break-even walk before one MIP jumps to near its end (each
# jump MIP costs a few walk steps: agent 70 ms against 20 ms, and its walks take 2-4 steps)
EDGE_MARGIN = 1e-5  # the walk probes this far past where the line meets a cost (relative)
WALK_PLANS = 8  # plans over time the break-even walk solves before the grid scan answers
COST_DECIMALS = 9  # $/h: a fleet's cost, summed in any order, compared at this precision
BREAK_EVEN_TOL = 5e-3  # the relative gap the break-even plans over time are solved to


class ClassTokens(NamedTuple):
    """Each class's peak requests/s and tokens a request: what an API's bill is priced on."""

    rates: np.ndarray
    inputs: np.ndarray
    cached: np.ndarray  # prompt tokens of `inputs` served from the prefix cache
    outputs: np.ndarray


@dataclass(frozen=True)
class Comparison:
    """One API offering against self-hosting, at the scenario's demand and at break-even."""

    quote: ApiQuote
    api_cost_per_request_usd: float
    api_monthly_usd: float
    self_monthly_usd: float
    break_even_peak_requests_per_s: float | None  # None: self-hosting never wins in range
    break_even_tokens_per_month: float | None

    @property
    def api_is_cheaper(self) -> bool:
        """At the scenario's demand, the API costs less a month than self-hosting."""
        return self.api_monthly_usd < self.self_monthly_usd


def api_cost_per_request(
    quote: ApiQuote, input_tokens: float, output_tokens: float, cached_tokens: float = 0.0
) -> float:
    """One request's bill (`api_bill_usd`: its cached prompt tokens at the cached price)."""
    return api_bill_usd(quote, input_tokens, cached_tokens, output_tokens)


def api_cost_per_hour(quote: ApiQuote, tokens: ClassTokens) -> float:
    """$/h of serving each class's peak requests/s through the API, cached tokens included."""
    rates = tokens.rates
    return api_usd_per_hour(
        quote,
        float((rates * tokens.inputs).sum()),
        float((rates * tokens.cached).sum()),
        float((rates * tokens.outputs).sum()),
    )


class SelfCost:
    """The optimal fleet's $/h as a function of a demand scale, memoised: one MIP per scale,
    shared by every API offering's break-even search."""

    def __init__(self, problem: FleetProblem, options: SolverOptions) -> None:
        # break-even asks what the fleet costs at any volume: no GPU cap or budget applies;
        # the cost alone is asked, so candidates copies of another replace are left out
        # (fleet/dominance.py, issue 16: rag's 183 became 20, its MIPs 2-4x faster)
        free = replace(problem, max_gpus=None, budget_per_hour=None)
        self.problem = free.restricted(dominance.undominated(free))
        self.options = options
        self.cache: dict[float, float] = {}
        self.replicas: dict[float, int] = {}  # replicas of each solved scale's fleet
        # issue 16, the exact break-even: each solved scale's fleet, and how far it carries
        # (`reach`): the cost is that scale's on [scale, reach], with no solve
        self.fleets: dict[float, np.ndarray] = {}
        self.reached: dict[float, float] = {}
        self.solves = 0  # MIPs solved (the rest came from flat steps)
        self.jumps = 0  # first-crossing MIPs (`first_crossing`)
        self._scaled: scaled.ScaledFleet | None = None
        self._lp_slope: float | None = None

    def __call__(self, scale: float) -> float:
        key = round(float(scale), 12)
        if key not in self.cache:
            flat = self._on_flat_step(key)
            self.cache[key] = flat if flat is not None else self._solve(key)
        return self.cache[key]

    def _solve(self, key: float) -> float:
        """One MIP: on the model built once (`fleet/scaled.py`) where only the demand rows
        change with the scale, else a fresh `solve_fleet`."""
        self.solves += 1
        if scaled.supported(self.problem, self.options):
            sol: scaled.ScaledSolution | FleetSolution = self._model().at(key)
        else:
            sol = solve_fleet(self.problem.scaled(key), self.options)
        if sol.status == "infeasible":
            return math.inf
        self.replicas[key] = int(sol.replicas.sum())
        self.fleets[key] = sol.replicas
        # prices have a few decimals: two fleets of equal cost are equal here, whatever order
        # their terms were summed in (a 1e-14 difference made the step walk miss a flat step)
        return round(sol.cost_per_hour, COST_DECIMALS)

    def know(self, plan: Plan) -> None:
        """Scale 1 is the plan itself when nothing left out here applied to it (no GPU cap or
        budget, no redundancy) and it was solved to the gap: its cost, with no solve again
        (issue 16: agent's scale-1 MIP was a sixth of its analysis)."""
        p = plan.problem
        if p is None or p.max_gpus is not None or p.budget_per_hour is not None:
            return
        if not dominance.supported(p) or plan.fleet.status != "optimal":
            return
        self.cache.setdefault(1.0, round(plan.fleet.total_cost_per_hour_usd, COST_DECIMALS))
        self.replicas.setdefault(1.0, sum(d.replicas for d in plan.fleet.deployments))

    def replicas_near(self, scale: float) -> int | None:
        """Replicas of the fleet solved at the largest scale up to `scale` (a flat step's
        scale shares its fleet's cost); None before any solve there."""
        below = [k for k in self.replicas if k <= round(float(scale), 12)]
        return self.replicas[max(below)] if below else None

    def reach(self, scale: float) -> float:
        """The largest scale the fleet solved at `scale` carries (`ScaledFleet.reach`, an LP),
        memoised; `scale` itself where no fleet was kept or the model is not the scaled one.
        The cost is nondecreasing and that fleet stays feasible, so it is the cost up to there."""
        key = round(float(scale), 12)
        if key not in self.reached:
            fleet = self.fleets.get(key)
            ok = fleet is not None and scaled.supported(self.problem, self.options)
            far = self._model().reach(fleet) if ok and fleet is not None else key
            self.reached[key] = max(far, key)
        return self.reached[key]

    def first_crossing(self, slope: float, lo: float, hi: float) -> float | None:
        """A proven lower bound on the first scale in [lo, hi] where some fleet costs at most
        slope x scale (`ScaledFleet.first_crossing`, one MIP; inf: none there), or None where
        the problem is not the scaled one."""
        if not scaled.supported(self.problem, self.options):
            return None
        self.jumps += 1
        return self._model().first_crossing(slope, lo, hi)

    def _on_flat_step(self, key: float) -> float | None:
        """The cost is nondecreasing in demand: between two known scales of equal cost it is
        that cost, and so it is up to where a known scale's fleet reaches; with no solve."""
        for k, far in self.reached.items():
            if k <= key <= far:
                return self.cache[k]
        lo = max((k for k in self.cache if k <= key), default=None)
        hi = min((k for k in self.cache if k >= key), default=None)
        if lo is None or hi is None or self.cache[lo] != self.cache[hi]:
            return None
        return self.cache[lo]

    def lower_slope(self) -> float:
        """$/h per unit of scale that no fleet can beat (issue 16: an exact shortcut): without
        integrality, the redundancy floor and the inventory, the LP of aggregated replicas
        splits by class, each on its cheapest candidate per request/s, and is linear in the
        scale. Prefill/decode pools serve a class only in pairs, so there the LP itself is
        solved once (`ScaledFleet.lp_slope`): an API below it never breaks even, no scan."""
        closed = self._closed_form_slope()
        if not disagg.has_roles(self.problem) or not scaled.supported(self.problem, self.options):
            return closed
        if self._lp_slope is None:
            self._lp_slope = self._model().lp_slope()
        return max(closed, self._lp_slope)

    def _model(self) -> scaled.ScaledFleet:
        if self._scaled is None:
            self._scaled = scaled.ScaledFleet(self.problem, self.options)
        return self._scaled

    def _closed_form_slope(self) -> float:
        p = self.problem
        return float(np.dot(p.demand, cheapest_per_request(p))) if len(p.demand) else 0.0

    def fill(self, scales: np.ndarray) -> None:
        """Costs at many scales from a handful of solves: the ends first, then halves of
        the range until each part is one flat step (or two neighbouring scales)."""
        keys = sorted({round(float(s), 12) for s in scales})
        if not keys:
            return
        self(keys[0])
        self(keys[-1])
        stack = [(0, len(keys) - 1)]
        while stack:
            i, j = stack.pop()
            if j - i < 2 or self(keys[i]) == self(keys[j]):
                continue
            mid = (i + j) // 2
            self(keys[mid])
            stack += [(i, mid), (mid, j)]
        for k in keys:
            self(k)


class TimeSelfCost:
    """The plan over time's average $ a month as a function of a demand scale (every
    period's demand x scale), memoised; also the statuses of those solves."""

    def __init__(self, problem: TimeProblem, months: int, options: SolverOptions) -> None:
        self.problem = replace(problem, inventory={})  # break-even asks any volume
        self.months = months
        # a break-even volume is found to BREAK_EVEN_TOL: its plans need no tighter gap (#13:
        # solved to 0.01%, a third of them ran to the time limit and compare took 21 s)
        self.options = replace(options, relative_gap=max(options.relative_gap, BREAK_EVEN_TOL))
        self.cache: dict[float, float] = {}
        self.stopped = 0  # solves that ended at the time limit (incumbent, not proven)
        self.walked_out = 0  # break-even volumes the grid scan found after WALK_PLANS plans
        # per walk-out, the scale below which the walk proved nothing crosses (issue 16)
        self.walk_floors: list[float] = []
        self.walk_notes: list[str] = []  # each walk-out named, in req/s (_compare_over_time)
        self._lower_slope: float | None = None
        self.seconds = 0.0  # spent in those solves

    def __call__(self, scale: float) -> float:
        key = round(float(scale), 12)
        if key not in self.cache:
            from planner.fleet.overtime import solve_time

            scaled = replace(self.problem, demand=self.problem.demand * float(scale))
            sol = solve_time(scaled, self.options)
            self.stopped += sol.status == "time_limit"
            self.seconds += sol.solve_seconds
            cost = sol.total_cost if sol.status != "infeasible" else math.inf
            self.cache[key] = cost / self.months
        return self.cache[key]

    def know(self, tp: TimePlan) -> None:
        """Scale 1 is the plan over time itself when nothing was left out of its problem (no
        inventory): its solved cost, with no solve again."""
        if not tp.problem.inventory and tp.solution.status == "optimal":
            self.cache.setdefault(1.0, tp.solution.total_cost / self.months)

    def lower_slope(self) -> float:
        """$ a month per unit of scale that no plan can beat: the LP relaxation without the
        redundancy floor is linear in the scale, and the MIP costs at least that. Solved once
        (every API's comparison asks)."""
        if self._lower_slope is None:
            from planner.fleet.overtime import build_time_model

            free = replace(self.problem, min_replicas=0)
            model, _ = build_time_model(free, integer=False)
            relaxed = solve(model, self.options)
            ok = relaxed.status == "optimal"
            self._lower_slope = relaxed.objective / self.months if ok else 0.0
        return self._lower_slope


def break_even_over_time(
    self_cost: TimeSelfCost, api_monthly_at_1: float, rel_tol: float = BREAK_EVEN_TOL
) -> float | None:
    """The smallest demand scale at which the plan over time costs no more than the API: the
    walk of `break_even_scale` on the plans' costs (each solved to BREAK_EVEN_TOL), for at
    most WALK_PLANS plans, then the grid scan from where the walk stopped.

    No crossing when the API's slope is below the LP's (`TimeSelfCost.lower_slope`). The cost
    is nondecreasing in the scale, so a scale s costing c above the line leaves every scale in
    [s, c / slope) above it too, and the walk moves there; where it stops at a scale whose
    plan costs no more than the API, that is the first crossing (issue 16: the grid scan
    skipped to the next grid point, and false position took a later crossing in its
    bracket: diurnal-chatbot against AWS Bedrock, 2.723 req/s where 2.666 wins). A line
    nearly parallel to the cost makes the walk long (owned-fleet against OpenRouter: 124
    plans, 45 s); past WALK_PLANS the grid scan answers, and `walked_out` counts it."""
    slope = api_monthly_at_1
    if slope <= self_cost.lower_slope():
        return None
    scale, top = float(SCALES[0]), float(SCALES[-1])
    for _ in range(WALK_PLANS):
        if scale > top:
            return None
        meet = self_cost(scale) / slope
        if meet <= scale:
            return scale
        if not math.isfinite(meet):
            return None
        scale = meet
    self_cost.walked_out += 1
    self_cost.walk_floors.append(scale)
    return _grid_scan(self_cost, slope, scale, rel_tol)


def _grid_scan(self_cost: TimeSelfCost, slope: float, start: float, rel_tol: float) -> float | None:
    """A crossing above `start` (none below it): the grid points above it in turn, skipping
    those below cost / slope, then false position in the first bracket that crosses."""
    previous, skip_to = start, start
    for scale in (start, *(float(s) for s in SCALES if s > start)):
        if scale < skip_to:
            continue
        cost = self_cost(scale)
        if cost <= slope * scale:
            if scale == start:
                return scale
            return _false_position(self_cost, slope, previous, scale, rel_tol)
        previous, skip_to = scale, cost / slope
    return None


def _false_position(
    self_cost: TimeSelfCost, slope: float, lo: float, hi: float, rel_tol: float, tries: int = 6
) -> float:
    """The crossing in (lo, hi] of a cost that is nearly linear there (the plan over time
    rents by the hour, no flat steps): the secant's root, with the Illinois halving so each
    end moves; stops within `rel_tol` of the API line or of the bracket (#13: the step walk
    of `_refine` took ten plans over time here)."""
    g_lo, g_hi = self_cost(lo) - slope * lo, self_cost(hi) - slope * hi
    for _ in range(tries):
        if hi - lo <= rel_tol * hi:
            break
        mid = min(max(hi - g_hi * (hi - lo) / (g_hi - g_lo), lo), hi)
        g_mid = self_cost(mid) - slope * mid
        if abs(g_mid) <= rel_tol * slope * mid and g_mid <= 0:
            return mid
        if g_mid <= 0:
            hi, g_hi, g_lo = mid, g_mid, g_lo / 2
        else:
            lo, g_lo, g_hi = mid, g_mid, g_hi / 2
    return hi


def break_even_scale(
    self_cost: SelfCost, api_per_hour_at_1: float, average_factor: float
) -> float | None:
    """The smallest demand scale in [SCALES[0], SCALES[-1]] at which self-hosting costs no
    more than the API (None: nowhere), exactly: a walk up the fleet's cost steps.

    Proof: the cost is nondecreasing in demand, so once a scale s costs c > slope x s every
    scale in [s, c / slope) costs at least c and lies above the line: no crossing; the walk
    moves to c / slope, where the line meets that cost. It stops at the first scale whose
    cost is on or under the line, so nothing below it crosses (issue 16: the grid scan
    skipped to the next grid point and missed windows between two). Where c / slope is
    within reach of s's fleet (`SelfCost.reach`) the cost there is c, so it is the crossing
    with no solve. Each step lands on a strictly dearer fleet, so the walk ends; exact for
    the MIP's costs, which are optimal to the solver's relative gap, to EDGE_MARGIN (each
    step probes that far past c / slope, beyond the MIP's feasibility tolerance at a step's
    edge, and a crossing inside that sliver is reported at its end). A walk of WALK_STEPS
    (the line nearly parallel to the cost) jumps to a MIP's proven bound on the first
    crossing (`SelfCost.first_crossing`): nothing crosses below it, so the proof holds.
    """
    slope = api_per_hour_at_1 * average_factor
    if slope < self_cost.lower_slope() * (1 - 1e-9):  # the line stays below every fleet
        return None
    since = scale = float(SCALES[0])  # nothing below `since` crosses; `scale` is probed
    top, steps = float(SCALES[-1]), 0
    while since <= top:
        meet = self_cost(scale) / slope  # where the line meets this scale's cost
        if meet <= scale:  # on or under the line here: the crossing is in [since, meet]
            return max(since, meet)
        if not math.isfinite(meet):  # no fleet from here on (an inventory limit)
            return None
        if meet <= self_cost.reach(scale) and meet <= top:  # the same fleet carries `meet`
            return meet
        since, steps = meet, steps + 1
        if steps == WALK_STEPS and since <= top:  # a long walk: one MIP jumps to its end
            bound = self_cost.first_crossing(slope, since, top)
            since = since if bound is None else max(since, bound)
        # probed a little past `since`: a MIP at a step's very edge may take a fleet that
        # carries it only to the solver's feasibility tolerance (the line at the LP slope)
        scale = since * (1 + EDGE_MARGIN)
    return None


def compare(
    plan: Plan,
    self_cost: SelfCost | TimeSelfCost | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Comparison]:
    """Every API offering against the plan, with break-even volumes, cheapest API first."""
    if plan.problem is None:
        return []
    if plan.over_time is not None:
        return _compare_over_time(plan, plan.over_time, self_cost, progress)
    average_factor = plan.average_demand_factor
    tokens = class_tokens(plan)
    rates = tokens.rates
    tokens_per_s = float((rates * (tokens.inputs + tokens.outputs)).sum())
    self_monthly = plan.self_hosted_monthly_usd
    if not isinstance(self_cost, SelfCost):
        self_cost = SelfCost(plan.problem, plan.solver)
        self_cost.know(plan)
    out = []
    for quote in plan.api_quotes:
        if progress is not None:
            progress(1)
        api_hour = api_cost_per_hour(quote, tokens)
        scale = break_even_scale(self_cost, api_hour, average_factor)
        out.append(
            Comparison(
                quote=quote,
                api_cost_per_request_usd=api_hour / SECONDS_PER_HOUR / rates.sum(),
                api_monthly_usd=api_hour * average_factor * HOURS_PER_MONTH,
                self_monthly_usd=self_monthly,
                break_even_peak_requests_per_s=None if scale is None else scale * rates.sum(),
                break_even_tokens_per_month=None
                if scale is None
                else scale * tokens_per_s * average_factor * SECONDS_PER_HOUR * HOURS_PER_MONTH,
            )
        )
    return out


def _compare_over_time(
    plan: Plan,
    tp: TimePlan,
    self_cost: SelfCost | TimeSelfCost | None,
    progress: Callable[[int], None] | None,
) -> list[Comparison]:
    """Every API against the plan over time: both averaged a month over the horizon; the
    break-even scales every month's demand and re-solves the plan over time."""
    rates = class_tokens(plan).rates
    months = tp.horizon_months
    tokens_per_month = sum(m.input_tokens + m.output_tokens for m in tp.monthly) / months
    requests = sum(m.avg_requests_per_s for m in tp.monthly) / months * SECONDS_PER_HOUR
    if not isinstance(self_cost, TimeSelfCost):
        self_cost = TimeSelfCost(tp.problem, months, plan.solver)
        self_cost.know(tp)
    self_monthly = plan.self_hosted_monthly_usd
    out = []
    for quote in plan.api_quotes:
        if progress is not None:
            progress(1)
        api_monthly = tp.api_monthly_usd(quote)
        walked_out = self_cost.walked_out
        scale = break_even_over_time(self_cost, api_monthly)
        if self_cost.walked_out > walked_out:
            self_cost.walk_notes.append(
                _walk_out_note(quote, self_cost, api_monthly, rates.sum(), scale)
            )
        out.append(
            Comparison(
                quote=quote,
                api_cost_per_request_usd=api_monthly / (requests * HOURS_PER_MONTH),
                api_monthly_usd=api_monthly,
                self_monthly_usd=self_monthly,
                break_even_peak_requests_per_s=None if scale is None else scale * rates.sum(),
                break_even_tokens_per_month=None if scale is None else scale * tokens_per_month,
            )
        )
    return out


def _walk_out_note(
    quote: ApiQuote, cost: TimeSelfCost, api_monthly: float, peak: float, scale: float | None
) -> str:
    """What a walk-out proves (issue 16): nothing below the walk's last scale crosses; the grid
    scan's volume is a crossing, not surely the first. Near-parallel lines are why: the API's
    $/month per unit of demand against the least any plan pays (the LP's)."""
    floor = cost.walk_floors[-1] * peak
    found = "none in range" if scale is None else f"{scale * peak:.4g} req/s"
    lp = cost.lower_slope()
    above = api_monthly / lp - 1 if lp > 0 else math.inf
    closeness = (
        f"; the API's price per unit of demand is {100 * above:.2g}% above the least any plan "
        f"pays (the LP's), about the {100 * cost.options.relative_gap:g}% gap the plans are "
        "solved to, so the two costs stay that close over a wide range of volumes"
        if above <= 2 * cost.options.relative_gap
        else ""
    )
    return (
        f"break-even vs {quote.provider}: the walk proved no volume below {floor:.4g} req/s "
        f"crosses; after {WALK_PLANS} plans the grid scan found {found}, a crossing that may "
        f"not be the first{closeness}"
    )


def class_tokens(plan: Plan) -> ClassTokens:
    """Peak requests/s, input, prefix-cached and output tokens per class."""
    return ClassTokens(
        rates=np.array([c.requests_per_second for c in plan.classes], float),
        inputs=np.array([c.input_tokens for c in plan.classes], float),
        cached=np.array([c.prefix_cached_tokens for c in plan.classes], float),
        outputs=np.array([c.output_tokens for c in plan.classes], float),
    )


CURVE_SCALES = SCALES[(SCALES >= 0.05) & (SCALES <= 20.0)]  # grid points: shared solves
# issue 16: the chart draws every grid point (10 a decade) while the fleet is small, where its
# steps show, and every third (a factor 2) once it has DENSE_REPLICAS replicas, where a step is
# a few % of the cost and the line is nearly straight on the log-log chart; each point drawn is
# still its own exact MIP (rag: the 7 largest of 27 MIPs were 2/3 of the analysis' CPU time)
DENSE_REPLICAS = 12
SPARSE_STRIDE = 3


def curve_scales(cost: SelfCost, scales: np.ndarray = CURVE_SCALES) -> np.ndarray:
    """The scales the chart draws: all of `scales` below the first whose fleet holds
    DENSE_REPLICAS replicas, then every SPARSE_STRIDE-th down from the last. Replicas grow
    about linearly with the scale, so the top point's fleet says where that is without a
    solve per point."""
    if len(scales) < 2:
        return scales
    top = float(scales[-1])
    if not math.isfinite(cost(top)):
        return scales
    reps = cost.replicas_near(top)
    if reps is None or reps < DENSE_REPLICAS:
        return scales
    dense = scales * reps / top < DENSE_REPLICAS
    first = int(np.argmin(dense)) if not dense.all() else len(scales)
    tail = np.arange(len(scales) - 1, first - 1, -SPARSE_STRIDE)  # down from the last
    return scales[distinct(np.concatenate([np.arange(first), tail])).astype(int)]


def cost_curves(
    plan: Plan,
    quote: ApiQuote,
    self_cost: SelfCost | None = None,
    scales: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Monthly self-host and API cost against peak requests/s, for the break-even chart
    (at `curve_scales` unless `scales` are given)."""
    assert plan.problem is not None, "a plan without a fleet problem has no cost curve"
    cost = self_cost or SelfCost(plan.problem, plan.solver)
    scales = curve_scales(cost) if scales is None else scales
    tokens = class_tokens(plan)
    api_hour = api_cost_per_hour(quote, tokens)
    volume = scales * tokens.rates.sum()
    cost.fill(scales)
    own = np.array([cost(s) for s in scales])
    api = api_hour * plan.average_demand_factor * scales * HOURS_PER_MONTH
    return volume, own * HOURS_PER_MONTH, api


TIME_CURVE_SCALES = np.geomspace(0.25, 4.0, 5)  # plans over time drawn besides the cached ones


def time_cost_curve(
    plan: Plan, self_cost: TimeSelfCost, scales: np.ndarray = TIME_CURVE_SCALES
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plan over time's average $/month against peak requests/s (every period's demand
    scaled), at a few scales plus every scale the break-even search already solved within
    the chart's range; and the cheapest API's line on the same basis (#13: the chart drew
    the peak fleet 24/7 while compare priced the plan over time)."""
    tp = plan.over_time
    assert tp is not None, "a time cost curve needs a plan over time"
    done = [k for k in self_cost.cache if CURVE_SCALES[0] <= k <= CURVE_SCALES[-1]]
    keys = np.array(sorted({*(round(float(s), 12) for s in scales), *done}))
    own = np.array([self_cost(float(k)) for k in keys])
    api = tp.api_monthly_usd(plan.api_quotes[0]) * keys
    return keys * plan.total_requests_per_s, own, api


@dataclass(frozen=True)
class BuildVsBuy:
    """Every comparison and the chart's curves, from one shared set of fleet solves."""

    comparisons: list[Comparison]
    curves: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    notes: tuple[str, ...] = ()  # what could not be computed, and why
    api_curves: dict[str, np.ndarray] = field(default_factory=dict)  # every API, $/month
    # what the self-hosted line is: a step function of the peak fleet, or the plan over time
    self_label: str = "self-hosted (optimal fleet re-solved, 24/7)"
    stepwise: bool = True

    @property
    def crossing(self) -> tuple[str, ...]:
        """The APIs whose line crosses the self-hosted curve within the chart's range."""
        if self.curves is None:
            return ()
        own = self.curves[1]
        return tuple(
            label
            for label, api in self.api_curves.items()
            if (api > own).any() and (api < own).any()
        )

    @property
    def chart_title(self) -> str:
        """What the break-even chart shows: a crossing, or that the lines never cross and
        which side of the self-hosted line each API stays on (some may lie below it, some
        above: then how many of each, not that self-hosting is cheaper)."""
        if self.crossing:
            return "Build vs buy: where self-hosting becomes cheaper"
        cheaper, dearer = self.sides()
        if not cheaper and not dearer:  # no API line drawn, or each equal to self-hosting
            return "Build vs buy: the lines never cross in this range"
        if cheaper and not dearer:
            who = "every API is cheaper"
        elif dearer and not cheaper:
            who = "self-hosting is cheaper"
        else:
            return (
                f"Build vs buy: the lines never cross in this range: {_apis(cheaper)} "
                f"cheaper throughout, {dearer} dearer"
            )
        return f"Build vs buy: the lines never cross in this range ({who})"

    def sides(self) -> tuple[int, int]:
        """APIs whose line lies below the self-hosted one somewhere (and never above it),
        and those above it somewhere: the (cheaper, dearer) counts of lines that never cross
        (a line equal to self-hosting throughout counts as neither)."""
        if self.curves is None:
            return 0, 0
        own, crossing = self.curves[1], set(self.crossing)
        lines = [api for label, api in self.api_curves.items() if label not in crossing]
        cheaper = sum(bool((api < own).any()) for api in lines)
        dearer = sum(bool((api > own).any()) for api in lines)
        return cheaper, dearer


def _apis(n: int) -> str:
    """'1 API', '3 APIs': a count of API lines."""
    return f"{n} API" if n == 1 else f"{n} APIs"


def api_curves(plan: Plan, volume: np.ndarray) -> dict[str, np.ndarray]:
    """Every API's bill a month at the chart's peak volumes (linear in the volume), labelled
    "provider model id", on the same basis as `compare`."""
    peak = plan.total_requests_per_s
    out: dict[str, np.ndarray] = {}
    for q in plan.api_quotes:
        out.setdefault(
            f"{q.provider} {q.provider_model_id}", plan.api_monthly_usd(q) * volume / peak
        )
    return out


def analyse(plan: Plan, progress: Callable[[int], None] | None = None) -> BuildVsBuy:
    """Break-even volumes for every API offering and the cost curves against the cheapest,
    sharing the memoised fleet solves between them. `progress(n)` is told of each offering
    done (for a progress bar)."""
    if plan.problem is None or not plan.api_quotes:
        return BuildVsBuy([], None)
    cost = SelfCost(plan.problem, plan.solver)
    cost.know(plan)
    over_time = None
    if plan.over_time is not None:
        tp = plan.over_time
        over_time = TimeSelfCost(tp.problem, tp.horizon_months, plan.solver)
        over_time.know(tp)
    try:
        rows = compare(plan, over_time or cost, progress)
    except SolverError as err:
        return BuildVsBuy([], None, (f"break-even volumes not computed: {err.message}",))
    try:
        if over_time is not None:
            curves = time_cost_curve(plan, over_time)
        else:
            curves = cost_curves(plan, plan.api_quotes[0], cost)
    except SolverError as err:
        notes = (*_stopped_note(over_time), f"self-host vs API chart not drawn: {err.message}")
        return BuildVsBuy(rows, None, notes)
    notes = (*_stopped_note(over_time), *_recrossing_notes(plan, rows, over_time or cost))
    if over_time is None:
        # a thinned tail is drawn point to point (as the workbook's chart draws every curve):
        # a step held over a factor 2 would show costs no fleet has (issue 16)
        every = len(curves[0]) == len(CURVE_SCALES)
        return BuildVsBuy(rows, curves, notes, api_curves(plan, curves[0]), stepwise=every)
    months = over_time.months
    label = f"self-hosted (plan over time re-solved, average of {months} months)"
    return BuildVsBuy(rows, curves, notes, api_curves(plan, curves[0]), label, stepwise=False)


def _recrossing_notes(
    plan: Plan, rows: list[Comparison], cost: SelfCost | TimeSelfCost
) -> tuple[str, ...]:
    """Say why an API is cheaper at this demand though its break-even lies below it: the
    break-even is the least volume at which self-hosting costs no more, and the fleet's cost
    rises in whole replicas, so it can cross a close API's line again above it (chatbot
    against Nebius: no dearer at 8.14 req/s, $213/month dearer at 20); or the plan keeps
    limits the re-planned fleets leave out (the GPU cap, the budget, owned inventory)."""
    peak = plan.total_requests_per_s
    notes = []
    for r in rows:
        below = r.break_even_peak_requests_per_s
        if below is None or below > peak * (1 + 1e-9) or not r.api_is_cheaper:
            continue
        at_peak = cost(1.0) * (HOURS_PER_MONTH if isinstance(cost, SelfCost) else 1.0)
        why = (
            "the plan keeps limits the break-even's re-planned fleets leave out (the GPU cap, "
            f"the budget, owned inventory); re-planned without them it costs "
            f"${at_peak:,.0f}/month here"
            if at_peak <= r.api_monthly_usd
            else "the fleet grows by whole replicas, so its cost steps across this API's line "
            "more than once above the break-even"
        )
        notes.append(
            f"{r.quote.provider} {r.quote.provider_model_id}: self-hosting first costs no more "
            f"than this API at "
            f"{below:,.2f} req/s, yet at this demand ({peak:,.4g} req/s) the API is cheaper by "
            f"${r.self_monthly_usd - r.api_monthly_usd:,.0f}/month: {why}"
        )
    return tuple(notes)


def _stopped_note(cost: TimeSelfCost | None) -> tuple[str, ...]:
    """Say how many of the break-even plans over time stopped at the time limit, and how many
    volumes the grid scan found once the walk ran long (an earlier crossing may exist)."""
    if cost is None:
        return ()
    notes = []
    if cost.stopped:
        notes.append(
            f"{cost.stopped} of {len(cost.cache)} break-even plans over time stopped at the "
            f"solver's limit ({cost.options.max_nodes} nodes or "
            f"{cost.options.time_limit_s:g} s): their cost is the best plan found, not proven "
            "optimal (raise solver.max_nodes)"
        )
    if cost.walked_out and not cost.walk_notes:  # walked out outside _compare_over_time
        notes.append(
            f"{cost.walked_out} break-even volume(s) over time from the grid scan after "
            f"{WALK_PLANS} plans of the exact walk (the API's line runs close to the plan's "
            "cost): a crossing at a lower volume may exist"
        )
    notes.extend(cost.walk_notes)
    return tuple(notes)
