"""The plan over time: Periods (blocks of months by demand slot) and Monthly (by tier)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openpyxl.chart import BarChart, Reference
from openpyxl.utils import column_index_from_string as col_index
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.worksheet.worksheet import Worksheet

from planner.planning.plan import TIERS, MonthPlan, PeriodPlan, Plan, TimePlan
from planner.render.labels import months_label
from planner.render.xlsx.cells import finite, header, put
from planner.render.xlsx.fleet import capacity_formula
from planner.render.xlsx.names import (
    CLASS_TABLE_COLUMN,
    HOURS_NAME,
    MONTHLY_COLUMNS,
    OVER_CAPACITY,
    PERIODS,
    SUMMARY,
    Names,
)
from planner.render.xlsx.styles import (
    BOLD,
    COUNT,
    HOURS_FMT,
    MONEY,
    MONEY_FINE,
    PERCENT,
    RATE,
    UNIT_PRICE,
    fit_widths,
    show_axes,
)
from planner.units import TOKENS_PER_1K

PERIOD_TIERS = TIERS  # the plan's tiers, in column order
TIER_LABELS = {"reserved": "reserved", "owned": "owned", "on_demand": "on-demand", "spot": "spot"}
PERIOD_COUNTS = ("reserved", "owned", "on_demand", "spot", "in_use")


@dataclass(frozen=True)
class PeriodRefs:
    """Where Monthly finds a month's block on the Periods sheet."""

    blocks: dict[int, tuple[int, int]]  # month (from 1) -> first and last row of its block
    months_col: str  # column of "months in block"
    cost_cols: dict[str, str]  # tier -> column of that tier's $ in the period


# ---------------------------------------------------------------- Periods


def _tier_cost(tier: str, gpus: list[str], cols: dict, names: Names, r: int) -> Any:
    """=(GPUs x price summed over GPU types) x hours of the period, for one tier."""
    terms = [f"{cols[g, tier]}{r}*{names.tier[tier, g]}" for g in gpus if (tier, g) in names.tier]
    return f"=({'+'.join(terms)})*G{r}" if terms else 0


def _period_headers(
    classes: list[str], gpus: list[str]
) -> tuple[list[str], list[str | None], dict[tuple[str, str], str], dict[str, str]]:
    headers = [
        "period",
        "months",
        "first month",
        "months in block",
        "slot",
        "share of hours",
        "hours",
    ]
    fmts: list[str | None] = ["0", None, "0", "0", "0", PERCENT, HOURS_FMT]
    headers += [f"demand {c} req/s" for c in classes]
    fmts += [RATE] * len(classes)
    gpu_cols: dict[tuple[str, str], str] = {}
    for g in gpus:
        for kind in PERIOD_COUNTS:
            gpu_cols[g, kind] = get_column_letter(len(headers) + 1)
            headers.append(f"{g} {kind.replace('_', '-')}")
            fmts.append(COUNT)
    cost_cols: dict[str, str] = {}
    for tier in PERIOD_TIERS:
        cost_cols[tier] = get_column_letter(len(headers) + 1)
        headers.append(f"{TIER_LABELS[tier]} $")
        fmts.append(MONEY)
    headers += ["total $", "planner $"]
    fmts += [MONEY, MONEY]
    return headers, fmts, gpu_cols, cost_cols


def _period_values(
    period: PeriodPlan,
    p: int,
    gpus: list[str],
    gpu_cols: dict[tuple[str, str], str],
    names: Names,
    cost_cols: dict[str, str],
) -> list[Any]:
    """The cells of one period's row: its numbers, and its $ per tier as live formulas."""
    r = p + 2
    first_cost, last_cost = cost_cols[PERIOD_TIERS[0]], cost_cols[PERIOD_TIERS[-1]]
    return [
        p + 1,
        months_label(period.months),
        period.months[0],
        len(period.months),
        period.slot,
        period.share_of_hours,
        f"=F{r}*{HOURS_NAME}*D{r}",
        *period.demand.values(),
        *(getattr(period.gpus[g], kind) for g in gpus for kind in PERIOD_COUNTS),
        *(_tier_cost(tier, gpus, gpu_cols, names, r) for tier in PERIOD_TIERS),
        f"=SUM({first_cost}{r}:{last_cost}{r})",
        period.cost_usd,
    ]


def write_periods(ws: Worksheet, plan: Plan, names: Names) -> PeriodRefs:
    """One row per (block of months, demand slot): hours, demand, GPUs per tier, $ per tier."""
    ot = plan.over_time
    assert ot is not None
    gpus = list(ot.solution.gpu_types)
    classes = list(ot.periods[0].demand) if ot.periods else []
    headers, fmts, gpu_cols, cost_cols = _period_headers(classes, gpus)
    header(ws, headers)
    blocks: dict[int, tuple[int, int]] = {}
    for p, period in enumerate(ot.periods):
        r = p + 2
        for j, v in enumerate(_period_values(period, p, gpus, gpu_cols, names, cost_cols)):
            put(ws, r, j + 1, v, fmts[j])
        for m in period.months:
            a, b = blocks.get(m, (r, r))
            blocks[m] = (min(a, r), max(b, r))
    ws.freeze_panes = "C2"
    fit_widths(ws)
    return PeriodRefs(blocks, "D", cost_cols)


