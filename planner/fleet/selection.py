"""From evaluated rows to the solver's input: SLA filter with reasons, pruning, capacities."""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from planner.arrays import row_groups
from planner.fleet import disagg
from planner.fleet.steady import FleetProblem
from planner.perf import columns
from planner.perf.table import Frame, Table, mapped, values

# pp, ep, dp_attention: multi-node / MoE layouts; speculative, spec_tokens, role (issue #11)
CANDIDATE_KEY = [
    "gpu", "tp", "pp", "ep", "dp_attention", "quant", "kv_dtype", "batch",
    "speculative", "spec_tokens", "role",
    "kv_link",  # issue #11: a pool's KV over the scale-out or (in one node) scale-up link
]  # fmt: skip
OFFERED_COLUMNS = columns.select(
    [*CANDIDATE_KEY, "gpus_per_replica", "nodes_per_replica", "cost_per_hour_usd"]
)
# what offered_capacity reads of the candidate table: project to it before filtering rows
OFFER_INPUTS = [c.name for c in OFFERED_COLUMNS] + ["class", "capacity_requests_per_s", "ttft_ms"]


@dataclass(frozen=True)
class Offered:
    """The SLA-feasible candidates offered to the solver: one key row each and its capacity
    per request class. Capacity is an array, so class names never become column names."""

    keys: Table  # OFFERED_COLUMNS, one row per candidate
    capacity: np.ndarray  # candidates x classes (plan order), req/s per replica; 0 = cannot
    ttft_ms: np.ndarray | None = None  # candidates x classes: a pool's part of the TTFT (#11)

    def __len__(self) -> int:
        return len(self.keys)

    def key_frame(self) -> Any:
        """The keys as a DataFrame (`OFFERED_COLUMNS`), for the pipelines written in pandas."""
        return columns.conform(self.keys.to_pandas(), OFFERED_COLUMNS)

    def take(self, index: np.ndarray) -> Offered:
        """The candidates at these positions, in that order."""
        ttft = None if self.ttft_ms is None else self.ttft_ms[index]
        return Offered(self.keys.take(index), self.capacity[index], ttft)


