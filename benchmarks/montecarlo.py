"""The Monte Carlo of issue #14, timed: N points of a scenario, locally and on a local Ray cluster.

    python benchmarks/montecarlo.py                        # 1,000 points, pool and Ray
    python benchmarks/montecarlo.py --samples 100 --no-ray

Draws the points of `planner sweep SCENARIO --samples N --vary FILE --seed S` (the shipped
diurnal-chatbot and its vary file by default), runs them on a local process pool and, unless
--no-ray, on a local Ray cluster started here (its start-up time reported, not counted), and
prints per runner: wall time, CPU time of this process and its children (Ray workers are
not children: their CPU is not counted), points per second and P10/P50/P90 of the monthly
cost. Rows are compared between runners; points whose plan over time stopped at the time
limit can differ (a wall-clock limit), and how many did is printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.inputs.scenarios import load_scenario  # noqa: E402
from planner.inputs.sweep import load_vary  # noqa: E402
from planner.planning import sweep as sw  # noqa: E402


def cpu_seconds() -> float:
    """CPU time of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def report(name: str, result: sw.SweepResult, wall: float, cpu: float) -> None:
    """One runner's line: times, rate, stopped points and the cost percentiles."""
    table = result.table
    metric = (
        "over_time_per_month_usd"
        if table["over_time_per_month_usd"].notna().any()
        else ("cost_per_month_usd")
    )
    cost = table[metric].dropna()
    p10, p50, p90 = (float(cost.quantile(q)) for q in (0.1, 0.5, 0.9))
    stopped = int(table["reason"].str.contains("solver gap").sum())
    print(
        f"| {name} | {len(table)} | {wall:.1f} | {cpu:.1f} | {cpu / max(len(table), 1):.2f} "
        f"| {len(table) / wall:.2f} | {stopped} | {metric} | ${p10:,.0f} | ${p50:,.0f} "
        f"| ${p90:,.0f} |",
        flush=True,
    )


def main() -> None:
    """Run the Monte Carlo on each runner and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "diurnal-chatbot.yaml"))
    parser.add_argument("--vary", default=str(ROOT / "benchmarks" / "diurnal-chatbot-vary.yaml"))
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=sw.default_jobs())
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    base, catalog = load_scenario(args.scenario, load_catalog())
    spec = sw.SweepSpec(vary=load_vary(args.vary), samples=args.samples, seed=args.seed)
    print(f"{args.samples} points of {Path(args.scenario).name}, seed {args.seed}", file=sys.stderr)
    print(
        "| runner | points | wall s | CPU s | CPU s/point | points/s | stopped at limit "
        "| metric | P10 | P50 | P90 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    results = []
    start, cpu = time.perf_counter(), cpu_seconds()
    results.append(sw.sweep(base, catalog, spec, jobs=args.jobs))
    report(f"pool of {args.jobs}", results[-1], time.perf_counter() - start, cpu_seconds() - cpu)
    if not args.no_ray:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # 127.0.0.1 only
        import ray

        up = time.perf_counter()
        ray.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False)
        print(f"Ray started in {time.perf_counter() - up:.1f} s", file=sys.stderr)
        start, cpu = time.perf_counter(), cpu_seconds()
        results.append(sw.sweep(base, catalog, spec, ray_address="local"))
        report(f"Ray, {args.jobs} CPUs", results[-1], time.perf_counter() - start, float("nan"))
        ray.shutdown()
        first, other = (r.table.drop(columns="seconds") for r in results)
        same = (first.fillna(-1) == other.fillna(-1)).all(axis=1)
        print(f"rows identical between runners: {int(same.sum())} of {len(same)}", file=sys.stderr)


if __name__ == "__main__":
    main()
