"""Print setup of every sheet: landscape, fit to one page wide, repeated header rows, print
areas over what each sheet holds, and page breaks that keep every chart whole."""

from __future__ import annotations

from openpyxl import Workbook
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.utils.cell import coordinate_from_string
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from planner.render.xlsx.names import ASSUMPTIONS, ASSUMPTIONS_HEADER_ROW, CANDIDATES, CHARTS

CM_PER_ROW = 0.53  # a default-height row (15 pt), for placing breaks around charts


def print_setup(
    wb: Workbook, candidates_ref: str, streamed: dict[str, tuple[int, int]] | None = None
) -> None:
    """Every sheet prints one page wide, landscape, its header row on every page;
    `streamed` gives the last row and column of the cells a sheet's XML gets after openpyxl
    (`render/xlsx/stream.py`)."""
    for ws in wb.worksheets:
        _page(ws)
        header_row = ASSUMPTIONS_HEADER_ROW if ws.title == ASSUMPTIONS else 1
        if ws.title != CHARTS:
            ws.print_title_rows = f"{header_row}:{header_row}"
        ws.print_area = (
            candidates_ref
            if ws.title == CANDIDATES
            else _charts_only(ws)
            if ws.title == CHARTS
            else _used(ws, (streamed or {}).get(ws.title, (0, 0)))
        )
        _keep_charts_whole(ws)


def _page(ws: Worksheet) -> None:
    """Landscape A4/letter-neutral setup, fit to one page wide and as many pages tall."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.print_options.gridLines = False
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.5
    ws.oddFooter.center.text = "&A, page &P of &N"


def _chart_rows(chart) -> tuple[int, int, int]:
    """A chart's first row, last row (from its height) and last column, 1-based."""
    anchor = chart.anchor
    if isinstance(anchor, str):
        letters, row = coordinate_from_string(anchor)
        top, left = row, column_index_from_string(letters)
    else:
        top, left = anchor._from.row + 1, anchor._from.col + 1
    rows = int(chart.height / CM_PER_ROW) + 1
    cols = int(chart.width / 1.7) + 1  # a default column is about 1.7 cm
    return top, top + rows, left + cols


def _used(ws: Worksheet, streamed: tuple[int, int] = (0, 0)) -> str:
    """The cells a sheet holds, charts and streamed cells included."""
    last_row, last_col = max(ws.max_row, streamed[0]), max(ws.max_column, streamed[1])
    for chart in ws._charts:
        _, bottom, right = _chart_rows(chart)
        last_row, last_col = max(last_row, bottom), max(last_col, right)
    return f"A1:{get_column_letter(last_col)}{last_row}"


def _charts_only(ws: Worksheet) -> str:
    """The Charts sheet prints its charts, not the point tables they plot (#13: up to 2,000
    rows of chart data printed as 9 more pages on mixed-traffic)."""
    if not ws._charts:
        return _used(ws)
    extents = [_chart_rows(chart) for chart in ws._charts]
    last_row = max(bottom for _, bottom, _ in extents)
    last_col = max(right for _, _, right in extents)
    return f"A1:{get_column_letter(last_col)}{last_row}"


def _keep_charts_whole(ws: Worksheet) -> None:
    """A page break before every chart (after the first row): a chart starts a page, so a
    page holds it whole."""
    for chart in ws._charts:
        top, _, _ = _chart_rows(chart)
        if top > 2:
            ws.row_breaks.append(Break(id=top - 1))
