"""Solve time of the fleet MIP as the problem grows: GPU types x request classes x candidates.

Synthetic but realistic instances: each candidate has a cost proportional to its GPUs and a
capacity per class drawn around cost-efficiency 1 with +-30% spread, so no candidate is
trivially best. Prints a table of wall-clock solve times for CBC (and HiGHS if installed).

    python benchmarks/solve_scaling.py
"""

from __future__ import annotations

import time

from planner.fleet.solver import SolverOptions
from planner.fleet.steady import solve_fleet
from planner.fleet.synthetic import synthetic_problem


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
        problem = synthetic_problem(types, classes, per)
        cells = []
        for backend in backends:
            t0 = time.perf_counter()
            try:
                sol = solve_fleet(problem, SolverOptions(backend, 30))
                cells.append(f"{time.perf_counter() - t0:.2f} ({sol.status})")
            except Exception as exc:  # noqa: BLE001 - report, do not crash the table
                cells.append(f"n/a ({type(exc).__name__})")
        print(f"| {types} | {classes} | {problem.n_candidates} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
