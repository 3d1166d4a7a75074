"""A finished sweep as a terminal report, one JSON object, CSV or Parquet (the only pyarrow
user). Formats the table that planning.sweep_table declared; computes nothing."""

from __future__ import annotations

import math
import numbers
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from planner.errors import InputError
from planner.planning.sweep import SweepResult
from planner.planning.sweep_table import COLUMNS, GPU_PREFIX, Tornado
from planner.render.json import stable
from planner.render.tables import Col, Layout, human, per_token_money, table, wrap
from planner.writing import write_text_atomic

SHOWN_ROWS = 40


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain dicts: missing values as None."""
    out = []
    for row in frame.astype(object).to_dict(orient="records"):
        out.append({k: (None if _missing(v) else v) for k, v in row.items()})
    return out


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def tornado_dict(tornado: Tornado | None) -> dict[str, Any] | None:
    """The tornado as plain data."""
    if tornado is None:
        return None
    return {
        "metric": tornado.metric,
        "baseline": tornado.baseline,
        "method": tornado.method,
        "bars": [
            {
                "key": b.key,
                "low": b.low_label,
                "high": b.high_label,
                "low_cost": b.low_cost,
                "high_cost": b.high_cost,
                "swing": b.swing,
            }
            for b in tornado.bars
        ],
    }


def sweep_dict(result: SweepResult) -> dict[str, Any]:
    """The whole sweep as one JSON-ready object: how it ran, the rows, summary and tornado."""
    return stable(
        {
            "scenario": result.scenario_name,
            "mode": result.mode,
            "varied": list(result.keys),
            "seed": result.seed,
            "runner": result.runner,
            "seconds": result.seconds,
            "points": len(result.table),
            "points_total": result.points_total,
            "interrupted": result.interrupted,
            "notes": list(result.notes),
            "metric": result.metric,
            "columns": {c.name: c.doc for c in COLUMNS},
            "rows": _records(result.table),
            "summary": _records(result.summary),
            "tornado": tornado_dict(result.tornado),
        }
    )


def _money(v: Any) -> str:
    return "" if _missing(v) or not math.isfinite(float(v)) else f"${float(v):,.0f}"


def _gpus(row: pd.Series, gpu_cols: list[str]) -> str:
    """`4 h100-sxm, 1 b200`: the fleet's GPUs by type."""
    counts = [(c.removeprefix(GPU_PREFIX), row[c]) for c in gpu_cols if not _missing(row[c])]
    return ", ".join(f"{int(n)} {gpu}" for gpu, n in counts if int(n) > 0)


def _point_rows(result: SweepResult) -> list[list[Any]]:
    """The terminal's rows: inputs, status, monthly costs, $/1K output, GPUs."""
    frame = result.table
    gpu_cols = [c for c in frame.columns if c.startswith(GPU_PREFIX)]
    over_time = frame["over_time_per_month_usd"].notna().any()
    rows = []
    for _, r in frame.head(SHOWN_ROWS).iterrows():
        cells = [int(r["point"]), *["" if _missing(r[k]) else r[k] for k in result.keys]]
        cells += [r["status"], _money(r["cost_per_month_usd"])]
        if over_time:
            cells.append(_money(r["over_time_per_month_usd"]))
        per_1k = r["cost_per_1k_output_tokens_usd"]
        cells.append("" if _missing(per_1k) else per_token_money(float(per_1k)))
        failed = r["status"] in ("infeasible", "error") and not _missing(r["reason"])
        cells.append(str(r["reason"])[:60] if failed else _gpus(r, gpu_cols))  # why not
        rows.append(cells)
    return rows


# what the point table's fixed columns take at most (point, status, costs, $/1K, padding)
FIXED_WIDTH = 75


def _input_headers(keys: tuple[str, ...], layout: Layout) -> tuple[list[str], str]:
    """The varied inputs' column headers: their key paths when they fit beside the fixed
    columns, else #1, #2, ... with a legend (#13: four long keys were folded into 6-column
    strips and `optimal` broke across two lines)."""
    if layout.wide or sum(len(k) + 2 for k in keys) + FIXED_WIDTH <= layout.width:
        return list(keys), ""
    short = [f"#{i + 1}" for i in range(len(keys))]
    return short, "Inputs: " + "; ".join(f"{h} {k}" for h, k in zip(short, keys, strict=True))


