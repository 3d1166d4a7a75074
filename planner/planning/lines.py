"""Fleet lines from a solver's replica counts: the candidates chosen, the fields each line
(Deployment, CapacityLine, JobLine) copies from its candidate key, and the evaluated rows
of a candidate, built once for the plan, capacity and batch-job pipelines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from planner.fleet.selection import CANDIDATE_KEY
from planner.perf.table import Frame, Table, values


def chosen(replicas: np.ndarray, keys: Table) -> Iterator[tuple[int, dict[str, Any], int]]:
    """(offered index, candidate key, replicas) of every candidate given replicas."""
    for i in np.flatnonzero(replicas):
        yield int(i), keys.row(int(i)), int(replicas[i])


def key_fields(key: Any, replicas: int) -> dict[str, Any]:
    """The deployment every line names: GPU, tp, quant, KV dtype, batch, replicas, GPUs."""
    return {
        "gpu": str(key["gpu"]),
        "tp": int(key["tp"]),
        "quant": str(key["quant"]),
        "kv_dtype": str(key["kv_dtype"]),
        "batch": int(key["batch"]),
        "replicas": replicas,
        "gpus": replicas * int(key["gpus_per_replica"]),
    }


def layout_fields(key: Any) -> dict[str, Any]:
    """The serving layout of issue #11: stages, experts, DP attention, speculation, role."""
    return {
        "pp": int(key["pp"]),
        "ep": int(key["ep"]),
        "dp_attention": int(key["dp_attention"]),
        "speculative": str(key["speculative"]),
        "spec_tokens": int(key["spec_tokens"]),
        "role": str(key["role"]),
    }


def candidate_rows(rows: Frame, key: Any, classes: list[str] | None = None) -> Frame:
    """The evaluated rows of one candidate (its `CANDIDATE_KEY`), of every class or only
    of `classes`."""
    mask = (
        np.ones(len(rows), dtype=bool)
        if classes is None
        else np.isin(values(rows, "class"), classes)
    )
    for k in CANDIDATE_KEY:
        mask &= values(rows, k) == key[k]
    return rows[mask]
