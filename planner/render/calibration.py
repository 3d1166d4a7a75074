"""The text `planner validate` and `planner calibrate` print, as rich tables in 100 columns.

The row table of `validate` has a row's identity and, per metric, the measured and predicted
values and the error. At 100 columns the least useful columns go first (profile, KV dtype,
engine, quant, the measured/predicted pairs); the errors and what ran always stay; `--wide`
shows every column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from planner.calibration.commands import Calibration
from planner.calibration.fit import BOUNDS
from planner.calibration.measurements import METRICS
from planner.calibration.scoring import overall_errors
from planner.render.tables import Col, Layout, table, wrap

_METRIC_HEADERS = {"tpot": "TPOT ms", "ttft": "TTFT ms", "throughput": "tok/s", "e2e": "E2E ms"}


def _num_text(x: float | None) -> str:
    """A measured or predicted value with the digits it needs."""
    if x is None or not math.isfinite(x):
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def _pair(rec: dict, metric: str) -> str:
    m = rec["metrics"].get(metric)
    return "-" if m is None else f"{_num_text(m['measured'])} / {_num_text(m['predicted'])}"


def _error(rec: dict, metric: str) -> str:
    m = rec["metrics"].get(metric)
    return "-" if m is None else f"{m['error_pct']:+.0f}%"


def _row_columns(metrics: Sequence[str]) -> list[Col]:
    """What ran (kept), then the measured/predicted pairs and the errors of each metric."""
    cols = [
        Col("row", "r"),
        Col("engine", priority=5),
        Col("profile", priority=9),
        Col("model", max_width=18),
        Col("gpu"),
        Col("quant", priority=6),
        Col("kv", priority=8),
        Col("tp", "r"),
        Col("B", "r"),
        Col("in", "r", priority=4),
        Col("out", "r", priority=4),
    ]
    cols += [Col(f"{_METRIC_HEADERS[m]} meas / pred", "r", priority=7) for m in metrics]
    cols += [Col(f"{_METRIC_HEADERS[m]} err", "r") for m in metrics]
    return cols


def _row_table(result: dict, layout: Layout) -> str:
    metrics = [m for m in METRICS if any(m in r["metrics"] for r in result["rows"])]
    rows: list[list[Any]] = [
        [
            str(r["row_id"]),
            r["engine"],
            r["profile"],
            r["model"],
            r["gpu"],
            r["quant"],
            r["kv_dtype"],
            str(r["tp"]),
            f"{r['batch']:g}",
            f"{r['input_len']:.0f}",
            f"{r['output_len']:.0f}",
            *(_pair(r, m) for m in metrics),
            *(_error(r, m) for m in metrics),
        ]
        for r in result["rows"]
    ]
    return table(_row_columns(metrics), rows, layout)


def _summary_lines(summary: list[dict], layout: Layout) -> list[str]:
    """Absolute % error per metric (and the one-sided p90 margin): overall, per GPU, per
    source."""
    out = []
    cols = [Col("group", max_width=40), Col("metric"), Col("n", "r")]
    cols += [Col("median", "r"), Col("p90", "r"), Col("median signed", "r")]
    cols += [Col("p90 margin", "r", priority=1)]  # issue #10: what --prediction-margin plans to
    for by, title in (("all", "overall"), ("gpu", "per GPU"), ("source", "per source")):
        part = [s for s in summary if s["by"] == by]
        if not part:
            continue
        rows = [
            [
                s["group"],
                s["metric"],
                str(s["n"]),
                f"{s['median_abs_pct']:.0f}%",
                f"{s['p90_abs_pct']:.0f}%",
                f"{s['median_signed_pct']:+.0f}%",
                f"{s['margin_p90_pct']:.0f}%",
            ]
            for s in part
        ]
        out += ["", f"Absolute % error, {title}:", table(cols, rows, layout)]
    return out


def render_validation(result: dict, layout: Layout = Layout()) -> str:
    """`planner validate`: the rows, then the error per metric overall, per GPU, per source."""
    c = result["counts"]
    profiles = ", ".join(f"{k} -> {v}" for k, v in sorted(result["profiles"].items()))
    head = (
        f"{c['compared']} of {c['rows']} rows compared with the model (profiles: {profiles}); "
        "error = predicted / measured - 1"
    )
    lines = [wrap(head, layout), "", _row_table(result, layout)]
    noted = [r for r in result["rows"] if r["note"]]
    if noted:
        lines += ["", "Notes:"]
        lines += [wrap(f"  - row {r['row_id']}: {r['note']}", layout, indent="    ") for r in noted]
    lines += _summary_lines(result["summary"], layout)
    if result["skipped"]:
        lines += ["", f"Skipped ({len(result['skipped'])} rows):"]
        by_reason: dict[str, list[str]] = {}
        for s in result["skipped"]:
            by_reason.setdefault(s["reason"], []).append(str(s["row_id"]))
        lines += [
            wrap(f"  - {reason}: rows {', '.join(ids)}", layout, indent="    ")
            for reason, ids in by_reason.items()
        ]
    return "\n".join(lines) + "\n"


def render_calibration(result: Calibration, output: str | None, layout: Layout = Layout()) -> str:
    """`planner calibrate`: the fitted constants with 1-sigma, the error before and after."""
    rep = result.report["default"]
    p = result.profile
    rows = []
    for name in result.params:
        sd = rep.get("sd", {}).get(name)
        rows.append(
            [
                name,
                f"{getattr(result.base.default, name):.4g}",
                f"{getattr(p.default, name):.4g}",
                "-" if sd is None else f"{sd:.2g}",
                str(result.seen_by.get(name, 0)),
                _constant_note(name, rep, result.seen_by.get(name, 0)),
            ]
        )
    inputs = list(result.inputs)
    shown = ", ".join(inputs) if len(inputs) <= 3 else f"{len(inputs)} inputs ({inputs[0]}, ...)"
    cols = [Col("constant"), Col("base", "r"), Col("fitted", "r"), Col("+/- 1 sigma", "r")]
    cols += [Col("rows", "r"), Col("note", max_width=40)]
    lines = [
        wrap(
            f"Profile '{p.id}' fitted from '{result.base.id}' on {len(result.report['row_ids'])} "
            f"rows of {shown}",
            layout,
        ),
        "",
        table(cols, rows, layout),
    ]
    if rep["residuals"] <= len(rep["fitted"]):
        lines.append(
            wrap(
                f"({rep['residuals']} measured values for {len(rep['fitted'])} constants: an "
                "exact fit, the 1-sigma values mean nothing)",
                layout,
            )
        )
    lines += [
        "",
        f"rms log error {rep.get('rms_log_before', math.nan):.3f} -> "
        f"{rep.get('rms_log_after', math.nan):.3f}",
        "",
        _error_table_text(result, layout),
    ]
    if output:
        lines += ["", wrap(f"Wrote {output}", layout)]
    return "\n".join(lines) + "\n"


def _constant_note(name: str, rep: dict, seen_by: int) -> str:
    """Why a fitted constant is not to be trusted: held, at a bound, undetermined, weak."""
    if name not in rep["fitted"]:
        return "held: no row depends on it"
    notes = ["at bound"] if name in rep.get("at_bound", []) else []
    lo, hi = BOUNDS[name]
    if rep.get("sd", {}).get(name, 0.0) > 0.5 * (hi - lo):
        notes.append("undetermined: 1-sigma > half its range")
    if seen_by < 3:
        notes.append(f"weak: seen by {seen_by} row(s) only")
    return "; ".join(notes)


def _error_table_text(result: Calibration, layout: Layout) -> str:
    """Median and p90 absolute % error per metric, before and after the fit."""
    before, after = overall_errors(result.before), overall_errors(result.after)
    rows = []
    for m, a in after.items():
        b = before.get(m, {"median_abs_pct": math.nan, "p90_abs_pct": math.nan})
        rows.append(
            [
                m,
                str(a["n"]),
                f"{b['median_abs_pct']:.1f}%",
                f"{b['p90_abs_pct']:.1f}%",
                f"{a['median_abs_pct']:.1f}%",
                f"{a['p90_abs_pct']:.1f}%",
            ]
        )
    headers = ["metric", "n", "before median", "before p90", "after median", "after p90"]
    cols = [Col(h, "l" if i == 0 else "r") for i, h in enumerate(headers)]
    return "Absolute % error on these rows:\n" + table(cols, rows, layout)
