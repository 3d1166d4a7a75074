"""How the workbook looks: number formats, fonts, fills and column widths."""

from __future__ import annotations

from typing import Any

from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

MONEY = '"$"#,##0.00'
MONEY_FINE = '"$"#,##0.000000'  # per-1K-token costs: $0.000879, never a rounded $0.0009
MONEY_1M = '"$"#,##0.00'  # per-1M-token costs, as API price pages quote them
UNIT_PRICE = '"$"#,##0.00##'  # $/GPU-h and $/1M-token list prices: never hide a digit
MS = "0.0"
COUNT = "#,##0"
PERCENT = "0.0%"
RATE = "#,##0.00"
GB = "0.0"
HOURS_FMT = "#,##0.0"

MAX_WIDTH = 60
ASSUMPTION_FILL = PatternFill("solid", fgColor="FFF2CC")
BOLD = Font(bold=True)


def fit_widths(ws: Worksheet, widths: dict[int, int] | None = None) -> None:
    """Column widths from the longest shown text (formulas count as ~12), capped."""
    found: dict[int, int] = dict(widths or {})
    # the cells written, not `iter_rows()`: that creates every empty cell of the used range
    # (the Charts sheet: 24,000 of them, a third of the workbook's openpyxl time, issue 16)
    for (_, column), cell in ws._cells.items():
        value = cell.value
        if value is None:
            continue
        found[column] = max(found.get(column, 0), shown_width(value))
    for column, size in found.items():
        ws.column_dimensions[get_column_letter(column)].width = min(max(size, 6), MAX_WIDTH)


def shown_width(value: Any) -> int:
    """About how many characters a cell's value shows (formulas count as ~12); 0 if empty."""
    if value is None:
        return 0
    if isinstance(value, str) and value.startswith("="):
        return 12
    if isinstance(value, float):
        return min(len(f"{value:,.2f}"), 16) + 2
    return len(str(value)) + 1


def show_axes(chart: Any) -> None:
    """openpyxl 3.1 writes axes as deleted unless told otherwise."""
    chart.x_axis.delete = False
    chart.y_axis.delete = False
