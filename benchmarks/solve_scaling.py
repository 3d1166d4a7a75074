"""Solve time of the fleet MIP as the problem grows: GPU types x request classes x candidates.

Synthetic but realistic instances: each candidate has a cost proportional to its GPUs and a
capacity per class drawn around cost-efficiency 1 with +-30% spread, so no candidate is
trivially best. Prints a table of wall-clock solve times for CBC (and HiGHS if installed).

    python benchmarks/solve_scaling.py
"""

from __future__ import annotations

import time

import numpy as np

from planner.optimize import FleetProblem, solve_fleet


def instance(n_gpu_types: int, n_classes: int, per_type: int, seed: int = 0) -> FleetProblem:
    rng = np.random.default_rng(seed)
    n = n_gpu_types * per_type
    gpu = tuple(f"g{i // per_type}" for i in range(n))
    tp = tuple(int(rng.choice([1, 2, 4, 8])) for _ in range(n))
    price = rng.uniform(1, 6, n_gpu_types)
    cost = np.array([price[i // per_type] * tp[i] for i in range(n)])
    cap = cost[:, None] * rng.uniform(0.7, 1.3, (n, n_classes))
    cap[rng.random((n, n_classes)) < 0.3] = 0.0  # some candidates fail some classes' SLA
    cap[:, 0] = np.maximum(cap[:, 0], 0.1)
    demand = rng.uniform(5, 50, n_classes)
    inventory = {f"g{i}": int(rng.integers(8, 64)) for i in range(0, n_gpu_types, 2)}
    return FleetProblem(
        gpu=gpu,
        tp=tp,
        cost_per_hour=cost,
        capacity=cap,
        demand=demand,
        inventory=inventory,
        min_replicas=2,
    )


def main() -> None:
    sizes = [(2, 1, 5), (5, 1, 10), (10, 2, 10), (20, 3, 10), (20, 5, 20), (30, 5, 30)]
    backends = ["cbc", "highs"]
    print(
        "| GPU types | classes | candidates | "
        + " | ".join(f"{b} s (status)" for b in backends)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(backends))
    for types, classes, per in sizes:
        problem = instance(types, classes, per)
        cells = []
        for backend in backends:
            t0 = time.perf_counter()
            try:
                sol = solve_fleet(problem, backend, time_limit_s=30)
                cells.append(f"{time.perf_counter() - t0:.2f} ({sol.status})")
            except Exception as exc:  # noqa: BLE001 - report, do not crash the table
                cells.append(f"n/a ({type(exc).__name__})")
        print(f"| {types} | {classes} | {problem.n_candidates} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
