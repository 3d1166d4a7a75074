"""Which MIP backend to default to: every shipped scenario planned with CBC and with HiGHS.

Prints, per scenario and backend, the plan's wall time (best of --repeat runs), the status
and cost of the peak fleet and of the plan over time. The README's "Solver" table comes
from this script: `python benchmarks/solver_choice.py`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from planner import load_catalog, load_scenario, plan
from planner.errors import PlannerError

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("cbc", "highs")


def run(path: Path, backend: str, repeat: int) -> tuple[float, str]:
    """Best wall time of `repeat` plans, and what the last one found."""
    scenario, catalog = load_scenario(path, load_catalog())
    solver = scenario.solver.model_copy(update={"backend": backend})
    scenario = scenario.model_copy(update={"solver": solver})
    best, found = float("inf"), ""
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            result = plan(scenario, catalog)
        except PlannerError as err:
            return time.perf_counter() - start, f"error: {err.message[:60]}"
        best = min(best, time.perf_counter() - start)
        found = f"{result.fleet.status} ${result.fleet.total_cost_per_hour_usd:,.2f}/h"
        if result.over_time is not None:
            ot = result.over_time
            found += f"; over time {ot.solution.status} (gap {ot.solution.gap:.1%})"
            found += f" ${ot.solution.total_cost:,.0f}"
    return best, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| scenario | " + " | ".join(f"{b} s | {b} result" for b in BACKENDS) + " |")
    print("|---|" + "---|---|" * len(BACKENDS))
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        cells = []
        for backend in BACKENDS:
            seconds, found = run(path, backend, args.repeat)
            cells += [f"{seconds:.2f}", found]
        print(f"| {path.stem} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
