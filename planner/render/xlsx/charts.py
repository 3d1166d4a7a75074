"""The Charts sheet: cost vs TPOT of the feasible candidates, self-hosting vs API by volume.

No formulas: planner figures at the planner's prices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.worksheet.worksheet import Worksheet

from planner.planning.plan import Plan
from planner.render.colours import colour
from planner.render.xlsx.analysis import Analysis
from planner.render.xlsx.cells import header
from planner.render.xlsx.names import CHART_POINT_COLUMNS, CHART_TABLE_ROW
from planner.render.xlsx.stream import StreamedCells
from planner.render.xlsx.styles import BOLD, MONEY, MONEY_FINE, MS, RATE, fit_widths, show_axes

# issue 16: 2,000 points were half the workbook's writing time (14,000 openpyxl cells on the
# Charts sheet); 500 sampled along TPOT draw the same cloud, and the frontier is drawn whole
MAX_CHART_POINTS = 500


def feasible_points(plan: Plan) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SLA-feasible candidates with a finite TPOT and cost (sampled along TPOT down to
    MAX_CHART_POINTS, sorted by GPU then TPOT) and each class's cost-vs-TPOT frontier."""
    cols = [name for name, _, _ in CHART_POINT_COLUMNS]
    empty = pd.DataFrame(columns=cols)
    table = plan.candidates
    need = {"sla_ok", "gpu", "tpot_ms", "cost_per_1k_output_tokens_usd"}
    if table is None or table.empty or not need <= set(table.columns):
        return empty, empty
    rows = table.reindex(columns=cols)[table["sla_ok"].eq(True).to_numpy()]
    tpot = pd.to_numeric(rows["tpot_ms"], errors="coerce").to_numpy(float)
    cost = pd.to_numeric(rows["cost_per_1k_output_tokens_usd"], errors="coerce").to_numpy(float)
    rows = rows[np.isfinite(tpot) & np.isfinite(cost)].copy()
    rows["class"] = rows["class"].fillna("").astype(str)
    rows = rows.sort_values(["tpot_ms", "cost_per_1k_output_tokens_usd"], kind="stable")
    frontier = rows[
        rows["cost_per_1k_output_tokens_usd"]
        < rows.groupby("class")["cost_per_1k_output_tokens_usd"]
        .cummin()
        .groupby(rows["class"])
        .shift(fill_value=np.inf)
    ]
    if len(rows) > MAX_CHART_POINTS:
        keep = np.unique(np.linspace(0, len(rows) - 1, MAX_CHART_POINTS).round().astype(int))
        rows = rows.iloc[keep]
    rows = rows.sort_values(["gpu", "tpot_ms"], kind="stable")
    frontier = frontier.sort_values(["class", "tpot_ms"], kind="stable")
    return rows.reset_index(drop=True), frontier.reset_index(drop=True)


def _put_table(
    cells: StreamedCells,
    row: int,
    column: int,
    title: str,
    headers: Sequence[str],
    data,
    fmts,
) -> tuple[int, int, str]:
    """Header at row+1, then `data` rows (tuples, streamed: `render/xlsx/stream.py`); returns
    the title's place, for the caller to write after the column widths are set (titles run
    on over empty cells)."""
    header(cells.sheet, headers, row=row + 1, column=column)
    cells.put_rows(row + 2, column, data, fmts)
    return row, column, title


def _scatter(title: str, x_title: str, y_title: str, y_fmt: str) -> ScatterChart:
    chart = ScatterChart()
    chart.title = title
    chart.scatterStyle = "lineMarker"
    chart.x_axis.title, chart.y_axis.title = x_title, y_title
    chart.y_axis.numFmt = y_fmt
    chart.width, chart.height = 22, 10
    show_axes(chart)
    return chart


def _series(
    ws: Worksheet,
    cols: tuple[int, int],
    rows: tuple[int, int],
    title: str,
    color: str,
    marker: str | None = "circle",
    size: int = 4,
) -> Series:
    """A scatter series of rows r1..r2: (x, y) columns; markers only, or a line if
    `marker` is None."""
    (x_col, y_col), (r1, r2) = cols, rows
    s = Series(
        Reference(ws, min_col=y_col, min_row=r1, max_row=r2),
        Reference(ws, min_col=x_col, min_row=r1, max_row=r2),
        title=title,
    )
    s.smooth = False
    if marker is None:
        s.marker.symbol = "none"
        s.graphicalProperties.line.solidFill = color
        s.graphicalProperties.line.width = 28575  # 2.25 pt
    else:
        s.marker.symbol, s.marker.size = marker, size
        s.marker.graphicalProperties = GraphicalProperties(solidFill=color)
        s.marker.graphicalProperties.line.solidFill = color
        s.graphicalProperties.line.noFill = True
    return s


