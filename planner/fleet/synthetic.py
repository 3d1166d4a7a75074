"""Random but realistic fleet problems, for benchmarks and solver tests."""

from __future__ import annotations

import numpy as np

from planner.fleet.overtime import TierPrices, TimeProblem
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


def synthetic_time_problem(
    n_classes: int,
    months: int,
    n_gpu_types: int,
    n_slots: int = 24,
    months_per_period: int = 3,
    seed: int = 0,
) -> TimeProblem:
    """A platform-scale plan over time shaped like `planning.timeplan` builds it: one
    candidate per (GPU type, class) (the most cost-efficient there), capacities on the other
    classes 0-1.3x, a diurnal profile grouped into `n_slots` levels, 5% growth a month in
    blocks of `months_per_period`, reserved at 40% off, spot on every other GPU type at 35% of
    on-demand (30% of requests, 10% pre-emption), two replicas at least, an inventory on
    every third type."""
    rng = np.random.default_rng(seed)
    od = rng.uniform(1.0, 8.0, n_gpu_types)
    gpu, tp, caps = [], [], []
    for g in range(n_gpu_types):
        for w in range(n_classes):
            t = int(rng.choice([1, 2, 4, 8]))
            cap = od[g] * t * rng.uniform(0.05, 0.15) * rng.uniform(0.0, 1.3, n_classes)
            cap[rng.random(n_classes) < 0.3] = 0.0
            cap[w] = od[g] * t * rng.uniform(0.1, 0.2)
            gpu.append(f"g{g:02d}")
            tp.append(t)
            caps.append(cap)
    hour = np.arange(24)
    shape = 0.6 + 0.4 * np.cos(
        (hour[None, :] - rng.uniform(10, 20, (n_classes, 1))) / 24 * 2 * np.pi
    )
    levels = np.sort(np.quantile(shape, np.linspace(1, 0, n_slots), axis=1), axis=0)[::-1].T
    peaks = rng.uniform(10, 60, n_classes)
    blocks = [
        list(range(m, min(m + months_per_period, months)))
        for m in range(0, months, months_per_period)
    ]
    growth = 1.05 ** np.array([b[-1] for b in blocks])
    demand = np.concatenate([peaks[:, None] * levels * g for g in growth], axis=1)
    share = np.full(n_slots, 1.0 / n_slots)
    hours = np.concatenate([share * 730.0 * len(b) for b in blocks])
    names = [f"g{g:02d}" for g in range(n_gpu_types)]
    prices = TierPrices(
        on_demand={n: float(p) for n, p in zip(names, od, strict=True)},
        reserved={n: float(p) * 0.6 for n, p in zip(names, od, strict=True)},
        spot={n: float(p) * 0.35 for n, p in zip(names[::2], od[::2], strict=True)},
    )
    return TimeProblem(
        gpu=tuple(gpu),
        tp=tuple(tp),
        capacity=np.array(caps),
        demand=demand,
        hours=hours,
        prices=prices,
        spot_max_share=0.3,
        preemption_overhead=0.1,
        min_replicas=2,
        inventory={n: int(rng.integers(200, 400)) for n in names[::3]},
    )
