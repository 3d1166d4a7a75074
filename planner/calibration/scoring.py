"""Prediction errors: per (row, metric), and their median and 90th percentile per metric,
GPU and source (`error_table`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.calibration.measurements import MEASURED, METRICS, PREDICTED


def long_errors(pred: pd.DataFrame, include_skipped: bool = False) -> pd.DataFrame:
    """One row per (measurement row, metric) with measured, predicted and the errors.

    `signed_pct` = (pred - meas) / meas * 100; `optimism_pct` > 0 means the model predicts a
    faster system than measured (lower latency or higher throughput)."""
    frame = pred if include_skipped else pred[pred["skip_reason"] == ""]
    parts = []
    keep = [
        "row_id",
        "source_key",
        "engine",
        "gpu_id",
        "gpu_family",
        "model_id",
        "quant_id",
        "tp",
        "skip_reason",
    ]
    for m in METRICS:
        sub = frame[frame[MEASURED[m]].notna() & frame[PREDICTED[m]].notna()]
        if sub.empty:
            continue
        part = sub[keep].copy()
        part["metric"] = m
        part["measured"] = sub[MEASURED[m]].to_numpy(dtype=float)
        part["predicted"] = sub[PREDICTED[m]].to_numpy(dtype=float)
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=[*keep, "metric", "measured", "predicted"])
    out = pd.concat(parts, ignore_index=True)
    ratio = out["predicted"] / out["measured"]
    out["signed_pct"] = (ratio - 1.0) * 100.0
    out["abs_pct"] = out["signed_pct"].abs()
    speed = np.where(out["metric"] == "throughput", ratio, 1.0 / ratio)
    out["optimism_pct"] = (speed - 1.0) * 100.0
    out["log_ratio"] = np.log(ratio)
    return out


def _summary(errors: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    grouped = errors.groupby(keys, sort=True)
    out = grouped.agg(
        n=("abs_pct", "size"),
        median_abs_pct=("abs_pct", "median"),
        p90_abs_pct=("abs_pct", lambda s: float(np.percentile(s, 90))),
        median_signed_pct=("signed_pct", "median"),
        median_optimism_pct=("optimism_pct", "median"),
        p90_optimism_pct=("optimism_pct", lambda s: float(np.percentile(s, 90))),
    )
    return out.reset_index()


ERROR_TABLE_COLUMNS = (
    "by",
    "group",
    "metric",
    "n",
    "median_abs_pct",
    "p90_abs_pct",
    "median_signed_pct",
    "median_optimism_pct",
    "p90_optimism_pct",
)


def error_table(pred: pd.DataFrame, include_skipped: bool = False) -> pd.DataFrame:
    """Median and 90th-percentile absolute % error per metric: over all rows (by='all'),
    per GPU (by='gpu') and per source (by='source'). Columns: by, group, metric, n,
    median_abs_pct, p90_abs_pct, median_signed_pct, median_optimism_pct, p90_optimism_pct
    (the 90th percentile of how much faster the model predicts than measured: the margin
    that covers 90% of rows on the unsafe side)."""
    errors = long_errors(pred, include_skipped)
    if errors.empty:
        return pd.DataFrame(columns=list(ERROR_TABLE_COLUMNS))
    tables = []
    for by, key in (("all", None), ("gpu", "gpu_id"), ("source", "source_key")):
        if key is None:
            part = _summary(errors.assign(group="all"), ["group", "metric"])
        else:
            part = _summary(errors.rename(columns={key: "group"}), ["group", "metric"])
        tables.append(part.assign(by=by))
    out = pd.concat(tables, ignore_index=True)
    return out[list(ERROR_TABLE_COLUMNS)]


def overall_errors(table: pd.DataFrame) -> dict[str, dict]:
    """metric -> n, median_abs_pct, p90_abs_pct of an error_table's by='all' rows."""
    part = table[table["by"] == "all"]
    return {
        r["metric"]: {
            "n": int(r["n"]),
            "median_abs_pct": float(r["median_abs_pct"]),
            "p90_abs_pct": float(r["p90_abs_pct"]),
        }
        for _, r in part.iterrows()
    }