def _frontier_chart(
    cells: StreamedCells, points: pd.DataFrame, frontier: pd.DataFrame
) -> list[tuple[int, int, str]]:
    """Scatter of $ per 1K output tokens vs TPOT, one series per GPU, frontier lines."""
    ws = cells.sheet
    first = CHART_TABLE_ROW + 2
    titles = [
        _put_table(
            cells,
            CHART_TABLE_ROW,
            1,
            f"SLA-feasible candidates ({len(points)} plotted, sampled along TPOT when more)",
            [h for _, h, _ in CHART_POINT_COLUMNS],
            points.itertuples(index=False, name=None),
            [fmt for _, _, fmt in CHART_POINT_COLUMNS],
        ),
        _put_table(
            cells,
            CHART_TABLE_ROW,
            9,
            "cost vs TPOT frontier",
            ["class", "TPOT ms", "$ per 1K output tokens"],
            frontier[["class", "tpot_ms", "cost_per_1k_output_tokens_usd"]].itertuples(
                index=False, name=None
            ),
            [None, MS, MONEY_FINE],
        ),
    ]
    chart = _scatter(
        "$ per 1K output tokens vs TPOT, SLA-feasible candidates",
        "TPOT ms",
        "$ per 1K output tokens",
        '"$"#,##0.0000',
    )
    chart.y_axis.scaling.logBase = 10
    chart.y_axis.title = "$ per 1K output tokens (log scale)"
    groups = points.groupby("gpu", sort=False, observed=True).indices.items()
    for k, (gpu, idx) in enumerate(groups):
        rows = (first + idx[0], first + idx[-1])
        chart.series.append(_series(ws, (6, 7), rows, str(gpu), colour(k)))
    several = frontier["class"].nunique() > 1
    for cls, idx in frontier.groupby("class", sort=False).indices.items():
        label = f"frontier {cls}" if several else "frontier"
        rows = (first + idx[0], first + idx[-1])
        chart.series.append(_series(ws, (10, 11), rows, label, "000000", marker=None))
    ws.add_chart(chart, "A2")
    return titles


def _break_even_chart(
    cells: StreamedCells, plan: Plan, analysis: Analysis, anchor: str
) -> list[tuple[int, int, str]]:
    """Self-hosting (the peak fleet, or the plan over time, re-solved per volume) and every
    API, $/month vs peak req/s."""
    assert analysis.curves is not None
    ws = cells.sheet
    volume, own, _ = analysis.curves
    apis = analysis.api_curves
    first = CHART_TABLE_ROW + 2
    average = " (at average demand)" if plan.over_time is not None else ""
    titles = [
        _put_table(
            cells,
            CHART_TABLE_ROW,
            13,
            f"self-hosted fleet vs every API{average}, $/month",
            ["peak req/s", "self-hosted $/month", *apis],
            zip(volume.tolist(), own.tolist(), *(a.tolist() for a in apis.values()), strict=True),
            [RATE, MONEY, *([MONEY] * len(apis))],
        ),
    ]
    point = 13 + 2 + len(apis) + 1
    titles.append(
        _put_table(
            cells,
            CHART_TABLE_ROW,
            point,
            "",
            ["this plan: peak req/s", "fleet $/month"],
            [(plan.total_requests_per_s, plan.self_hosted_monthly_usd)],
            [RATE, MONEY],
        )
    )
    chart = _scatter(
        analysis.title,
        "peak requests/s (log scale)",
        "$ per month (log scale)",
        '"$"#,##0',
    )
    chart.x_axis.scaling.logBase = 10
    chart.y_axis.scaling.logBase = 10
    rows = (first, first + len(volume) - 1)
    chart.series.append(_series(ws, (13, 14), rows, analysis.self_label, "000000", marker=None))
    for k, label in enumerate(apis):
        chart.series.append(
            _series(ws, (13, 15 + k), rows, f"API: {label}", colour(k), marker=None)
        )
    chart.series.append(
        _series(ws, (point, point + 1), (first, first), "this plan", "000000", "diamond", 9)
    )
    chart.legend.position = "b"
    ws.add_chart(chart, anchor)
    return titles


def write_charts(
    ws: Worksheet, plan: Plan, analysis: Analysis, points: pd.DataFrame, frontier: pd.DataFrame
) -> StreamedCells:
    """The charts and the tables they plot; the tables' values are returned streamed, for
    `write_workbook` to splice into the saved sheet."""
    cells = StreamedCells(ws)
    titles = []
    if len(points):
        titles += _frontier_chart(cells, points, frontier)
    if analysis.curves is not None and plan.cheapest_api is not None:
        titles += _break_even_chart(cells, plan, analysis, "A22" if len(points) else "A2")
    fit_widths(ws, cells.widths)
    for col in "HL":
        ws.column_dimensions[col].width = 3
    ws["A1"] = (
        f"Charts; the tables they plot start at row {CHART_TABLE_ROW}. Planner figures at "
        "the planner's prices: they do not follow edits on the Assumptions sheet."
    )
    ws["A1"].font = BOLD
    for row, column, title in titles:
        if title:
            ws.cell(row=row, column=column, value=title).font = BOLD
    return cells
