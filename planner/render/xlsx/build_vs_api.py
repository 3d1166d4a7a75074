"""The Build vs API sheet: the self-hosted fleet beside every API quote, with break-evens."""

from __future__ import annotations

from openpyxl.utils import quote_sheetname
from openpyxl.worksheet.worksheet import Worksheet

from planner.planning.plan import Plan
from planner.render.xlsx.analysis import Analysis
from planner.render.xlsx.cells import header, put
from planner.render.xlsx.names import (
    API_COLUMNS,
    FLEET,
    HOURS_NAME,
    MONTHLY,
    SUMMARY,
    Names,
    ref,
)
from planner.render.xlsx.styles import BOLD, MONEY, fit_widths
from planner.schema.plan import ApiQuote
from planner.units import SECONDS_PER_HOUR, TOKENS_PER_1K, TOKENS_PER_1M


def _api_columns(plan: Plan) -> list[tuple[str, str | None]]:
    cols = list(API_COLUMNS)
    if plan.over_time is not None:
        cols[5] = ("$/month (average month of the horizon)", MONEY)
        cols[7] = ("planner $/month (average month)", MONEY)
    return cols


def _monthly_total(plan: Plan, col: str) -> str:
    """The Monthly sheet's horizon total of one column."""
    assert plan.over_time is not None
    return ref(MONTHLY, f"{col}{len(plan.over_time.monthly) + 2}")


def _self_row(plan: Plan, totals: dict[str, str]) -> list:
    """Row 2: what an API is compared with, the plan over time's average month when there
    is one (live on the Monthly sheet), else the peak fleet (live on the Fleet sheet)."""
    fleet, ot = plan.fleet, plan.over_time
    summary = quote_sheetname(SUMMARY)
    if ot is not None:
        held = ot.held_gpus("x ")
        return [
            f"self-hosted: plan over time ({ot.horizon_months} months)",
            (held or "nothing held") + "; the rest rented per period (Monthly sheet)",
            None,
            None,
            f"=F2/{HOURS_NAME}",
            f"={_monthly_total(plan, 'H')}/{ot.horizon_months}",
            f"={_monthly_total(plan, 'I')}",
            plan.self_hosted_monthly_usd,
            None,
            "Monthly sheet of this workbook: horizon total / months",
            "",
        ]
    mix = " + ".join(
        f"{d.replicas}x {d.gpu} TP{d.tp}"
        + (f" PP{d.pp}" if d.pp > 1 else "")
        + (f" EP{d.ep} DP{d.dp_attention}" if d.ep > 1 else "")
        for d in fleet.deployments
    )
    return [
        "self-hosted fleet (this plan)",
        mix or "(no deployments)",
        None,
        None,
        f"={ref(FLEET, totals['cost_per_hour'])}",
        f"={ref(FLEET, totals['cost_per_month'])}",
        f"={summary}!$B$13" if plan.output_tokens_per_s > 0 else None,
        fleet.monthly_cost_usd,
        None,
        "Fleet sheet of this workbook",
        "",
    ]


def _api_monthly(plan: Plan, q: ApiQuote, names: Names, r: int) -> str:
    """An API's bill a month: the tokens of the average month of the horizon (live on the
    Monthly sheet; their prefix-cached share at the cached price) with a plan over time,
    else $/h x hours x the average demand factor."""
    ot = plan.over_time
    if ot is None:
        factor = f"*{names.factor}" if names.factor else ""
        return f"=E{r}*{HOURS_NAME}{factor}"
    tokens_in, tokens_out = _monthly_total(plan, "M"), _monthly_total(plan, "C")
    price = f"C{r}"
    if ot.cached_input_share and q.cached_input_usd_per_1m is not None:
        share, cached = ot.cached_input_share, q.cached_input_usd_per_1m
        price = f"(C{r}-{share:.10g}*(C{r}-{cached:.10g}))"
    return f"=({tokens_in}*{price}+{tokens_out}*D{r})/{TOKENS_PER_1M:.0f}/{ot.horizon_months}"


def _cached_term(plan: Plan, q: ApiQuote, r: int) -> str:
    """The discount on prefix-cached prompt tokens, at the quote's cached-input price
    (issue #11): '-cached_tokens_per_s*(C - cached price)', or '' when none applies."""
    cached = sum(c.requests_per_second * c.prefix_cached_tokens for c in plan.classes)
    if not cached or q.cached_input_usd_per_1m is None:
        return ""
    return f"-{cached:.10g}*(C{r}-{q.cached_input_usd_per_1m:.10g})"


def _notes(plan: Plan, analysis: Analysis) -> list[str]:
    notes = [
        "break-even: the least peak demand (and the tokens per month it brings) at which a "
        "self-hosted fleet, re-solved at that volume, costs no more than this API; empty "
        "where self-hosting does not win up to 1000x the scenario's demand"
    ]
    if plan.over_time is not None:
        notes.append(
            "the API bill is the tokens each month serves (average_demand_factor x the "
            "month's peak), averaged over the horizon; self-hosting is the plan over time "
            "(reserved, owned, on-demand and spot) averaged the same way; break-even volumes "
            "scale every month's demand and re-solve the plan over time"
        )
    notes += analysis.notes
    return notes


def write_build_vs_api(
    ws: Worksheet, plan: Plan, totals: dict[str, str], names: Names, analysis: Analysis
) -> tuple[int, int]:
    """The self-hosted row and one row per API quote; returns the API rows (first, last)."""
    columns = _api_columns(plan)
    header(ws, [label for label, _ in columns])
    fmts = [fmt for _, fmt in columns]
    summary = quote_sheetname(SUMMARY)
    tok_out = plan.output_tokens_per_s
    for j, v in enumerate(_self_row(plan, totals)):
        put(ws, 2, j + 1, v, fmts[j]).font = BOLD
    for i, q in enumerate(plan.api_quotes):
        r = 3 + i
        found = analysis.comparisons.get(q)
        values = [
            q.provider,
            q.provider_model_id,
            q.input_usd_per_1m,
            q.output_usd_per_1m,
            f"=({summary}!$B$9*C{r}+{summary}!$B$10*D{r}{_cached_term(plan, q, r)})"
            f"*{SECONDS_PER_HOUR:.0f}/{TOKENS_PER_1M:.0f}",
            _api_monthly(plan, q, names, r),
            f"=E{r}/({SECONDS_PER_HOUR:.0f}*{summary}!$B$10)*{TOKENS_PER_1K:.0f}"
            if tok_out > 0
            else None,
            found.api_monthly_usd if found else plan.api_monthly_usd(q),
            f"=F{r}-$F$2",
            q.source,
            q.as_of,
            found.break_even_peak_requests_per_s if found else None,
            found.break_even_tokens_per_month if found else None,
        ]
        for j, v in enumerate(values):
            put(ws, r, j + 1, v, fmts[j])
    last = 2 + len(plan.api_quotes)
    notes = _notes(plan, analysis)
    ws.freeze_panes = "A2"
    fit_widths(ws)
    for i, note in enumerate(notes):  # after the widths: notes run on over empty cells
        ws.cell(row=last + 2 + i, column=1, value="note")
        put(ws, last + 2 + i, 2, note)
    return 3, last
