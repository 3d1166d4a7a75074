"""The platform-scale ladder of issue 16: plans over time of 1/3/5 request classes x 12/24/36
months x 17/24 GPU types (24 load slots a period), each solved once by `solve_time`.

Synthetic instances shaped like `planning.timeplan` builds them (`fleet.synthetic`). Prints one
Markdown row a rung: model size, CPU seconds, status, the gap against the solver's own bound,
and the seconds as a ratio to the time of `python -c "import numpy"` measured in the same run
(so the figures compare across machines). Slow: the largest rungs take tens of seconds.

    python benchmarks/ladder.py [--quick] [--time-limit S] [--rungs 3x24x17,...] [--seed N]
    python benchmarks/ladder.py --rounding --seeds 0-4   # the platform-scale path alone

`--rounding` times `solve_by_rounding` alone (the aggregated LP, the rounding and its period
repair) on every rung's instances that take that path (ROUND_COLUMNS columns or more), one row
a seed: whether it closes within the gap by itself (`benchmarks/results/ladder-repair-s34.md`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from planner.fleet.overtime import ROUND_COLUMNS, build_time_model, solve_time
from planner.fleet.overtime_round import solve_by_rounding
from planner.fleet.solver import SolverOptions
from planner.fleet.synthetic import synthetic_time_problem

RUNGS = [(c, m, g) for g in (17, 24) for c in (1, 3, 5) for m in (12, 24, 36)]
QUICK = [(1, 12, 17), (3, 24, 17), (3, 24, 24)]


def numpy_baseline() -> float:
    """CPU seconds (user + system) of a child `python -c "import numpy"`: the unit."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import numpy"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def rung(
    classes: int, months: int, gpus: int, options: SolverOptions, seed: int = 0
) -> tuple[str, ...]:
    """One row: size, CPU seconds, status, gap."""
    problem = synthetic_time_problem(classes, months, gpus, seed=seed)
    model, _ = build_time_model(problem)
    t0 = time.process_time()
    sol = solve_time(problem, options)
    cpu = time.process_time() - t0
    return (
        f"{classes} x {months} x {gpus}",
        f"{model.n_cols:,} x {model.n_rows:,}",
        f"{cpu:.1f}",
        sol.status,
        f"{max(sol.total_cost - sol.lower_bound, 0.0) / sol.total_cost:.2%}",  # to the bound
        f"${sol.total_cost / 1e6:.2f}M",
    )


def rounding_row(
    classes: int, months: int, gpus: int, options: SolverOptions, seed: int
) -> tuple[str, ...] | None:
    """One row of the platform-scale path alone (None below its threshold): size, seed, status,
    gap to the aggregated LP's bound, CPU seconds."""
    problem = synthetic_time_problem(classes, months, gpus, seed=seed)
    model, lay = build_time_model(problem)
    if model.n_cols < ROUND_COLUMNS:
        return None
    t0 = time.process_time()
    out = solve_by_rounding(problem, model, lay, options)
    cpu = time.process_time() - t0
    if out is None:
        return (f"{classes} x {months} x {gpus}", str(seed), "none", "-", f"{cpu:.1f}")
    gap = (out.objective - out.bound) / out.objective
    return (f"{classes} x {months} x {gpus}", str(seed), out.status, f"{gap:.2%}", f"{cpu:.1f}")


def _seeds(text: str) -> list[int]:
    """'0-4' or '1,3' as seeds."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(v) for v in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three small rungs only")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--gap", type=float, default=0.01, help="relative gap to stop at")
    parser.add_argument("--rungs", help="e.g. 1x12x17,5x36x24 (classes x months x GPU types)")
    parser.add_argument("--seed", type=int, default=0, help="of the synthetic instances")
    parser.add_argument("--seeds", help="with --rounding: e.g. 0-4 or 1,3 (default: --seed)")
    parser.add_argument("--rounding", action="store_true", help="the platform-scale path alone")
    args = parser.parse_args()
    options = SolverOptions("highs", args.time_limit, relative_gap=args.gap)
    chosen = QUICK if args.quick else RUNGS
    if args.rungs:
        chosen = [tuple(int(v) for v in r.split("x")) for r in args.rungs.split(",")]
    if args.rounding:
        unit = numpy_baseline()
        print(f'baseline: python -c "import numpy" = {unit:.3f} CPU s; solver: {options}')
        print("| classes x months x GPUs | seed | status | gap | CPU s |")
        print("|---|---|---|---|---|")
        for c, m, g in chosen:
            for seed in _seeds(args.seeds) if args.seeds else [args.seed]:
                row = rounding_row(c, m, g, options, seed)
                if row is not None:
                    print("| " + " | ".join(row) + " |", flush=True)
        return
    unit = numpy_baseline()
    print(f'baseline: python -c "import numpy" = {unit:.3f} CPU s (ratios below are x this)')
    print(f"solver: {options}")
    print("| classes x months x GPUs | columns x rows | CPU s | x baseline | status | gap | cost |")
    print("|---|---|---|---|---|---|---|")
    for c, m, g in chosen:
        size, shape, cpu, status, gap, cost = rung(c, m, g, options, args.seed)
        ratio = f"{float(cpu) / unit:.0f}"
        print(f"| {size} | {shape} | {cpu} | {ratio} | {status} | {gap} | {cost} |", flush=True)


if __name__ == "__main__":
    main()