# ---------------------------------------------------------------- Monthly


@dataclass(frozen=True)
class Workload:
    """Where a month's volume comes from: the Summary's class table (live on the
    Assumptions sheet's demand and tokens) and the growth name."""

    rps: str  # the classes' peak req/s, a Summary range
    inputs: str
    outputs: str
    level: str  # each class's average / peak
    growth: str | None

    @classmethod
    def of(cls, plan: Plan, names: Names) -> Workload:
        """The Summary class table's ranges for this plan."""
        last = 1 + len(plan.classes)
        sheet = quote_sheetname(SUMMARY)
        cols = [get_column_letter(CLASS_TABLE_COLUMN + j) for j in (1, 2, 3, 7)]
        rps, inputs, outputs, level = (f"{sheet}!${c}$2:${c}${last}" for c in cols)
        return cls(rps, inputs, outputs, level, names.growth)

    def grown(self, r: int) -> str:
        """The month's growth factor from month 1 (nothing when there is no growth name)."""
        return f"*(1+{self.growth})^(A{r}-1)" if self.growth else ""

    def tokens(self, r: int, lengths: str) -> str:
        """Tokens served in the month: req/s x tokens x average/peak, over the month."""
        return f"=SUMPRODUCT({self.rps},{lengths},{self.level})*3600*{HOURS_NAME}{self.grown(r)}"


def _monthly_row(
    r: int,
    month: MonthPlan,
    refs: PeriodRefs,
    held: tuple[int, int],
    work: Workload,
    capacity: str | float,
) -> list[Any]:
    """The cells of one month's row: volumes, tiers and totals as live formulas, planner
    figures, and the capacity check of the month's peak against the planned fleet."""
    m = month.month
    periods = quote_sheetname(PERIODS)
    a, b = refs.blocks[m]
    h1, h2 = held

    def block(tier: str) -> str:
        col = refs.cost_cols[tier]
        return f"=SUM({periods}!${col}${a}:${col}${b})/{periods}!${refs.months_col}${a}"

    return [
        m,
        f"=SUMPRODUCT({work.rps},{work.level}){work.grown(r)}",
        work.tokens(r, work.outputs),
        f"=SUMPRODUCT($B${h1}:$B${h2},$C${h1}:$C${h2})*{HOURS_NAME}",
        f"=SUMPRODUCT($D${h1}:$D${h2},$E${h1}:$E${h2})*{HOURS_NAME}",
        block("on_demand"),
        block("spot"),
        f"=SUM(D{r}:G{r})",
        f"=H{r}/C{r}*{TOKENS_PER_1K:.0f}",
        month.total_usd,
        month.cost_per_1k_output_tokens_usd,
        f"=SUM({work.rps}){work.grown(r)}",
        work.tokens(r, work.inputs),
        capacity,
        f'=IF(L{r}>N{r}*(1+1E-9),"{OVER_CAPACITY}","ok")',
        f"=I{r}*1000",
    ]


def _busiest_capacity(ot: TimePlan) -> dict[int, float]:
    """Month -> capacity of its block's busiest slot (the slot its peak falls in)."""
    out: dict[int, float] = {}
    for p in ot.periods:
        if p.slot == 1:
            out.update(dict.fromkeys(p.months, p.capacity_requests_per_s))
    return out


def _write_total(ws: Worksheet, ot: TimePlan, total: int, fmts: list[str | None]) -> None:
    """The Total row: the months summed as live formulas, beside the planner's totals."""
    n = total - 2
    ws.cell(row=total, column=1, value="Total").font = BOLD
    for col in "CDEFGHM":
        put(ws, total, col_index(col), f"=SUM({col}2:{col}{n + 1})", fmts[col_index(col) - 1])
    put(ws, total, 9, f"=H{total}/C{total}*{TOKENS_PER_1K:.0f}", MONEY_FINE)
    put(ws, total, 10, ot.monthly_total_usd, MONEY)
    put(ws, total, 11, ot.cost_per_1k_output_tokens_usd, MONEY_FINE)
    put(ws, total, 15, f'=IF(COUNTIF(O2:O{n + 1},"ok")<{n},"{OVER_CAPACITY}","ok")')
    put(ws, total, 16, f"=I{total}*1000", MONEY_FINE)
    for cell in ws[total]:
        cell.font = BOLD


