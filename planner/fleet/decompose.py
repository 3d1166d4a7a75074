"""Issue 16: a plan over time split by period. Once the GPUs held for the horizon are fixed,
nothing couples one period to another, so the MIP falls apart into one small MIP a period;
solved one by one they give a feasible plan of the whole horizon far faster than the whole
model does (a warm start and, within the gap of the LP bound, the answer)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from planner.fleet.solver import Model, SolverOptions, solve


def column_blocks(model: Model, blocks: list[np.ndarray]) -> np.ndarray:
    """The block (period) of every column from index arrays of shape (..., periods); -1 for a
    column in none of them (the held GPUs)."""
    block = np.full(model.n_cols, -1, dtype=np.int64)
    for idx in blocks:
        if idx.size:
            block[idx] = np.broadcast_to(np.arange(idx.shape[-1]), idx.shape)
    return block


def solve_by_blocks(
    model: Model, block: np.ndarray, fixed: np.ndarray, options: SolverOptions
) -> np.ndarray | None:
    """`solve_blocks`'s point alone."""
    return solve_blocks(model, block, fixed, options)[0]


def solve_blocks(
    model: Model, block: np.ndarray, fixed: np.ndarray, options: SolverOptions
) -> tuple[np.ndarray | None, float]:
    """A point of `model` with the columns of block -1 at `fixed` and every block solved on
    its own (each row touches one block once those are fixed), from `fixed`'s values in the
    block where they are a feasible start; None if a block has no plan. Also a proven
    bound on any point with those columns fixed: theirs plus every block's solver bound (inf
    when a block is infeasible)."""
    parts = period_models(model, block, fixed)
    if parts is None:
        return None, np.inf
    free = block >= 0
    x = np.where(free, 0.0, fixed)
    bound = float(model.cost[~free] @ x[~free])
    for cols, part in parts:
        found = solve(replace(part, start=fixed[cols]), options)
        if found.values is None:
            return None, (np.inf if found.status == "infeasible" else -np.inf)
        x[cols] = found.values
        bound += found.bound
    return x, bound


def period_models(
    model: Model, block: np.ndarray, fixed: np.ndarray
) -> list[tuple[np.ndarray, Model]] | None:
    """Every block's columns and its own model, the columns of block -1 fixed at `fixed`
    (their share moved into the row bounds); None when a row left with fixed columns only
    breaks. Raises ValueError when a row couples two blocks."""
    free = block >= 0
    x = np.where(free, 0.0, fixed)
    held = ~free[model.cols]
    activity = np.bincount(
        model.rows[held], weights=model.values[held] * x[model.cols[held]], minlength=model.n_rows
    )
    row_block = np.full(model.n_rows, -1, dtype=np.int64)
    row_block[model.rows[~held]] = block[model.cols[~held]]
    entries = np.flatnonzero(~held)
    entry_block = block[model.cols[entries]]
    if (row_block[model.rows[entries]] != entry_block).any():
        raise ValueError("a row couples two blocks: the model does not split this way")
    if not _fixed_rows_hold(model, row_block, activity):
        return None
    order = np.argsort(entry_block, kind="stable")
    return [
        (cols, _sub_model(model, cols, np.flatnonzero(row_block == b), part_entries, activity))
        for b, cols, part_entries in _blocks(block, entry_block[order], entries[order])
    ]


def _fixed_rows_hold(model: Model, row_block: np.ndarray, activity: np.ndarray) -> bool:
    """Rows left with fixed columns only must already hold."""
    only = row_block < 0
    tol = 1e-6 * (1.0 + np.abs(activity[only]))
    low, high = model.row_lower[only], model.row_upper[only]
    return bool(((activity[only] >= low - tol) & (activity[only] <= high + tol)).all())


def _blocks(
    block: np.ndarray, entry_block: np.ndarray, entries: np.ndarray
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(block, its columns, its nonzeros) for each block, from nonzeros sorted by block."""
    bounds = np.searchsorted(entry_block, np.arange(block.max() + 2))
    for b in range(int(block.max()) + 1):
        yield b, np.flatnonzero(block == b), entries[bounds[b] : bounds[b + 1]]


def _sub_model(
    model: Model, cols: np.ndarray, rows: np.ndarray, entries: np.ndarray, activity: np.ndarray
) -> Model:
    """The block's columns and rows, the fixed columns' share moved into the row bounds."""
    col_at = np.full(model.n_cols, -1, dtype=np.int64)
    col_at[cols] = np.arange(len(cols))
    row_at = np.full(model.n_rows, -1, dtype=np.int64)
    row_at[rows] = np.arange(len(rows))
    return replace(
        model,
        cost=model.cost[cols],
        lower=model.lower[cols],
        upper=model.upper[cols],
        integer=model.integer[cols],
        rows=row_at[model.rows[entries]],
        cols=col_at[model.cols[entries]],
        values=model.values[entries],
        row_lower=model.row_lower[rows] - activity[rows],
        row_upper=model.row_upper[rows] - activity[rows],
        start=None,
    )
