"""Issue 14/16: CPU seconds of each Monte Carlo point of a sweep, one after another in this
process, with the plan over time's status and gap (what `planner sweep --samples N --vary
FILE --seed S` runs on every worker: `plan(scenario, catalog, comparisons=False)`).

    python benchmarks/mc_points.py [--samples 30] [--seed 1] [--scenario ...] [--vary ...]
"""

from __future__ import annotations

import argparse
import time

from planner.inputs.catalog import load_catalog
from planner.inputs.scenarios import load_scenario
from planner.inputs.sweep import load_vary
from planner.planning import sweep
from planner.planning.pipeline import plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="scenarios/diurnal-chatbot.yaml")
    parser.add_argument("--vary", default="benchmarks/diurnal-chatbot-vary.yaml")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    base, catalog = load_scenario(args.scenario, load_catalog())
    spec = sweep.SweepSpec(vary=load_vary(args.vary), samples=args.samples, seed=args.seed)
    _, _, points = spec.points()
    total, unproven = 0.0, 0
    print("| point | CPU s | plan over time | gap | $/month |")
    print("|---|---|---|---|---|")
    for point in points:
        scenario = sweep.apply(base, dict(point.overrides), catalog)
        t0 = time.process_time()
        result = plan(scenario, catalog, comparisons=False)
        cpu = time.process_time() - t0
        total += cpu
        over = result.over_time
        sol = over.solution if over else None
        status = sol.status if sol else "-"
        unproven += status not in ("optimal", "-")
        gap = f"{sol.gap:.2%}" if sol else "-"
        month = f"{sol.total_cost / over.horizon_months:,.0f}" if sol and over else "-"
        print(f"| {point.index} | {cpu:.2f} | {status} | {gap} | {month} |", flush=True)
    n = max(len(points), 1)
    print(f"\n{len(points)} points: {total:.1f} CPU s, {total / n:.2f} a point; ", end="")
    print(f"{unproven} not proven optimal")


if __name__ == "__main__":
    main()
