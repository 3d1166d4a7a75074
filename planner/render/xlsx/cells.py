"""Cell values: what may go into a cell, and writing one value or a header row."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, Cell
from openpyxl.worksheet.worksheet import Worksheet

from planner.render.xlsx.styles import BOLD


def clean(value: Any) -> Any:
    """A cell-safe value: finite numbers, bools, text; NaN/inf/None -> None."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        if value.isascii() and value.isprintable():  # no control character: nothing to drop
            return value
        return ILLEGAL_CHARACTERS_RE.sub("", value)
    pandas = sys.modules.get("pandas")  # its missing values only exist once it is loaded
    if pandas is not None and (value is pandas.NA or value is pandas.NaT):
        return None
    return ILLEGAL_CHARACTERS_RE.sub("", str(value))


def finite(value: Any) -> float | None:
    value = clean(value)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def header(ws: Worksheet, labels: Sequence[str], row: int = 1, column: int = 1) -> None:
    for i, label in enumerate(labels):
        cell = ws.cell(row=row, column=column + i, value=label)
        cell.font = BOLD


def put(ws: Worksheet, row: int, column: int, value: Any, fmt: str | None = None) -> Cell:
    cell = ws.cell(row=row, column=column, value=clean(value))
    if fmt:
        cell.number_format = fmt
    return cell
