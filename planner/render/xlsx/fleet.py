"""The Fleet sheet: one row per deployment with live cost formulas, then the totals."""

from __future__ import annotations

from collections.abc import Iterable

from openpyxl.worksheet.worksheet import Worksheet

from planner.planning.plan import Plan
from planner.render.xlsx.cells import finite, header, put
from planner.render.xlsx.names import FLEET_COLUMNS, HOURS_NAME, UTILISATION_NAME
from planner.render.xlsx.styles import BOLD, fit_widths
from planner.schema.plan import Deployment


def _served(d: Deployment) -> list[str]:
    return [n for n, load in d.load_by_class.items() if load > 1e-9] or list(d.tpot_ms_by_class)


def _class_detail(d: Deployment) -> str:
    parts = []
    for n in _served(d):
        tpot, ttft = d.tpot_ms_by_class.get(n), d.ttft_ms_by_class.get(n)
        lat = ""
        if tpot is not None and ttft is not None:
            lat = f" (TPOT {tpot:.1f} ms, TTFT {ttft:.0f} ms)"
        parts.append(f"{n}: {d.load_by_class.get(n, 0.0):.3g} req/s{lat}")
    return "; ".join(parts)


def spec_label(d: Deployment) -> str:
    """'off', or 'draft: k 5, acceptance 0.6' (issue #11)."""
    if d.speculative == "off":
        return "off"
    return f"{d.speculative}: k {d.spec_tokens}, acceptance {d.spec_acceptance:g}"


def _tightest(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return min(found) if found else None


def _stages(d: Deployment) -> str:
    """The factor beyond TP in GPUs per replica ('*2' for pp x dp_attention = 2; '' for 1)."""
    extra = d.pp * d.dp_attention
    return f"*{extra}" if extra > 1 else ""


def write_fleet(ws: Worksheet, plan: Plan, price_names: dict[str, str]) -> dict[str, str]:
    """Fleet lines and totals; returns the total cells by key ("cost_per_hour", ...)."""
    header(ws, [label for label, _ in FLEET_COLUMNS])
    fmts = [fmt for _, fmt in FLEET_COLUMNS]
    by_name = {c.name: c for c in plan.classes}
    lines = plan.fleet.deployments
    n = len(lines)
    total = n + 2
    for i, d in enumerate(lines):
        r = i + 2
        served = [by_name[c] for c in _served(d) if c in by_name]
        values = [
            d.gpu,
            d.tp,
            d.quant,
            d.kv_dtype,
            d.batch,
            d.replicas,
            f"=F{r}*B{r}{_stages(d)}",
            f"={price_names[d.gpu]}",
            f"=G{r}*H{r}",
            f"=I{r}*{HOURS_NAME}",
            d.cost_per_hour_usd,
            d.requests_per_s,
            capacity_formula(d.capacity_requests_per_s, plan.utilisation),
            f"=L{r}/L${total}" if plan.total_requests_per_s > 0 else None,
            f"=L{r}/M{r}" if (finite(d.capacity_requests_per_s) or 0) > 0 else None,
            d.tpot_ms,
            d.ttft_ms,
            _tightest(c.tpot_ms for c in served),
            _tightest(c.ttft_ms for c in served),
            _class_detail(d),
            d.price_provider,
            spec_label(d),
            d.role,
        ]
        for j, v in enumerate(values):
            put(ws, r, j + 1, v, fmts[j])
    ws.cell(row=total, column=1, value="Total").font = BOLD
    for col in "FGIJKLMN":
        j = ord(col) - ord("A")
        put(ws, total, j + 1, _total_formula(col, lines), fmts[j]).font = BOLD
    ws.freeze_panes = "A2"
    fit_widths(ws)
    return {
        "gpus": f"G{total}",
        "cost_per_hour": f"I{total}",
        "cost_per_month": f"J{total}",
        "capacity": f"M{total}",
    }


def _total_formula(col: str, lines: tuple[Deployment, ...]) -> str | int:
    """The Total row's cell of column `col`. GPUs and money add over every line; a request
    goes through a prefill and a decode pool, so requests/s and its share count each request
    once (prefill lines left out) and the capacity is the aggregated lines' plus the smaller
    of the two pools' (they carry the same requests: summing them doubled it)."""
    if not lines:
        return 0
    rows = {
        role: [f"{col}{i + 2}" for i, d in enumerate(lines) if d.role == role]
        for role in ("aggregated", "prefill", "decode")
    }
    if not rows["prefill"] and not rows["decode"]:
        return f"=SUM({col}2:{col}{len(lines) + 1})"
    if col in "LN":
        return f"=SUM({','.join(rows['aggregated'] + rows['decode'])})"
    if col == "M":
        pools = f"MIN(SUM({','.join(rows['prefill'])}),SUM({','.join(rows['decode'])}))"
        return (
            f"=SUM({','.join(rows['aggregated'])})+{pools}" if rows["aggregated"] else f"={pools}"
        )
    return f"=SUM({col}2:{col}{len(lines) + 1})"


def capacity_formula(capacity: float, planned: float) -> str | float:
    """Capacity at the workbook's (editable) utilisation: the planned capacity scales with
    the load replicas are run at (latencies are not re-checked: rerun planner)."""
    if not planned or finite(capacity) is None:
        return capacity
    return f"={float(capacity)!r}*{UTILISATION_NAME}/{float(planned)!r}"
