"""The Candidates sheet: header by openpyxl, the (possibly large) body streamed as XML."""

from __future__ import annotations

import math
import re
from typing import Any
from xml.sax.saxutils import escape

import numpy as np
import pandas as pd
from openpyxl.cell.cell import Cell
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from planner.render.xlsx.cells import clean, header
from planner.render.xlsx.names import CANDIDATE_COLUMNS
from planner.render.xlsx.styles import MAX_WIDTH


class CandidateSheet:
    """The Candidates sheet: header via openpyxl, body streamed as XML into the saved file.

    openpyxl (without lxml) needs ~7 µs per cell; 20,000 rows x 21 columns would take
    several seconds. The body is generated column by column as SpreadsheetML strings with
    the style ids openpyxl registered for each column's number format, then spliced into
    the sheet's <sheetData> after openpyxl has saved the header, autofilter and panes.
    """

    def __init__(self, ws: Worksheet, table: pd.DataFrame) -> None:
        self.sheet = ws
        self.table = table if table is not None else pd.DataFrame()
        header(ws, [label for _, label, _ in CANDIDATE_COLUMNS])
        self.n_rows = len(self.table)
        last = get_column_letter(len(CANDIDATE_COLUMNS))
        self.ref = f"A1:{last}{self.n_rows + 1}"
        ws.auto_filter.ref = self.ref
        ws.freeze_panes = "A2"
        self.styles: list[str] = []
        for i, (name, label, fmt) in enumerate(CANDIDATE_COLUMNS):
            letter = get_column_letter(i + 1)
            width = len(label) + 3
            if fmt:
                proto = Cell(ws, row=1, column=i + 1)
                proto.number_format = fmt
                self.styles.append(f' s="{proto.style_id}"')
                width = max(width, 12)
            else:
                self.styles.append("")
                width = max(width, self._text_width(name))
            ws.column_dimensions[letter].width = min(width, MAX_WIDTH)

    def _text_width(self, name: str) -> int:
        if name not in self.table or self.n_rows == 0:
            return 0
        return int(self.table[name].astype(str).str.len().max()) + 2

    def _column_cells(self, i: int, name: str, rows: list[str]) -> list[str]:
        letter, style = get_column_letter(i + 1), self.styles[i]
        if name not in self.table:
            return [""] * self.n_rows
        series = self.table[name]
        head = [f'<c r="{letter}{r}"{style}' for r in rows]
        complete = not series.isna().any()
        if complete and pd.api.types.is_bool_dtype(series.dtype):
            return [
                f'{h} t="b"><v>{int(v)}</v></c>' for h, v in zip(head, series.tolist(), strict=True)
            ]
        if complete and pd.api.types.is_integer_dtype(series.dtype):
            return [f"{h}><v>{v}</v></c>" for h, v in zip(head, series.tolist(), strict=True)]
        if series.dtype == np.float32:  # physics detail: its shortest decimal, not 21.50399971
            texts = series.to_numpy().astype(str).tolist()
            return [
                f"{h}><v>{t}</v></c>" if math.isfinite(v) else ""
                for h, t, v in zip(head, texts, series.tolist(), strict=True)
            ]
        if pd.api.types.is_float_dtype(series.dtype):
            return [
                f"{h}><v>{v!r}</v></c>" if math.isfinite(v) else ""
                for h, v in zip(head, series.astype(float).tolist(), strict=True)
            ]
        return _text_cells(head, series.tolist())

    def body(self) -> bytes:
        rows = [str(r) for r in range(2, self.n_rows + 2)]
        columns = [
            self._column_cells(i, name, rows) for i, (name, _, _) in enumerate(CANDIDATE_COLUMNS)
        ]
        text = "".join(
            f'<row r="{r}">{"".join(cells)}</row>'
            for r, cells in zip(rows, zip(*columns, strict=True), strict=True)
        )
        return text.encode("utf-8")

    def patch(self, xml: bytes) -> bytes:
        """Splice the body rows and the true dimension into openpyxl's sheet XML."""
        if self.n_rows == 0:
            return xml
        end = xml.rfind(b"</sheetData>")
        if end < 0:
            raise RuntimeError("unexpected worksheet XML from openpyxl: no </sheetData>")
        xml = xml[:end] + self.body() + xml[end:]
        return re.sub(
            rb'<dimension ref="[^"]*"\s*/>', f'<dimension ref="{self.ref}"/>'.encode(), xml, count=1
        )


def _text_cells(head: list[str], values: list[Any]) -> list[str]:
    """The <c> elements of a text (or mixed) column; '' for an empty cell."""
    memo: dict[str, str] = {}  # text columns repeat a few values many times
    out = []
    for h, v in zip(head, values, strict=True):
        if isinstance(v, str):
            body = memo.get(v)
            if body is None:
                body = memo[v] = _xml_value(v)
        else:
            body = _xml_value(v)
        out.append(f"{h}{body}" if body else "")
    return out


def _xml_value(value: Any) -> str:
    """The tail of one <c> element (type, value, close) for a Python value; '' if empty."""
    value = clean(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return f' t="b"><v>{int(value)}</v></c>'
    if isinstance(value, int | float):
        return f"><v>{value!r}</v></c>"
    return f' t="inlineStr"><is><t xml:space="preserve">{escape(value)}</t></is></c>'