def write_monthly(ws: Worksheet, plan: Plan, names: Names, refs: PeriodRefs) -> None:
    """Month by month cost by tier as live formulas, totals, comparisons, held GPUs, chart."""
    ot = plan.over_time
    assert ot is not None
    gpus = list(ot.solution.gpu_types)
    fmts = [fmt for _, fmt in MONTHLY_COLUMNS]
    n = len(ot.monthly)
    total = n + 2
    held_header = total + 8
    held = (held_header + 1, held_header + len(gpus))
    header(ws, [label for label, _ in MONTHLY_COLUMNS])
    work = Workload.of(plan, names)
    busiest = _busiest_capacity(ot)
    for i, month in enumerate(ot.monthly):
        capacity = capacity_formula(busiest[month.month], plan.utilisation)
        for j, v in enumerate(_monthly_row(i + 2, month, refs, held, work, capacity)):
            put(ws, i + 2, j + 1, v, fmts[j])
    _write_total(ws, ot, total, fmts)
    labels = _monthly_comparisons(ws, ot, total)
    _write_held(ws, ot, names, gpus, held_header)
    ws.freeze_panes = "B2"
    fit_widths(ws)
    ws.column_dimensions["A"].width = max(10, max((len(g) + 2 for g in gpus), default=0))
    for r, label in labels:  # after the widths: labels run on over the empty cells
        put(ws, r, 1, label)
    notes = [
        "GPU counts are as planned (they cannot be live): editing demand, tokens or growth on "
        "the Assumptions sheet changes the volumes, tokens and $ per 1K output tokens, not "
        "the GPUs or their cost; the capacity check flags a month whose peak exceeds the "
        "fleet planned for it (at the utilisation on the Assumptions sheet); rerun planner "
        "to re-plan.",
        "Each block of months is sized for its busiest month; a block's on-demand and spot "
        "cost (Periods sheet) is split evenly over its months.",
        *ot.notes,
    ]
    for i, note in enumerate(notes):
        put(ws, held[1] + 2 + i, 1, note)
    _monthly_chart(ws, n, held[1] + 3 + len(notes))


def _monthly_comparisons(ws: Worksheet, ot: TimePlan, total: int) -> list[tuple[int, str]]:
    """All on-demand and all reserved (planner figures) beside this plan's live total."""
    held = ", ".join(f"{n}x {g}" for g, n in ot.all_reserved_gpus.items()) or "none"
    rows = [
        (
            "all on-demand (no reserved, owned or spot), horizon $: planner figure "
            "at the planner's prices",
            finite(ot.all_on_demand_cost_usd),
            ot.saving_vs_all_on_demand_usd,
        ),
        (
            f"all reserved for the busiest period's peak ({held}), horizon $: planner "
            "figure at the planner's prices",
            finite(ot.all_reserved_cost),
            ot.saving_vs_all_reserved_usd,
        ),
    ]
    labels: list[tuple[int, str]] = []
    for k, (label, cost, saving) in enumerate(rows):
        r = total + 2 + 2 * k
        labels.append((r, label if cost is not None else f"{label} (n/a: no such plan)"))
        put(ws, r, 8, cost, MONEY)
        labels.append((r + 1, f"saving of this plan vs {label.split(' (')[0]}"))
        if cost is not None:
            put(ws, r + 1, 8, f"=H{r}-H{total}", MONEY)
            put(ws, r + 1, 9, f"=H{r + 1}/H{r}" if cost else None, PERCENT)
            put(ws, r + 1, 10, saving, MONEY)
    return labels


def _write_held(
    ws: Worksheet, ot: TimePlan, names: Names, gpus: list[str], header_row: int
) -> None:
    """GPUs held for the whole horizon (reserved, owned) with their named prices."""
    ws.cell(row=header_row - 1, column=1, value="held for the whole horizon").font = BOLD
    header(
        ws,
        ["GPU", "reserved GPUs", "reserved $/GPU-h", "owned GPUs", "owned $/GPU-h"],
        row=header_row,
    )
    for i, g in enumerate(gpus):
        r = header_row + 1 + i
        res, own = names.tier.get(("reserved", g)), names.tier.get(("owned", g))
        values = [
            g,
            int(ot.solution.reserved.get(g, 0)),
            f"={res}" if res else None,
            int(ot.solution.owned.get(g, 0)),
            f"={own}" if own else None,
        ]
        for j, (v, fmt) in enumerate(
            zip(values, [None, COUNT, UNIT_PRICE, COUNT, UNIT_PRICE], strict=True)
        ):
            put(ws, r, j + 1, v, fmt)


def _monthly_chart(ws: Worksheet, n: int, anchor_row: int) -> None:
    chart = BarChart()
    chart.type, chart.grouping, chart.overlap = "col", "stacked", 100
    chart.title = "Monthly cost by tier"
    chart.y_axis.title, chart.x_axis.title = "$ per month", "month"
    chart.y_axis.numFmt = '"$"#,##0'
    chart.add_data(
        Reference(ws, min_col=4, max_col=7, min_row=1, max_row=n + 1), titles_from_data=True
    )
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n + 1))
    show_axes(chart)
    chart.width, chart.height = 18, 9
    ws.add_chart(chart, f"A{anchor_row}")