def _formatted(spec: str, column: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The masked values, each through one printf-style `spec` (vectorised, no row loop)."""
    return np.char.mod(spec, column[mask])


def _joined(*parts: np.ndarray | str) -> np.ndarray:
    """Element-wise concatenation of string arrays and literals."""
    return reduce(np.char.add, [np.asarray(p) for p in parts])


def _failures(rows: Frame, tpot_ms: float | None, ttft_ms: float | None) -> dict[str, np.ndarray]:
    """Which rows break each rule, in the order a later one overrides an earlier one's reason:
    TTFT, TPOT, no price, out of memory (one definition for the reasons and the verdict)."""
    out: dict[str, np.ndarray] = {}
    if ttft_ms is not None:
        out["ttft"] = values(rows, "ttft_ms", float) > ttft_ms
    if tpot_ms is not None:
        out["tpot"] = values(rows, "tpot_ms", float) > tpot_ms
    out["price"] = np.isnan(values(rows, "price_usd_per_gpu_hour", float))
    out["oom"] = ~values(rows, "fits", bool)
    return out


def sla_met(rows: Frame, tpot_ms: float | None, ttft_ms: float | None) -> np.ndarray:
    """Where `sla_verdicts` is '', without writing the reasons (issue #16: a verdict only)."""
    return ~np.logical_or.reduce(list(_failures(rows, tpot_ms, ttft_ms).values()))


def sla_verdicts(rows: Frame, tpot_ms: float | None, ttft_ms: float | None) -> np.ndarray:
    """'' where the row meets memory, price and SLA; otherwise why it does not (out of memory
    first, then a missing price, then TPOT, then TTFT)."""
    why = np.full(len(rows), "", dtype=object)
    fail = _failures(rows, tpot_ms, ttft_ms)
    if "ttft" in fail:
        bad = fail["ttft"]
        why[bad] = _joined(
            "TTFT ", _formatted("%.0f", values(rows, "ttft_ms"), bad), f" ms > {ttft_ms:g} ms"
        )
    if "tpot" in fail:
        bad = fail["tpot"]
        why[bad] = _joined(
            "TPOT ", _formatted("%.1f", values(rows, "tpot_ms"), bad), f" ms > {tpot_ms:g} ms"
        )
    why[fail["price"]] = "no price for this GPU"
    oom = fail["oom"]
    if oom.any():
        why[oom] = _joined(
            "out of memory: needs ",
            _formatted("%.1f", values(rows, "memory_per_gpu_gb"), oom),
            " GB/GPU, ",
            _formatted("%.1f", values(rows, "memory_usable_gb"), oom),
            " usable (max batch ",
            _formatted("%d", values(rows, "max_batch"), oom),
            ")",
        )
    return why


def offered_capacity(feasible: Frame, class_names: list[str]) -> Offered:
    """One entry per candidate (sorted by key), its capacity on every class (0 where it fails
    that class's SLA)."""
    capacity = np.zeros((0, len(class_names)))
    if not isinstance(feasible, Table):
        feasible = Table.from_pandas(feasible.reset_index(drop=True))
    if feasible.empty:
        return Offered(columns.empty_table(OFFERED_COLUMNS), capacity)
    keys, row = _candidates(feasible)
    where = {name: j for j, name in enumerate(class_names)}
    col = mapped(feasible, "class", where, missing=-1, dtype=np.int64)
    known = col >= 0
    capacity = np.zeros((len(keys), len(class_names)))
    capacity[row[known], col[known]] = values(feasible, "capacity_requests_per_s", float)[known]
    ttft = np.full(capacity.shape, np.inf)
    ttft[row[known], col[known]] = values(feasible, "ttft_ms", float)[known]
    keys = columns.conform(keys, OFFERED_COLUMNS)
    return Offered(keys, np.nan_to_num(capacity, nan=0.0), ttft)


_KEY_VALUES = ["gpus_per_replica", "nodes_per_replica", "cost_per_hour_usd"]


def _candidates(feasible: Table) -> tuple[Table, np.ndarray]:
    """One key row per distinct `CANDIDATE_KEY` (sorted by key) and each row's candidate:
    groupby(sort=True, observed=True).first() and ngroup(), by one stable lexsort over
    the key codes (issue #16: the groupby cost more than the plan's MIP)."""
    codes = [feasible.codes(k) for k in CANDIDATE_KEY]
    plain = all(c.dtype.kind in "iub" for c in codes) and not any((c < 0).any() for c in codes)
    if not plain or any(np.isnan(values(feasible, k, float)).any() for k in _KEY_VALUES):
        # NaN keys or values, or keys not as declared: pandas' groupby and its own rules
        groups = feasible.to_pandas().groupby(CANDIDATE_KEY, sort=True, observed=True)
        keys = groups[_KEY_VALUES].first().reset_index()
        return Table.from_pandas(keys), groups.ngroup().to_numpy()
    order = np.lexsort(codes[::-1])  # stable: a candidate's first row comes first
    new = np.zeros(len(order), dtype=bool)
    new[:1] = True
    for c in codes:
        ranked = c[order]
        new[1:] |= ranked[1:] != ranked[:-1]
    row = np.empty(len(order), dtype=np.int64)
    row[order] = np.cumsum(new) - 1
    keys = feasible[[*CANDIDATE_KEY, *_KEY_VALUES]].take(order[new])
    return keys, row


def prune_dominated(offered: Offered) -> Offered:
    """Drop candidates another one beats: same GPU, no more GPUs per replica, no higher cost,
    at least the capacity on every class, strictly better somewhere (ties: keep the first)."""
    n = len(offered)
    keep = np.ones(n, dtype=bool)
    caps = offered.capacity
    keys = offered.keys
    cost = values(keys, "cost_per_hour_usd", float)
    tp = values(keys, "gpus_per_replica")  # GPUs per replica, not the tp degree
    role = values(keys, "role")
    # a pool's TTFT part decides which flow buckets it may join (fleet/disagg.py): compare it
    pool = role != "aggregated"
    ttft = offered.ttft_ms if offered.ttft_ms is not None else np.zeros(caps.shape)
    # only a candidate of the same GPU, role and KV link (pools of either link are balanced
    # apart, fleet/disagg.py) can dominate: compare within those
    # groups (the same test as over the whole list, at a fraction of the cost; issue #16)
    group = row_groups([keys.codes("gpu"), keys.codes("role"), keys.codes("kv_link")])
    for members in (np.flatnonzero(group == g) for g in range(int(group.max(initial=-1)) + 1)):
        _prune_group(members, keep, tp, cost, caps, ttft, pool)
    return offered.take(np.flatnonzero(keep))


MATRIX_UP_TO = 512  # group size up to which the pairwise tests are made as one matrix


def _prune_group(members, keep, tp, cost, caps, ttft, pool) -> None:
    """Clear `keep` for the dominated candidates among `members` (positions, ascending),
    in position order, so ties keep the first as over the whole list."""
    if len(members) > MATRIX_UP_TO:
        _prune_group_loop(members, keep, tp, cost, caps, ttft, pool)
        return
    tp, cost, caps, ttft, pool = (
        tp[members],
        cost[members],
        caps[members],
        ttft[members],
        pool[members],
    )
    # [k, j]: candidate j is no worse than k / strictly better somewhere (issue #16: every
    # pair at once; only the keep-the-first order below stays a loop, over one row each).
    # One class at a time: numpy's .all over a trailing axis of 2 classes was 12x the time
    # of the comparisons themselves (mixed-traffic: 30 -> 5 ms over 39 groups)
    no_worse = (tp <= tp[:, None]) & (cost <= cost[:, None])
    better = (tp < tp[:, None]) | (cost < cost[:, None])
    for col in caps.T:
        no_worse &= col >= col[:, None]
        better |= col > col[:, None]
    if pool.any():  # a pool compares its TTFT part too
        for col in ttft.T:
            no_worse &= ~pool[:, None] | (col <= col[:, None])
            better |= pool[:, None] & (col < col[:, None])
    beats = no_worse & (better | np.tri(len(members), k=-1, dtype=bool))  # ties: the earlier
    np.fill_diagonal(beats, False)
    if pool.all() or not pool.any():
        # one role (as prune_dominated's groups are): `beats` is a strict order (no worse is
        # transitive; strictly better somewhere, or an equal that comes first, carries along
        # a chain), so whatever beats k, an unbeaten candidate beats k too, and the walk in
        # position order drops exactly the beaten ones (issue 16: one numpy call a row was
        # 5,508 on mixed-traffic). Pools beside replicas compare TTFT one way only: walk.
        keep[members] &= ~beats.any(axis=1)
        return
    alive = keep[members].copy()
    for k in range(len(members)):
        if (beats[k] & alive).any():
            alive[k] = False
    keep[members] = alive


def _prune_group_loop(members, keep, tp, cost, caps, ttft, pool) -> None:
    """`_prune_group` one candidate at a time (for groups too big for the matrix)."""
    tp, cost, caps, ttft = tp[members], cost[members], caps[members], ttft[members]
    for k, i in enumerate(members):
        same = keep[members].copy()
        same[k] = False
        no_worse = same & (tp <= tp[k]) & (cost <= cost[k]) & (caps >= caps[k]).all(axis=1)
        if pool[i]:
            no_worse &= (ttft <= ttft[k]).all(axis=1)
        better = (tp < tp[k]) | (cost < cost[k]) | (caps > caps[k]).any(axis=1)
        if pool[i]:
            better |= (ttft < ttft[k]).any(axis=1)
        if (no_worse & better).any() or (no_worse & ~better & (members < i)).any():
            keep[i] = False


def fleet_problem(
    offered: Offered,
    demand: list[float],
    inventory: dict[str, int],
    max_gpus: int | None,
    budget_per_hour: float | None,
    min_replicas: int,
    ttft_sla_ms: list[float] | None = None,
) -> FleetProblem:
    """The integer program's data from the pruned candidates."""
    keys = offered.keys
    role = tuple(str(r) for r in values(keys, "role"))
    pools = any(r != "aggregated" for r in role)
    return FleetProblem(
        gpu=tuple(str(g) for g in values(keys, "gpu")),
        tp=tuple(int(t) for t in values(keys, "gpus_per_replica")),  # the MIP counts GPUs
        cost_per_hour=values(keys, "cost_per_hour_usd", float),
        capacity=offered.capacity.astype(float),
        demand=np.asarray(demand, dtype=float),
        inventory={g: n for g, n in inventory.items() if g in set(values(keys, "gpu"))},
        max_gpus=max_gpus,
        budget_per_hour=budget_per_hour,
        min_replicas=min_replicas,
        role=role if pools else (),
        kv_group=disagg.kv_groups(keys) if pools else (),
        ttft_part_ms=offered.ttft_ms if pools else None,
        ttft_sla_ms=None if ttft_sla_ms is None else np.asarray(ttft_sla_ms, dtype=float),
    )
