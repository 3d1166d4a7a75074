"""Disaggregated pools in the plan over time (issue #11), as fixed prefill/decode units.

The time MIP (fleet/overtime.py) sizes candidates that each serve requests on their own; a
prefill pool alone serves none. So the plan over time is offered *units*: `n_p` prefill
workers and `n_d` decode workers of one GPU type, one prefill row and one decode row of the
steady plan's offered candidates, with `n_p, n_d` in 1..`MAX_WORKERS`. A unit carries

    capacity[w] = min(n_p * cap_p[w], n_d * cap_d[w])     (the smaller side binds)
    cost        = n_p * cost_p + n_d * cost_d,   GPUs = n_p * g_p + n_d * g_d

for every class w whose TTFT bound holds for the pair: part_p[w] + part_d[w] <= S[w]. Per
GPU type and class the most cost-efficient unit is kept (the shortlist's rule for aggregated
replicas). A unit is an integer-ratio restriction of the steady MIP's freely balanced pools,
so the plan over time can only be dearer than an exact balance, never over the SLA. Pools of
different GPU types are not paired over time (the time MIP's candidate is one GPU type).
"""

from __future__ import annotations

import numpy as np

from planner.perf.table import Table, values
from planner.planning.plan import Plan

MAX_WORKERS = 2  # small units keep the time MIP's relaxation tight (4 measured no cheaper)
UNIT_ROLE = "pools"  # the role a unit's key row carries


def _ratios() -> tuple[np.ndarray, np.ndarray]:
    n = np.arange(1, MAX_WORKERS + 1, dtype=float)
    n_p, n_d = np.meshgrid(n, n, indexing="ij")
    return n_p.ravel(), n_d.ravel()


def _sla(plan: Plan) -> np.ndarray:
    return np.array([np.inf if c.ttft_ms is None else c.ttft_ms for c in plan.classes])


def pool_units(plan: Plan) -> tuple[Table, np.ndarray]:
    """The best unit per GPU type and class: offered-style key rows and capacity per class."""
    keys, cap = plan.offered.keys, plan.offered.capacity
    parts = plan.offered.ttft_ms if plan.offered.ttft_ms is not None else np.zeros(cap.shape)
    role = values(keys, "role").astype(str)
    gpu_of = values(keys, "gpu").astype(str)
    rows, caps = [], []
    for gpu in sorted(set(gpu_of.tolist())):
        mine = gpu_of == gpu
        pre, dec = (
            np.flatnonzero(mine & (role == "prefill")),
            np.flatnonzero(mine & (role == "decode")),
        )
        if len(pre) and len(dec):
            for unit in _best_units(keys, cap, parts, _sla(plan), pre, dec):
                rows.append(unit[0])
                caps.append(unit[1])
    if not rows:
        return keys.take(np.zeros(0, dtype=np.int64)), np.zeros((0, cap.shape[1]))
    table = Table({name: np.asarray([r[name] for r in rows]) for name in keys.columns})
    return table, np.vstack(caps)


def _best_units(keys, cap, parts, sla, pre, dec):
    """Per class, the most cost-efficient (prefill row, decode row, n_p, n_d) of one GPU type."""
    cost = values(keys, "cost_per_hour_usd", float)
    gpus = values(keys, "gpus_per_replica", int)
    n_p, n_d = _ratios()
    p, d = np.meshgrid(pre, dec, indexing="ij")
    p, d = p.ravel(), d.ravel()
    ok = parts[p] + parts[d] <= sla + 1e-9  # pairs x classes: the TTFT bound holds
    unit_cap = np.minimum(
        n_p[None, :, None] * cap[p][:, None, :], n_d[None, :, None] * cap[d][:, None, :]
    )
    unit_cap = np.where(ok[:, None, :], unit_cap, 0.0)  # pairs x ratios x classes
    unit_cost = n_p[None, :] * cost[p][:, None] + n_d[None, :] * cost[d][:, None]
    seen = set()
    for w in range(cap.shape[1]):
        eff = unit_cap[:, :, w] / unit_cost
        if not (eff > 0).any():
            continue
        i, r = np.unravel_index(int(np.argmax(eff)), eff.shape)
        if (i, r) in seen:
            continue
        seen.add((i, r))
        key = keys.row(int(p[i]))
        key.update(
            role=UNIT_ROLE,
            cost_per_hour_usd=float(unit_cost[i, r]),
            gpus_per_replica=int(n_p[r] * gpus[p[i]] + n_d[r] * gpus[d[i]]),
        )
        yield key, unit_cap[i, r]
