"""Is each reported break-even volume the first crossing? A brute-force reference (issue 16).

For every shipped single-period scenario with API quotes: the optimal fleet's $/h on a fine
geometric scan of the demand scale, each interval whose ends differ bisected until it is
flat or narrower than EDGE_TOL (relative), so every step of the cost is found; on each flat
piece [a, b] of cost c the API line first meets it at max(a, c / slope) if that is <= b.
Every cost is its own MIP on the break-even's problem (`SelfCost`'s model, no flat-step
shortcut), so the reference shares nothing with the search but the MIP.

    python benchmarks/breakeven_first_crossing.py [scenario ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from planner import load_catalog, load_scenario, plan
from planner.planning import breakeven
from planner.planning.breakeven import SCALES, SelfCost

ROOT = Path(__file__).resolve().parent.parent
POINTS_PER_DECADE = 200
EDGE_TOL = 1e-9


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
    rates, inputs, outputs = breakeven._class_arrays(result)
    lines = []
    for quote in result.api_quotes:
        search = SelfCost(result.problem, result.solver)
        search.know(result)
        api = breakeven.api_cost_per_hour(quote, rates, inputs, outputs)
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
        total = float(rates.sum())
        fmt = lambda s, t=total: "none" if s is None else f"{s * t:.6g}"  # noqa: E731
        rel = "" if found is None or ref is None else f"{found / ref - 1:+.3e}"
        lines.append(
            f"{path.stem:22s} {quote.provider:14s} {quote.provider_model_id[:34]:34s} "
            f"found {fmt(found):>10s} brute {fmt(ref):>10s} {rel:>11s} "
            f"solves {search.solves:3d} cpu {cpu:.3f} brute_mips {len(brute.memo)}"
        )
        print(lines[-1], flush=True)
    return lines


def main(names: list[str]) -> None:
    catalog = load_catalog()
    paths = sorted((ROOT / "scenarios").glob("*.yaml"))
    if names:
        paths = [p for p in paths if p.stem in names]
    for p in paths:
        check(p, catalog)


if __name__ == "__main__":
    main(sys.argv[1:])
