"""The text `planner validate` and `planner calibrate` print."""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.calibration.commands import Calibration
from planner.calibration.fit import BOUNDS
from planner.calibration.measurements import METRICS
from planner.calibration.scoring import overall_errors


def _num_text(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "l") -> str:
    """Columns padded to their widest cell; `align` says l(eft) or r(ight) per column, the
    last letter repeating for the columns beyond it."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=True)]
    align = align + align[-1] * len(widths)

    def line(cells: Sequence[str]) -> str:
        parts = [
            str(c).ljust(w) if align[i] == "l" else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])


_METRIC_HEADERS = {
    "tpot": "TPOT ms",
    "ttft": "TTFT ms",
    "throughput": "output tok/s",
    "e2e": "E2E ms",
}


def _metric_cell(rec: dict, metric: str) -> str:
    m = rec["metrics"].get(metric)
    if m is None:
        return "-"
    return f"{_num_text(m['measured'])} / {_num_text(m['predicted'])} {m['error_pct']:+.0f}%"


def _row_lines(result: dict) -> list[str]:
    metrics = [m for m in METRICS if any(m in r["metrics"] for r in result["rows"])]
    headers = ["row", "engine", "profile", "model", "gpu", "quant", "kv", "tp", "B", "in", "out"]
    rows = [
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
            *(_metric_cell(r, m) for m in metrics),
        ]
        for r in result["rows"]
    ]
    headers += [f"{_METRIC_HEADERS[m]} (meas / pred err)" for m in metrics]
    return [text_table(headers, rows, "lllllllr")]


def _summary_lines(summary: list[dict]) -> list[str]:
    out = []
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
            ]
            for s in part
        ]
        out += ["", f"Absolute % error, {title}:"]
        out.append(
            text_table(["group", "metric", "n", "median", "p90", "median signed"], rows, "llr")
        )
    return out


def render_validation(result: dict) -> str:
    """`planner validate`: the rows, then the error per metric overall, per GPU, per source."""
    c = result["counts"]
    profiles = ", ".join(f"{k} -> {v}" for k, v in sorted(result["profiles"].items()))
    lines = [
        f"{c['compared']} of {c['rows']} rows compared with the model (profiles: {profiles}); "
        "error = predicted / measured - 1",
        "",
        *_row_lines(result),
        *_summary_lines(result["summary"]),
    ]
    if result["skipped"]:
        lines += ["", f"Skipped ({len(result['skipped'])} rows):"]
        by_reason: dict[str, list[str]] = {}
        for s in result["skipped"]:
            by_reason.setdefault(s["reason"], []).append(str(s["row_id"]))
        lines += [f"  - {reason}: rows {', '.join(ids)}" for reason, ids in by_reason.items()]
    return "\n".join(lines) + "\n"


def render_calibration(result: Calibration, output: str | None) -> str:
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
    lines = [
        f"Profile '{p.id}' fitted from '{result.base.id}' on {len(result.report['row_ids'])} "
        f"rows of {shown}",
        "",
        text_table(["constant", "base", "fitted", "+/- 1 sigma", "rows", "note"], rows, "lrrrrl"),
    ]
    if rep["residuals"] <= len(rep["fitted"]):
        lines.append(
            f"({rep['residuals']} measured values for {len(rep['fitted'])} constants: an exact "
            "fit, the 1-sigma values mean nothing)"
        )
    lines += [
        "",
        f"rms log error {rep.get('rms_log_before', math.nan):.3f} -> "
        f"{rep.get('rms_log_after', math.nan):.3f}",
        "",
        _error_table_text(result),
    ]
    if output:
        lines += ["", f"Wrote {output}"]
    return "\n".join(lines) + "\n"


def _constant_note(name: str, rep: dict, seen_by: int) -> str:
    if name not in rep["fitted"]:
        return "held: no row depends on it"
    notes = ["at bound"] if name in rep.get("at_bound", []) else []
    lo, hi = BOUNDS[name]
    if rep.get("sd", {}).get(name, 0.0) > 0.5 * (hi - lo):
        notes.append("undetermined: 1-sigma > half its range")
    if seen_by < 3:
        notes.append(f"weak: seen by {seen_by} row(s) only")
    return "; ".join(notes)


def _error_table_text(result: Calibration) -> str:
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
    return "Absolute % error on these rows:\n" + text_table(headers, rows, "lr")
