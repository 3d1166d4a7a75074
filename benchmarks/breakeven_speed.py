"""The break-even analysis of one shipped scenario: how many fleet MIPs, reach LPs, jump MIPs
and plans over time `analyse()` solves, and its CPU s (median of 3, in process, after the
plan). Scenarios come from the checkout `planner` is imported from, so a second checkout on
PYTHONPATH measures the code before a change (issue 16):

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/breakeven_speed.py agent
    env -u PYTHONDONTWRITEBYTECODE PYTHONPATH=/tmp/base python benchmarks/breakeven_speed.py agent
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import planner
from planner import load_catalog, load_scenario, plan
from planner.fleet import scaled
from planner.planning import breakeven

ROOT = Path(planner.__file__).resolve().parent.parent
COUNTS = {"mip": 0, "lp": 0, "jump": 0, "time": 0}


def count(owner: object, name: str, key: str) -> None:
    """Count the calls of `owner.name` (skipped where the checkout has no such function)."""
    if not hasattr(owner, name):
        return
    original: Callable = getattr(owner, name)

    def counted(*args, **kwargs):
        COUNTS[key] += 1
        return original(*args, **kwargs)

    setattr(owner, name, counted)


def main(name: str) -> None:
    count(breakeven.SelfCost, "_solve", "mip")
    count(breakeven, "solve_time", "time")
    count(scaled.ScaledFleet, "reach", "lp")
    count(scaled.ScaledFleet, "first_crossing", "jump")
    path = ROOT / "scenarios" / f"{name}.yaml"
    scenario, catalog = load_scenario(path, load_catalog())
    result = plan(scenario, catalog)
    cpu = []
    for _ in range(3):
        COUNTS.update(dict.fromkeys(COUNTS, 0))
        start = time.process_time()
        analysis = breakeven.analyse(result)
        cpu.append(time.process_time() - start)
    volumes = [c.break_even_peak_requests_per_s for c in analysis.comparisons]
    shown = " ".join("-" if v is None else f"{v:.6g}" for v in volumes)
    print(
        f"{name:20s} mips {COUNTS['mip']:3d} lps {COUNTS['lp']:2d} jumps {COUNTS['jump']:2d} "
        f"time_plans {COUNTS['time']:3d} cpu {statistics.median(cpu):.3f} "
        f"notes {len(analysis.notes)} be {shown}",
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1])
