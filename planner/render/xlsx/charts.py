"""The Charts sheet: cost vs TPOT of the feasible candidates, self-hosting vs API by volume.

No formulas: planner figures at the planner's prices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.worksheet.worksheet import Worksheet

from planner.arrays import distinct
from planner.perf.table import Table, values
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


def feasible_points(plan: Plan) -> tuple[Table, Table]:
    """SLA-feasible candidates with a finite TPOT and cost (sampled along TPOT down to
    MAX_CHART_POINTS, sorted by GPU then TPOT) and each class's cost-vs-TPOT frontier
    (`CHART_POINT_COLUMNS` each; numpy on the candidate table, no pandas: issue 16)."""
    cols = [name for name, _, _ in CHART_POINT_COLUMNS]
    table = plan.candidates_table
    need = {"sla_ok", "gpu", "tpot_ms", "cost_per_1k_output_tokens_usd"}
    if table.empty or not need <= set(table.columns):
        empty = Table({c: np.zeros(0, dtype=object) for c in cols})
        return empty, empty
    tpot = values(table, "tpot_ms", float)
    cost = values(table, "cost_per_1k_output_tokens_usd", float)
    keep = (values(table, "sla_ok") == True) & np.isfinite(tpot) & np.isfinite(cost)  # noqa: E712
    rows = _projected(table, cols)[keep]
    tpot, cost = tpot[keep], cost[keep]
    rows = rows.assign(**{"class": _class_names(rows)})
    order = np.lexsort((cost, tpot))  # stable: by TPOT, then cost
    rows, tpot, cost = rows.take(order), tpot[order], cost[order]
    frontier = rows[_below_running_minimum(rows["class"], cost)]
    if len(rows) > MAX_CHART_POINTS:
        sample = distinct(np.linspace(0, len(rows) - 1, MAX_CHART_POINTS).round().astype(int))
        rows = rows.take(sample)
    rows = rows.take(np.lexsort((values(rows, "tpot_ms", float), rows.codes("gpu"))))
    by_class = np.lexsort((values(frontier, "tpot_ms", float), frontier.codes("class")))
    return rows, frontier.take(by_class)


def _projected(table: Table, cols: list[str]) -> Table:
    """`cols` of the table, a column it lacks as missing values."""
    missing = np.full(len(table), None, dtype=object)
    return Table({c: table.stored(c) if c in table else missing for c in cols}, len(table))


def _class_names(rows: Table) -> np.ndarray:
    """Each row's class as text, '' where it has none."""
    return np.asarray(["" if v is None or v != v else str(v) for v in rows["class"].tolist()])


def _below_running_minimum(classes: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Rows (in order) cheaper than every earlier row of their class: the frontier."""
    keep = np.zeros(len(cost), dtype=bool)
    for name in dict.fromkeys(classes.tolist()):
        mine = np.flatnonzero(classes == name)
        before = np.concatenate(([np.inf], np.minimum.accumulate(cost[mine])[:-1]))
        keep[mine] = cost[mine] < before
    return keep


def _rows_of(table: Table, cols: Sequence[str]):
    """The table's rows as tuples of Python values, in `cols` order."""
    return zip(*(np.asarray(table[c]).tolist() for c in cols), strict=True)


def _runs(labels: np.ndarray) -> dict:
    """Each label's row positions, labels in first-seen order (groupby(sort=False).indices)."""
    out: dict = {}
    for i, label in enumerate(labels.tolist()):
        out.setdefault(label, []).append(i)
    return out


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
    cells: StreamedCells, points: Table, frontier: Table
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
            _rows_of(points, [name for name, _, _ in CHART_POINT_COLUMNS]),
            [fmt for _, _, fmt in CHART_POINT_COLUMNS],
        ),
        _put_table(
            cells,
            CHART_TABLE_ROW,
            9,
            "cost vs TPOT frontier",
            ["class", "TPOT ms", "$ per 1K output tokens"],
            _rows_of(frontier, ["class", "tpot_ms", "cost_per_1k_output_tokens_usd"]),
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
    groups = _runs(points["gpu"]).items()
    for k, (gpu, idx) in enumerate(groups):
        rows = (first + idx[0], first + idx[-1])
        chart.series.append(_series(ws, (6, 7), rows, str(gpu), colour(k)))
    several = len(set(frontier["class"].tolist())) > 1
    for cls, idx in _runs(frontier["class"]).items():
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
    ws: Worksheet, plan: Plan, analysis: Analysis, points: Table, frontier: Table
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
