"""Points per second of `planner sweep`: in one process, on a local process pool and on Ray.

    python benchmarks/sweep_speed.py                       # every shipped scenario, 8 points
    python benchmarks/sweep_speed.py --scenario moe --points 16 --no-ray

Each scenario is swept over its peak demand (0.5x to 2x, geometric) with a generous solver
time limit, so every runner plans exactly the same points and the rows match (checked). The
Ray runs share one local cluster started here (its start-up time is reported, not counted).
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.inputs.scenarios import load_scenario  # noqa: E402
from planner.planning import sweep as sw  # noqa: E402


def spec_for(base, points: int) -> sw.SweepSpec:
    """A demand sweep of `points` values around the scenario's own peak."""
    rps = base.workload.requests_per_second or 1.0
    values = tuple(float(f"{v:.4g}") for v in np.geomspace(0.5, 2.0, points) * rps)
    return sw.SweepSpec(
        grid=(("solver.time_limit_s", (300,)), ("workload.requests_per_second", values))
    )


def main() -> None:
    """Time every scenario on every runner and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", action="append", help="scenario stem (default: all)")
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=sw.default_jobs())
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    catalog = load_catalog()
    stems = args.scenario or sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml"))
    runners: list[tuple[str, dict]] = [
        ("1 process", {"jobs": 1}),
        (f"pool of {args.jobs}", {"jobs": args.jobs}),
    ]
    ray = None
    if not args.no_ray:
        import os

        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # 127.0.0.1 only
        import ray

        start = time.perf_counter()
        ray.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False)
        print(
            f"Ray local cluster ({args.jobs} CPUs) started in {time.perf_counter() - start:.1f} s",
            file=sys.stderr,
        )
        runners.append((f"Ray, {args.jobs} CPUs", {"ray_address": "local"}))
    print(f"| scenario | points | {' | '.join(name for name, _ in runners)} |")
    print("|---|---" + "|---" * len(runners) + "|")
    for stem in stems:
        base, cat = load_scenario(ROOT / "scenarios" / f"{stem}.yaml", catalog)
        spec = spec_for(base, args.points)
        results = [sw.sweep(base, cat, spec, **kw) for _, kw in runners]
        first = results[0].table.drop(columns="seconds")
        for r in results[1:]:
            assert r.table.drop(columns="seconds").equals(first), f"{stem}: rows differ"
        cells = " | ".join(f"{r.points_per_second:.2f}" for r in results)
        print(f"| {stem} | {args.points} | {cells} |", flush=True)
    if ray is not None:
        ray.shutdown()


if __name__ == "__main__":
    main()
