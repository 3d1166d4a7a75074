"""Disaggregated prefill/decode in the fleet MIP (issue #11): two pools sized as two resources.

A request class's demand `lambda[w]` is served by aggregated replicas and/or by a prefill pool
and a decode pool; the prefill pool's capacity is in prompts/s (prefill token capacity over the
prompt length), the decode pool's in requests/s of sequence slots (slots over the time a
request holds one). Every request that is prefilled on the prefill pool is decoded on the
decode pool, so their loads per class are equal:

    sum_{c agg} x[c,w] + sum_{p prefill} x[p,w] = lambda[w]         demand_{w}
    sum_{p prefill, k} x[p,w,k] = sum_{d decode, k} x[d,w,k]        (one row per w, k)

A pool whose KV moves over the scale-up link (`kv_link` scale-up: the prefill and decode
workers share one NVLink node) balances only with the scale-up pools of its own GPU type, in
a row of its own per (w, k, GPU type); the scale-out pools balance fleet-wide. How the
scale-up workers pack into nodes is not modelled: each is at most half a node, so any one
prefill worker and one decode worker fit together, but an uneven ratio may need more nodes.

A request's TTFT is its prefill pool's part plus its decode pool's part; the pools are sized
independently, so which prefill replica meets which decode replica is not decided. To keep
every pairing inside the class's TTFT bound `S`, the flow is split into buckets k with a
decode budget `tau_k = f_k * S`: bucket k may use prefill candidates with a part <= S - tau_k
and decode candidates with a part <= tau_k, and balances on its own. Any pairing inside a
bucket then meets S; a pair meeting S with a split between the fixed fractions may be missed
(the plan can only be dearer than the exact pairing, never over the bound).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pulp is imported where a PuLP model is built (`fleet/matrix.py` builds
    # the same rows as arrays, issue 16)
    import pulp

    from planner.fleet.steady import FleetProblem

ROLES = ("aggregated", "prefill", "decode")
# decode side's share of the TTFT bound, one flow bucket each
DECODE_TTFT_SHARES: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75)

PoolLoads = dict[tuple[int, int, int], "pulp.LpVariable"]


def has_roles(problem: FleetProblem) -> bool:
    """Whether any candidate is a prefill or decode pool."""
    return any(r != "aggregated" for r in problem.role)


def uses_pools(problem: FleetProblem, replicas: np.ndarray) -> bool:
    """Whether a solved fleet runs any prefill or decode pool."""
    return has_roles(problem) and bool((replicas[roles_of(problem) != "aggregated"] > 0).any())


def roles_of(problem: FleetProblem) -> np.ndarray:
    """Each candidate's role (all aggregated when the problem names none)."""
    if not problem.role:
        return np.full(problem.n_candidates, "aggregated", dtype=object)
    return np.asarray(problem.role, dtype=object)


def groups_of(problem: FleetProblem) -> np.ndarray:
    """Each candidate's KV balance group ("" when the problem names none: one fleet-wide)."""
    return np.asarray(problem.kv_group or ("",) * problem.n_candidates, dtype=object)


def _budgets(problem: FleetProblem, w: int) -> tuple[float, ...]:
    """The decode-side TTFT budgets (ms) of class w's buckets; one unbounded bucket if the
    class has no TTFT bound."""
    sla = np.inf if problem.ttft_sla_ms is None else float(problem.ttft_sla_ms[w])
    if not np.isfinite(sla):
        return (np.inf,)
    return tuple(f * sla for f in DECODE_TTFT_SHARES)


def eligibility(problem: FleetProblem) -> np.ndarray:
    """candidates x classes x buckets: may a pool carry that class's flow in that bucket (its
    TTFT part within the bucket's share of the SLA; all False for aggregated replicas and
    missing buckets). The one rule for `pool_loads` and `fleet/dominance.py`."""
    n, n_classes = problem.capacity.shape
    out = np.zeros((n, n_classes, len(DECODE_TTFT_SHARES)), dtype=bool)
    role = roles_of(problem)
    pool = (role != "aggregated")[:, None] & (problem.capacity > 0)
    part = np.zeros((n, n_classes)) if problem.ttft_part_ms is None else problem.ttft_part_ms
    for w in range(n_classes):
        budgets = _budgets(problem, w)
        for k, tau in enumerate(budgets):
            if not np.isfinite(tau):
                out[:, w, k] = pool[:, w]
                continue
            sla = float(problem.ttft_sla_ms[w])  # type: ignore[index]
            limit = np.where(role == "prefill", sla - tau, tau) + 1e-9
            out[:, w, k] = pool[:, w] & (part[:, w] <= limit)
    return out


def pool_index(problem: FleetProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate, class and bucket of every pool load, in the order of `pool_loads`."""
    if not has_roles(problem):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    c, w, k = np.nonzero(eligibility(problem))
    return c, w, k


def pool_loads(problem: FleetProblem) -> PoolLoads:
    """One load variable per (pool candidate, class, bucket) it may carry."""
    import pulp

    loads: PoolLoads = {}
    for c, w, k in zip(*pool_index(problem), strict=True):
        loads[int(c), int(w), int(k)] = pulp.LpVariable(f"x_load_c{c}_w{w}_k{k}", lowBound=0)
    return loads


def kv_groups(keys) -> tuple[str, ...]:
    """Each offered candidate's balance group: its GPU type on scale-up pools, else ""."""
    up = keys["kv_link"].astype(str) == "scale-up"
    return tuple(str(g) if u else "" for g, u in zip(keys["gpu"], up, strict=True))


def add_balance(lp: pulp.LpProblem, problem: FleetProblem, loads: PoolLoads) -> None:
    """Per class, bucket and KV balance group: what the prefill pool takes in, the decode
    pool carries on."""
    import pulp

    role, group = roles_of(problem), groups_of(problem)
    flows: dict[tuple[int, int, str], list] = {}
    for (c, w, k), v in loads.items():
        sign = 1.0 if role[c] == "prefill" else -1.0
        flows.setdefault((w, k, group[c]), []).append(sign * v)
    for n, ((w, k, g), terms) in enumerate(sorted(flows.items())):
        name = f"pools_w{w}_k{k}" if not g else f"pools_w{w}_k{k}_up{n}"
        lp += pulp.lpSum(terms) == 0, name


def prefill_served(problem: FleetProblem, loads: PoolLoads, w: int) -> list[pulp.LpVariable]:
    """The pool variables that count towards class w's demand (the prefill side)."""
    return [v for (c, ww, _), v in loads.items() if ww == w and problem.role[c] == "prefill"]


def pool_used(problem: FleetProblem, loads: PoolLoads, c: int) -> list:
    """Candidate c's pool loads, each over its capacity (replicas it keeps busy)."""
    return [v * (1.0 / float(problem.capacity[c, w])) for (cc, w, _), v in loads.items() if cc == c]


def pools_used(problem: FleetProblem, loads: PoolLoads) -> dict[int, list]:
    """`pool_used` of every candidate with pool loads, in one pass over the loads."""
    out: dict[int, list] = {}
    for (c, w, _), v in loads.items():
        out.setdefault(c, []).append(v * (1.0 / float(problem.capacity[c, w])))
    return out


def carried(loads: PoolLoads, shape: tuple[int, ...]) -> np.ndarray:
    """Candidates x classes load of the pool variables (buckets summed)."""
    out = np.zeros(shape)
    for (c, w, _), v in loads.items():
        out[c, w] += max(float(v.varValue or 0.0), 0.0)
    return out
