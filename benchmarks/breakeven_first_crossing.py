"""Is each reported break-even volume the first crossing? A brute-force reference (issue 16).

For every shipped single-period scenario with API quotes: the optimal fleet's $/h on a fine
geometric scan of the demand scale, each interval whose ends differ bisected until it is
flat or narrower than EDGE_TOL (relative), so every step of the cost is found; on each flat
piece [a, b] of cost c the API line first meets it at max(a, c / slope) if that is <= b.
Every cost is its own MIP on the break-even's problem (`SelfCost`'s model, no flat-step
shortcut), so the reference shares nothing with the search but the MIP.

With `--over-time`, every shipped scenario with a `finance:` section instead: the reported
break-even (`break_even_over_time`, the walk for WALK_PLANS plans, then the grid scan) against
the walk run to its end with no plan budget (exact for the plans' costs: a scale whose plan
costs c above the line leaves [s, c / slope) above it, so every scale below where it stops is
proven above the line), and the first-crossing MIP's bound (`fleet.overtime_crossing`) from
where the walk stands after JUMP_AFTER plans, with its CPU (issue 16: is it worth a jump?).

    python benchmarks/breakeven_first_crossing.py [--over-time] [scenario ...]
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from planner import load_catalog, load_scenario, plan
from planner.fleet.overtime_crossing import first_crossing as time_first_crossing
from planner.planning import breakeven
from planner.planning.breakeven import SCALES, SelfCost, TimeSelfCost

ROOT = Path(__file__).resolve().parent.parent
POINTS_PER_DECADE = 200
EDGE_TOL = 1e-9
JUMP_AFTER = 3  # walk plans before the first-crossing MIP is tried (--over-time)


class Brute:
    """The MIP's cost at any scale, memoised, never inferred from neighbours."""

    def __init__(self, cost: SelfCost) -> None:
        self.cost = cost
        self.memo: dict[float, float] = {}

    def __call__(self, s: float) -> float:
        if s not in self.memo:
            self.memo[s] = self.cost._solve(s)
        return self.memo[s]


def first_crossing(f: Brute, slope: float, top: float) -> float | None:
    """The smallest scale in [SCALES[0], top] where f(s) <= slope * s, or None."""
    lo = float(SCALES[0])
    if f(lo) <= slope * lo:
        return lo
    n = int(np.ceil(np.log10(top / lo) * POINTS_PER_DECADE)) + 1
    grid = [float(s) for s in np.geomspace(lo, top, n)]
    for a, b in zip(grid, grid[1:], strict=False):
        hit = _first_in(f, slope, a, b)
        if hit is not None:
            return hit
    return None


def _first_in(f: Brute, slope: float, a: float, b: float) -> float | None:
    """The first crossing in (a, b], with f(a) > slope * a known."""
    if f(a) == f(b):  # one flat step over [a, b]: the line meets it at c / slope
        meet = max(a, f(a) / slope)
        return meet if meet <= b else None
    if b - a <= EDGE_TOL * b:  # an edge: b is on the higher step
        return b if f(b) <= slope * b else None
    mid = (a + b) / 2
    hit = _first_in(f, slope, a, mid)
    if hit is not None:
        return hit
    if f(mid) <= slope * mid:
        return mid
    return _first_in(f, slope, mid, b)


