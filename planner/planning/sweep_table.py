"""The sweep's result table, declared once: one row per point, its summary and its tornado.

Columns: `point`, then one column per varied input (named by its key path, holding the
value as YAML would write it), then the outcome columns of `COLUMNS`, then `gpus_<id>`, the
GPUs of each type in the steady fleet. Every renderer (CSV, Parquet, JSON, text, HTML) names
only these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.planning.plan import Plan
from planner.units import HOURS_PER_MONTH


@dataclass(frozen=True)
class Column:
    """One outcome column: its name, pandas dtype and what it holds."""

    name: str
    dtype: str
    doc: str


COLUMNS: tuple[Column, ...] = (
    Column(
        "status", "string", "optimal, time_limit (the solver's gap is in reason), infeasible, error"
    ),
    Column("reason", "string", "why the point is infeasible or failed; empty when it planned"),
    Column("cost_per_hour_usd", "float64", "the steady fleet for the peak, $/h"),
    Column("cost_per_month_usd", "float64", "the steady fleet, $ per 730-hour month"),
    Column(
        "cost_per_1k_output_tokens_usd", "float64", "steady fleet $ per 1K output tokens at peak"
    ),
    Column(
        "cost_per_1m_tokens_usd", "float64", "steady fleet $ per 1M input+output tokens at peak"
    ),
    Column("total_gpus", "Int64", "GPUs in the steady fleet"),
    Column(
        "over_time_per_month_usd",
        "float64",
        "plan over time (finance section): average $ per month over the horizon, every tier",
    ),
    Column(
        "over_time_cost_per_1k_output_tokens_usd",
        "float64",
        "plan over time: $ per 1K output tokens served over the horizon",
    ),
    Column("reserved_gpus", "Int64", "plan over time: GPUs reserved or owned for the horizon"),
    Column(
        "seconds",
        "float64",
        "wall time of the point's plan (the one column that differs between runs)",
    ),
)
OUTCOME = tuple(c.name for c in COLUMNS)
GPU_PREFIX = "gpus_"
COST_COLUMNS = (
    "cost_per_month_usd",
    "cost_per_1k_output_tokens_usd",
    "cost_per_1m_tokens_usd",
    "over_time_per_month_usd",
)
PERCENTILES = (10, 50, 90)


def outcome_of_plan(result: Plan) -> dict[str, Any]:
    """The outcome columns of a planned point; the fleet's GPUs by type under `gpus_<id>`."""
    fleet = result.fleet
    row: dict[str, Any] = {
        "status": fleet.status,
        "reason": f"solver gap {fleet.gap:.2%}" if fleet.status == "time_limit" else "",
        "cost_per_hour_usd": fleet.total_cost_per_hour_usd,
        "cost_per_month_usd": fleet.total_cost_per_hour_usd * HOURS_PER_MONTH,
        "cost_per_1k_output_tokens_usd": fleet.cost_per_1k_output_tokens_usd,
        "cost_per_1m_tokens_usd": fleet.cost_per_1m_tokens_usd,
        "total_gpus": fleet.total_gpus,
    }
    tp = result.over_time
    if tp is not None:
        sol = tp.solution
        row["over_time_per_month_usd"] = sol.total_cost / tp.horizon_months
        row["over_time_cost_per_1k_output_tokens_usd"] = tp.cost_per_1k_output_tokens_usd
        row["reserved_gpus"] = sum(sol.reserved.values()) + sum(sol.owned.values())
        if sol.status == "time_limit":  # the row's status says so, not only its reason
            row["status"] = "time_limit"
            if not row["reason"]:
                row["reason"] = f"plan over time: solver gap {sol.gap:.2%}"
    for d in fleet.deployments:
        key = GPU_PREFIX + d.gpu
        row[key] = row.get(key, 0) + d.gpus
    return row


def outcome_of_failure(status: str, reason: str) -> dict[str, Any]:
    """The outcome columns of a point that did not plan: its status and the reason."""
    return {"status": status, "reason": reason}


def input_cell(value: Any) -> Any:
    """A varied input as a table cell: numbers and strings as they are, lists and mappings as
    compact JSON (CSV and Parquet need one type per column)."""
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return value