def _input_col(header: str, values: list[Any]) -> Col:
    """A varied input's column: numbers right-aligned and never wrapped, text wraps."""
    real = [isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values]
    numeric = bool(values) and all(real)
    return Col(header, "r") if numeric else Col(header, max_width=28)


def render_sweep(result: SweepResult, layout: Layout = Layout()) -> str:
    """The sweep for a terminal: the points, P10/P50/P90 of each cost, the tornado; in 100
    columns unless `layout` is wide (long inputs wrap, the GPUs column goes first)."""
    frame = result.table
    ok = int(frame["status"].isin(["optimal", "time_limit"]).sum())
    head = (
        f"Sweep of {result.scenario_name}: {len(frame)} of {result.points_total} points "
        f"({ok} planned, {len(frame) - ok} infeasible or failed) on {result.runner} in "
        f"{result.seconds:.1f} s ({result.points_per_second:.2f} points/s)"
    )
    if result.seed is not None:
        head += f", seed {result.seed}"
    head += " - INTERRUPTED, finished points only" if result.interrupted else ""
    lines = [wrap(head, layout), ""]
    over_time = frame["over_time_per_month_usd"].notna().any()
    rows = _point_rows(result)
    headers, legend = _input_headers(result.keys, layout)
    cols = [Col("point", "r")]
    cols += [_input_col(h, [r[1 + i] for r in rows]) for i, h in enumerate(headers)]
    cols += [Col("status", no_wrap=True), Col("$/month (peak fleet)", "r")]
    cols += [Col("$/month (over time)", "r")] if over_time else []
    cols += [Col("$/1K out", "r"), Col("GPUs (or why not)", priority=1, max_width=30)]
    lines += [wrap(legend, layout, indent="  ")] if legend else []
    lines.append(table(cols, rows, layout))
    if len(frame) > SHOWN_ROWS:
        lines.append(f"... {len(frame) - SHOWN_ROWS} more rows: write them all with -o FILE.csv")
    lines += ["", _summary_text(result, layout), "", _tornado_text(result.tornado, layout)]
    lines += [wrap(f"Note: {n}", layout, indent="  ") for n in result.notes]
    return "\n".join(lines).rstrip() + "\n"


def _metric_text(metric: str, v: Any) -> str:
    """A summary figure in its metric's unit: whole dollars a month, a price per 1K or 1M
    tokens to three significant digits (it printed 14,363.8 for $14,364 a month)."""
    if _missing(v) or not math.isfinite(float(v)):
        return ""
    if metric.endswith("_per_month_usd"):
        return _money(v)
    if metric.endswith("_usd"):
        return per_token_money(float(v))
    return human(float(v))


def _summary_text(result: SweepResult, layout: Layout) -> str:
    rows = [
        [
            s["metric"],
            s["points"],
            *(_metric_text(s["metric"], s[q]) for q in ("p10", "p50", "p90", "mean")),
        ]
        for s in _records(result.summary)
    ]
    if not rows:
        return "No point planned: no summary."
    return "Cost over the planned points:\n" + table(
        ["metric", "points", "P10", "P50", "P90", "mean"], rows, layout
    )


def _tornado_text(tornado: Tornado | None, layout: Layout) -> str:
    if tornado is None or not tornado.bars:
        return "Tornado: not enough planned points to compare inputs."
    rows = [
        [b.key, b.low_label, _money(b.low_cost), b.high_label, _money(b.high_cost), _money(b.swing)]
        for b in tornado.bars
    ]
    title = wrap(f"What moves {tornado.metric} most ({tornado.method}):", layout)
    return title + "\n" + table(["input", "low", "cost", "high", "cost", "swing"], rows, layout)


def write_table(result: SweepResult, path: str | Path) -> Path:
    """The result table as CSV or Parquet (by the suffix), written atomically."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return write_text_atomic(path, result.table.to_csv(index=False))
    if suffix != ".parquet":
        raise InputError(f"-o {path}: write .csv or .parquet")
    try:
        import pyarrow  # noqa: F401 - pandas writes Parquet through it
    except ImportError:
        raise InputError("Parquet needs pyarrow: pip install -e '.[ray]'") from None
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"cannot write {path}: folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        result.table.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    return path