def check(path: Path, catalog) -> list[str]:
    """One scenario's comparisons: reported break-even, brute-force first crossing, solves."""
    scenario, cat = load_scenario(path, catalog)
    result = plan(scenario, cat)
    if result.problem is None or not result.api_quotes or result.over_time is not None:
        return []
    tokens = breakeven.class_tokens(result)
    lines = []
    for quote in result.api_quotes:
        search = SelfCost(result.problem, result.solver)
        search.know(result)
        api = breakeven.api_cost_per_hour(quote, tokens)
        slope = api * result.average_demand_factor
        t0 = time.process_time()
        found = breakeven.break_even_scale(search, api, result.average_demand_factor)
        cpu = time.process_time() - t0
        brute = Brute(SelfCost(result.problem, result.solver))
        top = float(SCALES[-1]) if found is None else found * (1 + 1e-6)
        if slope < search.lower_slope() * (1 - 1e-9):
            ref = None  # the LP bound: no fleet is below the line anywhere
        else:
            ref = first_crossing(brute, slope, min(top, float(SCALES[-1])))
        total = float(tokens.rates.sum())
        fmt = lambda s, t=total: "none" if s is None else f"{s * t:.6g}"  # noqa: E731
        rel = "" if found is None or ref is None else f"{found / ref - 1:+.3e}"
        lines.append(
            f"{path.stem:22s} {quote.provider:14s} {quote.provider_model_id[:34]:34s} "
            f"found {fmt(found):>10s} brute {fmt(ref):>10s} {rel:>11s} "
            f"solves {search.solves:3d} cpu {cpu:.3f} brute_mips {len(brute.memo)}"
        )
        print(lines[-1], flush=True)
    return lines


def exact_walk(cost: TimeSelfCost, slope: float) -> tuple[float | None, int]:
    """The break-even walk over time with no plan budget: where it stops, and its plans."""
    scale, top, plans = float(SCALES[0]), float(SCALES[-1]), 0
    while scale <= top:
        plans += 1
        meet = cost(scale) / slope
        if meet <= scale:
            return scale, plans
        if not math.isfinite(meet):
            return None, plans
        scale = meet
    return None, plans


def check_over_time(path: Path, catalog) -> list[str]:
    """One plan over time's comparisons: reported, exact walk, the MIP bound and its CPU."""
    scenario, cat = load_scenario(path, catalog)
    result = plan(scenario, cat)
    tp = result.over_time
    if tp is None or not result.api_quotes:
        return []
    peak, lines = result.total_requests_per_s, []
    for quote in result.api_quotes:
        slope = tp.api_monthly_usd(quote)
        search = TimeSelfCost(tp.problem, tp.horizon_months, result.solver)
        search.know(tp)
        t0 = time.process_time()
        found = breakeven.break_even_over_time(search, slope)
        cpu = time.process_time() - t0
        walk = TimeSelfCost(tp.problem, tp.horizon_months, result.solver)
        walk.know(tp)
        scale, jump, jump_cpu = float(SCALES[0]), math.nan, 0.0
        for _ in range(JUMP_AFTER):  # where the walk stands after JUMP_AFTER plans
            scale = max(scale, walk(scale) / slope)
        if slope > walk.lower_slope():
            t1 = time.process_time()
            budget = slope * walk.months
            jump = time_first_crossing(walk.problem, budget, scale, float(SCALES[-1]), walk.options)
            jump_cpu = time.process_time() - t1
        t2 = time.process_time()
        ref, plans = exact_walk(walk, slope) if slope > walk.lower_slope() else (None, 0)
        ref_cpu = time.process_time() - t2
        fmt = lambda s: "none" if s is None else f"{s * peak:.6g}"  # noqa: E731
        rel = "" if found is None or ref is None else f"{found / ref - 1:+.3e}"
        lines.append(
            f"{path.stem:16s} {quote.provider:12s} {quote.provider_model_id[:30]:30s} "
            f"found {fmt(found):>9s} (cpu {cpu:6.2f}, walked out {search.walked_out}) "
            f"exact walk {fmt(ref):>9s} {rel:>11s} ({plans} plans, cpu {ref_cpu:6.1f}) "
            f"MIP bound from {fmt(scale)}: {fmt(jump)} (cpu {jump_cpu:.2f})"
        )
        print(lines[-1], flush=True)
    return lines


def main(names: list[str]) -> None:
    over_time = "--over-time" in names
    names = [n for n in names if n != "--over-time"]
    catalog = load_catalog()
    paths = sorted((ROOT / "scenarios").glob("*.yaml"))
    if names:
        paths = [p for p in paths if p.stem in names]
    for p in paths:
        if over_time:
            check_over_time(p, catalog)
        else:
            check(p, catalog)


if __name__ == "__main__":
    main(sys.argv[1:])
