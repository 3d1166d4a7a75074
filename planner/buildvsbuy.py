"""Build vs buy: self-hosting on the optimal fleet against every API offering of the model.

The self-hosted fleet is sized for the peak and paid around the clock; an API is paid per
token of the traffic actually served. With a demand profile, the API bill follows the average
demand (the profile's mean times the peak), which is what makes a fleet sized for the peak
idle at night and the API relatively cheaper at low volume.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.optimize import FleetProblem, solve_fleet
from planner.schema.plan import ApiQuote, Plan
from planner.units import HOURS_PER_MONTH, SECONDS_PER_HOUR, TOKENS_PER_1M

SCALES = np.geomspace(1e-3, 1e3, 61)


@dataclass(frozen=True)
class Comparison:
    """One API offering against self-hosting, at the scenario's demand and at break-even."""

    quote: ApiQuote
    api_cost_per_request_usd: float
    api_monthly_usd: float
    self_monthly_usd: float
    break_even_peak_requests_per_s: float | None  # None: self-hosting never wins in range
    break_even_tokens_per_month: float | None


def api_cost_per_request(quote: ApiQuote, input_tokens: float, output_tokens: float) -> float:
    """Input and output tokens at the offering's per-1M prices."""
    return (input_tokens * quote.input_usd_per_1m + output_tokens * quote.output_usd_per_1m) / (
        TOKENS_PER_1M
    )


def api_cost_per_hour(
    quote: ApiQuote, rates: np.ndarray, inputs: np.ndarray, outputs: np.ndarray
) -> float:
    """$/h of serving `rates` requests/s per class through the API."""
    per_request = np.array(
        [api_cost_per_request(quote, i, o) for i, o in zip(inputs, outputs, strict=True)]
    )
    return float((rates * per_request).sum() * SECONDS_PER_HOUR)


class SelfCost:
    """The optimal fleet's $/h as a function of a demand scale, memoised: one MIP per scale,
    shared by every API offering's break-even search."""

    def __init__(self, problem: FleetProblem, backend: str = "cbc") -> None:
        self.problem, self.backend, self.cache = problem, backend, {}

    def __call__(self, scale: float) -> float:
        key = round(float(scale), 12)
        if key not in self.cache:
            p = self.problem
            scaled = FleetProblem(
                p.gpu,
                p.tp,
                p.cost_per_hour,
                p.capacity,
                p.demand * scale,
                p.inventory,
                None,
                None,
                p.min_replicas,
            )
            sol = solve_fleet(scaled, self.backend, 10.0)
            self.cache[key] = sol.cost_per_hour if sol.status != "infeasible" else math.inf
        return self.cache[key]


def break_even_scale(
    self_cost: SelfCost, api_per_hour_at_1: float, average_factor: float, rel_tol: float = 1e-4
) -> float | None:
    """The smallest demand scale at which self-hosting costs no more than the API.

    The fleet cost is a step function of demand; the API's is linear (at the average demand).
    Scan a geometric grid for the first scale where self-hosting wins, then bisect.
    """

    def gap(scale: float) -> float:
        return self_cost(scale) - api_per_hour_at_1 * average_factor * scale

    previous = None
    for scale in SCALES:
        if gap(scale) <= 0:
            if previous is None:
                return float(scale)
            lo, hi = previous, float(scale)
            while hi - lo > rel_tol * hi:
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if gap(mid) <= 0 else (mid, hi)
            return hi
        previous = float(scale)
    return None


def compare(
    plan: Plan, problem: FleetProblem, average_factor: float = 1.0, backend: str = "cbc"
) -> list[Comparison]:
    """Every API offering against the plan, with break-even volumes, cheapest API first."""
    rates = np.array([c.requests_per_second for c in plan.classes])
    inputs = np.array([c.input_tokens for c in plan.classes], float)
    outputs = np.array([c.output_tokens for c in plan.classes], float)
    tokens_per_s = float((rates * (inputs + outputs)).sum())
    self_monthly = plan.fleet.total_cost_per_hour_usd * HOURS_PER_MONTH
    self_cost = SelfCost(problem, backend)
    out = []
    for quote in plan.api_quotes:
        api_hour = api_cost_per_hour(quote, rates, inputs, outputs)
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


def cost_curves(
    problem: FleetProblem,
    plan: Plan,
    quote: ApiQuote,
    average_factor: float,
    scales: np.ndarray | None = None,
    backend: str = "cbc",
):
    """Monthly self-host and API cost against peak requests/s, for the break-even chart."""
    scales = np.geomspace(0.05, 20, 40) if scales is None else scales
    rates = np.array([c.requests_per_second for c in plan.classes])
    inputs = np.array([c.input_tokens for c in plan.classes], float)
    outputs = np.array([c.output_tokens for c in plan.classes], float)
    api_hour = api_cost_per_hour(quote, rates, inputs, outputs)
    volume = scales * rates.sum()
    cost = SelfCost(problem, backend)
    self_cost = np.array([cost(s) for s in scales])
    return (
        volume,
        self_cost * HOURS_PER_MONTH,
        api_hour * average_factor * scales * (HOURS_PER_MONTH),
    )
