"""Random but realistic fleet problems, for benchmarks and solver tests."""

from __future__ import annotations

import numpy as np

from planner.fleet.steady import FleetProblem


def synthetic_problem(
    n_gpu_types: int, n_classes: int, per_type: int, seed: int = 0
) -> FleetProblem:
    """Costs grow with the GPUs per replica, capacities sit around cost-efficiency 1 with
    +-30% spread (no candidate is trivially best), 30% of (candidate, class) pairs fail their
    SLA, every other GPU type has an inventory limit, and at least two replicas are required."""
    rng = np.random.default_rng(seed)
    n = n_gpu_types * per_type
    gpu = tuple(f"g{i // per_type}" for i in range(n))
    tp = tuple(int(rng.choice([1, 2, 4, 8])) for _ in range(n))
    price = rng.uniform(1, 6, n_gpu_types)
    cost = np.array([price[i // per_type] * tp[i] for i in range(n)])
    cap = cost[:, None] * rng.uniform(0.7, 1.3, (n, n_classes))
    cap[rng.random((n, n_classes)) < 0.3] = 0.0
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
