"""From evaluated rows to the solver's input: SLA filter with reasons, pruning, capacities."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.fleet.steady import FleetProblem

CANDIDATE_KEY = ["gpu", "tp", "quant", "kv_dtype", "batch"]


def sla_verdicts(rows: pd.DataFrame, tpot_ms: float | None, ttft_ms: float | None) -> pd.Series:
    """'' where the row meets memory, price and SLA; otherwise why it does not."""
    reasons = pd.Series("", index=rows.index, dtype=object)
    no_price = rows["price_usd_per_gpu_hour"].isna()
    reasons[no_price] = "no price for this GPU"
    tpot_bad = rows["tpot_ms"] > tpot_ms if tpot_ms is not None else False
    ttft_bad = rows["ttft_ms"] > ttft_ms if ttft_ms is not None else False
    if tpot_ms is not None:
        msg = rows["tpot_ms"].map(lambda v: f"TPOT {v:.1f} ms > {tpot_ms:g} ms")
        reasons = reasons.where(~tpot_bad | (reasons != ""), msg)
    if ttft_ms is not None:
        msg = rows["ttft_ms"].map(lambda v: f"TTFT {v:.0f} ms > {ttft_ms:g} ms")
        reasons = reasons.where(~ttft_bad | (reasons != ""), msg)
    oom = ~rows["fits"].astype(bool)
    msg = (
        rows.apply(
            lambda r: (
                f"out of memory: needs {r.memory_per_gpu_gb:.1f} GB/GPU, "
                f"{r.memory_usable_gb:.1f} usable (max batch {int(r.max_batch)})"
            ),
            axis=1,
        )
        if oom.any()
        else reasons
    )
    reasons = reasons.where(~oom, msg)
    return reasons


def capacity_matrix(feasible: pd.DataFrame, class_names: list[str]) -> pd.DataFrame:
    """One row per candidate, one capacity column per class (0 where it fails that class)."""
    wide = feasible.pivot_table(
        index=CANDIDATE_KEY, columns="class", values="capacity_requests_per_s", aggfunc="first"
    ).reindex(columns=class_names)
    wide = wide.fillna(0.0)
    costs = feasible.groupby(CANDIDATE_KEY)[["cost_per_hour_usd"]].first()
    return wide.join(costs).reset_index()


def prune_dominated(cands: pd.DataFrame, class_names: list[str]) -> pd.DataFrame:
    """Drop candidates another one beats: same GPU, no more GPUs per replica, no higher cost,
    at least the capacity on every class, strictly better somewhere (ties: keep the first)."""
    keep = np.ones(len(cands), dtype=bool)
    caps = cands[class_names].to_numpy(dtype=float)
    cost = cands["cost_per_hour_usd"].to_numpy(dtype=float)
    tp = cands["tp"].to_numpy()
    gpu = cands["gpu"].to_numpy()
    for i in range(len(cands)):
        same = (gpu == gpu[i]) & keep
        same[i] = False
        no_worse = same & (tp <= tp[i]) & (cost <= cost[i]) & (caps >= caps[i]).all(axis=1)
        better = (tp < tp[i]) | (cost < cost[i]) | (caps > caps[i]).any(axis=1)
        if (no_worse & better).any() or (no_worse & ~better & (np.arange(len(cands)) < i)).any():
            keep[i] = False
    return cands[keep].reset_index(drop=True)


def fleet_problem(
    cands: pd.DataFrame,
    class_names: list[str],
    demand: list[float],
    inventory: dict[str, int],
    max_gpus: int | None,
    budget_per_hour: float | None,
    min_replicas: int,
) -> FleetProblem:
    """The integer program's data from the pruned candidate table."""
    return FleetProblem(
        gpu=tuple(cands["gpu"]),
        tp=tuple(int(t) for t in cands["tp"]),
        cost_per_hour=cands["cost_per_hour_usd"].to_numpy(dtype=float),
        capacity=cands[class_names].to_numpy(dtype=float),
        demand=np.asarray(demand, dtype=float),
        inventory={g: n for g, n in inventory.items() if g in set(cands["gpu"])},
        max_gpus=max_gpus,
        budget_per_hour=budget_per_hour,
        min_replicas=min_replicas,
    )
