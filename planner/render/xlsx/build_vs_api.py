"""The Build vs API sheet: the self-hosted fleet beside every API quote, with break-evens."""

from __future__ import annotations

from openpyxl.utils import quote_sheetname
from openpyxl.worksheet.worksheet import Worksheet

from planner.planning.plan import Plan
from planner.render.xlsx.analysis import Analysis
from planner.render.xlsx.cells import header, put
from planner.render.xlsx.names import API_COLUMNS, FLEET, HOURS_NAME, SUMMARY, Names, ref
from planner.render.xlsx.styles import BOLD, MONEY, fit_widths
from planner.units import SECONDS_PER_HOUR, TOKENS_PER_1K, TOKENS_PER_1M


def _api_columns(plan: Plan) -> list[tuple[str, str | None]]:
    cols = list(API_COLUMNS)
    if plan.over_time is not None:
        cols[5] = ("$/month (API at average demand)", MONEY)
        cols[7] = ("planner $/month (API at average demand)", MONEY)
    return cols


def _notes(plan: Plan, analysis: Analysis) -> list[str]:
    notes = [
        "break-even: the peak demand (and the tokens per month it brings) from which a "
        "self-hosted fleet, re-solved at that volume, costs no more than this API; empty "
        "where self-hosting does not win up to 1000x the scenario's demand"
    ]
    if plan.over_time is not None:
        notes.append(
            "the API bill follows the average demand (average_demand_factor x the peak); "
            "the self-hosted fleet is sized for the peak and paid around the clock"
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
    fleet = plan.fleet
    mix = " + ".join(f"{d.replicas}x {d.gpu} TP{d.tp}" for d in fleet.deployments)
    summary = quote_sheetname(SUMMARY)
    tok_out = plan.output_tokens_per_s
    self_row = [
        "self-hosted fleet (this plan)",
        mix or "(no deployments)",
        None,
        None,
        f"={ref(FLEET, totals['cost_per_hour'])}",
        f"={ref(FLEET, totals['cost_per_month'])}",
        f"={summary}!$B$13" if tok_out > 0 else None,
        fleet.monthly_cost_usd,
        None,
        "Fleet sheet of this workbook",
        "",
    ]
    for j, v in enumerate(self_row):
        put(ws, 2, j + 1, v, fmts[j]).font = BOLD
    factor = f"*{names.factor}" if names.factor else ""
    for i, q in enumerate(plan.api_quotes):
        r = 3 + i
        found = analysis.comparisons.get(q)
        values = [
            q.provider,
            q.provider_model_id,
            q.input_usd_per_1m,
            q.output_usd_per_1m,
            f"=({summary}!$B$9*C{r}+{summary}!$B$10*D{r})*{SECONDS_PER_HOUR:.0f}/{TOKENS_PER_1M:.0f}",
            f"=E{r}*{HOURS_NAME}{factor}",
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