def build_table(keys: tuple[str, ...], rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows as the declared table: point, inputs, outcome columns, GPUs by type (sorted)."""
    gpu_cols = sorted({k for r in rows for k in r if k.startswith(GPU_PREFIX)})
    frame = pd.DataFrame(rows, columns=["point", *keys, *OUTCOME, *gpu_cols])
    frame = frame.sort_values("point", kind="stable").reset_index(drop=True)
    for key in keys:
        frame[key] = _input_column(frame[key])
    for col in COLUMNS:
        frame[col.name] = frame[col.name].astype(col.dtype)
    frame["reason"] = frame["reason"].fillna("")
    made_a_fleet = frame["status"].isin(["optimal", "time_limit"])
    for gpu_col in gpu_cols:
        counts = frame[gpu_col]
        frame[gpu_col] = counts.where(~made_a_fleet, counts.fillna(0)).astype("Int64")
    frame["point"] = frame["point"].astype("int64")
    return frame


def _input_column(values: pd.Series) -> pd.Series:
    """One type per input column: booleans, integers, numbers (None as missing), else text."""
    cells = [input_cell(v) for v in values]
    given = [v for v in cells if v is not None]
    index = values.index
    if given and all(isinstance(v, bool) for v in given):
        return pd.Series(cells, dtype="boolean", index=index)
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in given)
    if given and numbers and all(isinstance(v, int) for v in given):
        return pd.Series(cells, dtype="Int64", index=index)
    if given and numbers:
        return pd.Series([np.nan if v is None else v for v in cells], dtype="float64", index=index)
    return pd.Series([None if v is None else str(v) for v in cells], dtype="string", index=index)


def planned(table: pd.DataFrame) -> pd.DataFrame:
    """The points that produced a fleet (optimal or stopped at the time limit)."""
    return table[table["status"].isin(["optimal", "time_limit"]).to_numpy()]


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per cost column: points planned, mean, P10/P50/P90, min and max over planned points."""
    ok = planned(table)
    out = []
    for col in COST_COLUMNS:
        values = ok[col].dropna().to_numpy(float)
        if not len(values):
            continue
        p10, p50, p90 = np.percentile(values, PERCENTILES)
        out.append(
            {
                "metric": col,
                "points": len(values),
                "mean": float(values.mean()),
                "p10": float(p10),
                "p50": float(p50),
                "p90": float(p90),
                "min": float(values.min()),
                "max": float(values.max()),
            }
        )
    return pd.DataFrame(
        out, columns=["metric", "points", "mean", "p10", "p50", "p90", "min", "max"]
    )


def default_metric(table: pd.DataFrame) -> str:
    """The cost the tornado ranks inputs by: the plan over time's monthly cost where there is
    one (what a finance section is about), else the steady fleet's."""
    ok = planned(table)
    if len(ok) and ok["over_time_per_month_usd"].notna().all():
        return "over_time_per_month_usd"
    return "cost_per_month_usd"


@dataclass(frozen=True)
class TornadoBar:
    """How far one input moves the cost: the cost at its low and its high setting."""

    key: str
    low_label: str
    high_label: str
    low_cost: float
    high_cost: float

    @property
    def swing(self) -> float:
        return abs(self.high_cost - self.low_cost)


@dataclass(frozen=True)
class Tornado:
    """The bars, widest first, around the baseline cost, and how they were measured."""

    metric: str
    baseline: float
    bars: tuple[TornadoBar, ...]
    method: str


def grid_tornado(
    table: pd.DataFrame, keys: tuple[str, ...], reference: dict[str, Any], metric: str
) -> Tornado | None:
    """One at a time from a grid: each input over its values with every other input at its
    reference value (the scenario's own where the grid has it, else the first listed); the
    bar runs from the cost at its lowest to that at its highest value (inputs that are not
    numbers: from the cheapest to the dearest value)."""
    ref = {k: input_cell(v) for k, v in reference.items()}
    ok = planned(table)
    at_ref = _rows_at(ok, ref, keys)
    bars = []
    for key in keys:
        others = tuple(k for k in keys if k != key)
        rows = _rows_at(ok, ref, others)
        rows = rows[rows[metric].notna().to_numpy()]
        if len(rows) < 2:
            continue
        lo, hi = _low_high(rows, key, metric)
        bars.append(
            TornadoBar(
                key,
                _label(rows.at[lo, key]),
                _label(rows.at[hi, key]),
                float(rows.at[lo, metric]),
                float(rows.at[hi, metric]),
            )
        )
    if not bars:
        return None
    bars.sort(key=lambda b: (-b.swing, b.key))
    baseline = float(at_ref[metric].iloc[0]) if len(at_ref) else float("nan")
    method = "one at a time over the grid, the other inputs at their reference values"
    return Tornado(metric, baseline, tuple(bars), method)


def _low_high(rows: pd.DataFrame, key: str, metric: str) -> tuple[Any, Any]:
    """Row labels of an input's low and high setting: its smallest and largest value, or for
    inputs that are not numbers its cheapest and dearest."""
    column = rows[key]
    numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
    if numeric and column.notna().all():
        return column.idxmin(), column.idxmax()
    return rows[metric].idxmin(), rows[metric].idxmax()


def _rows_at(table: pd.DataFrame, ref: dict[str, Any], keys: tuple[str, ...]) -> pd.DataFrame:
    """The rows whose inputs `keys` are at their reference values."""
    keep = np.ones(len(table), bool)
    for k in keys:
        column = table[k]
        same = column.isna() if ref[k] is None else column.eq(ref[k]).fillna(False)
        keep &= same.to_numpy(bool)
    return table[keep]


def _label(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def sample_tornado(table: pd.DataFrame, keys: tuple[str, ...], metric: str) -> Tornado | None:
    """From Monte Carlo samples: per input, the mean cost of the samples in its lowest tenth
    and in its highest tenth (choices: the cheapest and dearest choice on average)."""
    ok = planned(table)
    ok = ok[ok[metric].notna().to_numpy()]
    if len(ok) < 2:
        return None
    bars = [bar for key in keys if (bar := _sample_bar(ok, key, metric)) is not None]
    bars.sort(key=lambda b: (-b.swing, b.key))
    method = "mean cost of the samples in each input's lowest and highest tenth"
    return Tornado(metric, float(ok[metric].mean()), tuple(bars), method)


def _sample_bar(ok: pd.DataFrame, key: str, metric: str) -> TornadoBar | None:
    """One input's bar from the samples (numbers: tails; anything else: per-value means)."""
    column = ok[key]
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        x = column.to_numpy(float)
        lo_cut, hi_cut = np.percentile(x, [10, 90])
        low, high = ok[metric][x <= lo_cut], ok[metric][x >= hi_cut]
        if low.empty or high.empty or lo_cut == hi_cut:
            return None
        return TornadoBar(
            key, f"<= {lo_cut:.4g}", f">= {hi_cut:.4g}", float(low.mean()), float(high.mean())
        )
    means = ok.groupby(column.astype(str), observed=True)[metric].mean().sort_values()
    if len(means) < 2:
        return None
    return TornadoBar(
        key, str(means.index[0]), str(means.index[-1]), float(means.iloc[0]), float(means.iloc[-1])
    )
