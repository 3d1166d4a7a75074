"""MoE layouts of disaggregated pools in a plan's grid (issue #11).

A prefill or decode worker of an MoE model may spread its experts over EP ranks with DP
attention, like an aggregated replica (perf/layout.py). The single-node search of
`layouts.search_axes` keeps ep = dp_attention = 1 (the grid of every short-prompt scenario
stays as it was); pools, which are offered only for long prompts, additionally search the
in-node layouts a production stack runs a pool with: experts over every GPU of the worker
(ep = tp x dp_attention) with dp_attention in `POOL_DP`, inside one node. Bounded growth: at
most len(tps) x len(POOL_DP) extra layouts, MoE models only, valid layouts only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from planner.perf.candidates import GridSpec, build_table
from planner.perf.kv_link import NO_ROOM, domain_gpus
from planner.perf.table import Frame, Table, mapped, values
from planner.planning.layouts import Axes
from planner.schema.engine import EngineProfile
from planner.schema.hardware import Gpu
from planner.schema.model import Model

POOL_DP: tuple[int, ...] = (1, 2, 4, 8)


def pool_axes(model: Model, tps: Sequence[int], axes: Axes) -> Axes:
    """The layout axes of the pool rows: the scenario's, plus full in-node EP for MoE."""
    if model.moe is None:
        return axes
    eps = {int(t) * d for t in tps for d in POOL_DP}
    return Axes(
        pps=axes.pps,
        eps=tuple(sorted(set(axes.eps) | eps)),
        dp_attentions=tuple(sorted(set(axes.dp_attentions) | set(POOL_DP))),
    )


def keep_rows(grid: Frame, axes: Axes, gpus: Sequence[Gpu]) -> np.ndarray:
    """Which rows of a grid built on `pool_axes` to keep: every role at the scenario's own
    layouts, and pool rows also at the added ones, as full EP (ep = tp x dp_attention) on
    one stage inside one node; a scale-up (NVLink) pool only where it is at most half a node,
    so it pairs with a partner inside one node (fleet/disagg.py)."""
    ep, dp = values(grid, "ep"), values(grid, "dp_attention")
    tp, pp = values(grid, "tp"), values(grid, "pp")
    own = np.isin(ep, axes.eps) & np.isin(dp, axes.dp_attentions)
    node = mapped(grid, "gpu", {g.id: domain_gpus(g) for g in gpus})
    width = values(grid, "gpus_per_replica")
    added = (ep == tp * dp) & (pp == 1) & (width <= node)
    pool = values(grid, "role") != "aggregated"
    up = values(grid, "kv_link") == "scale-up"
    return np.asarray((own | (pool & added)) & (~up | (2 * width <= node)), dtype=bool)


def build_pool_grid(
    model: Model, spec: GridSpec, engine: EngineProfile, axes: Axes
) -> tuple[Table, Table]:
    """`build_table`, filtered by `keep_rows`; with pools of an MoE model, crossed with
    `pool_axes` first (one grid, so the scenario's own rows keep their order). The rejected
    combinations reported are the scenario's own, less the optional scale-up link's."""
    grid, rejected = build_table(model, spec, engine)
    if set(spec.roles) <= {"aggregated"}:
        return grid, rejected
    rejected = rejected[np.asarray([NO_ROOM not in r for r in rejected["reason"]], dtype=bool)]
    if model.moe is not None:
        wide = pool_axes(model, spec.tps, axes)
        wide_spec = replace(spec, eps=wide.eps, dp_attentions=wide.dp_attentions)
        grid, _ = build_table(model, wide_spec, engine)
    return grid[keep_rows(grid, axes, spec.gpus)], rejected
