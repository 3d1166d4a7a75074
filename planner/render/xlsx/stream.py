"""Plain cells written as SpreadsheetML after openpyxl has saved their sheet (issue 16).

openpyxl costs about 40 µs a cell to create and serialise; the Charts sheet's tables (2,500
cells on the chatbot) were a third of the workbook's writing. Value cells with a number
format and no formula go here instead: each style id is registered with openpyxl once per
format, the `<row>` elements are rendered as text and spliced in before `</sheetData>`, and
the sheet's `<dimension>` is widened to hold them. Streamed rows must lie below every row
openpyxl writes (the sheet's titles and headers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from openpyxl.cell.cell import Cell
from openpyxl.styles.fills import Fill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from planner.render.xlsx.cells import clean
from planner.render.xlsx.styles import shown_width

# xml.sax.saxutils.escape's three replacements, without importing it: xml.sax.saxutils
# imports urllib.request and with it ssl, 40-60 ms of every workbook export (issue 16)
_XML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def escape(text: str) -> str:
    """`text` with &, < and > escaped for XML character data (as xml.sax.saxutils.escape)."""
    return text.translate(_XML_ESCAPES)


def value_xml(value: Any) -> str:
    """The tail of one <c> element (type, value, close) for a Python value; '' if empty.
    Text starting with "=" is a formula, as openpyxl takes it."""
    return clean_value_xml(clean(value))


def clean_value_xml(value: Any) -> str:
    """`value_xml` of a value `clean` has already made cell-safe."""
    if value is None or value == "":  # openpyxl writes no cell for an empty text either
        return ""
    if isinstance(value, str) and value.startswith("=") and len(value) > 1:
        return f"><f>{escape(value[1:])}</f></c>"
    if isinstance(value, bool):
        return f' t="b"><v>{int(value)}</v></c>'
    if isinstance(value, int | float):
        return f"><v>{value!r}</v></c>"
    # xml:space="preserve" only where spaces at an end would otherwise be dropped (issue 16:
    # 20 bytes of every text cell, a seventh of mixed-traffic's 12.5 MB Candidates sheet)
    space = ' xml:space="preserve"' if value != value.strip() else ""
    return f' t="inlineStr"><is><t{space}>{escape(value)}</t></is></c>'


def splice(xml: bytes, rows: bytes, ref: str) -> bytes:
    """`rows` (rendered <row> elements) inserted before `</sheetData>`, the dimension `ref`."""
    end = xml.rfind(b"</sheetData>")
    if end < 0:
        raise RuntimeError("unexpected worksheet XML from openpyxl: no </sheetData>")
    xml = xml[:end] + rows + xml[end:]
    return re.sub(
        rb'<dimension ref="[^"]*"\s*/>', f'<dimension ref="{ref}"/>'.encode(), xml, count=1
    )


class StreamedCells:
    """The value cells of one sheet that openpyxl does not hold; see the module docstring."""

    def __init__(self, ws: Worksheet) -> None:
        self.sheet = ws
        self.rows: dict[int, dict[int, str]] = {}
        self.widths: dict[int, int] = {}  # the widest shown value per column, as fit_widths
        self._styles: dict[tuple[str | None, Fill | None], str] = {(None, None): ""}

    def _style(self, fmt: str | None, fill: Fill | None = None) -> str:
        """' s="<id>"' of a number format and fill, registered with openpyxl once."""
        key = (fmt, fill)
        if key not in self._styles:
            proto = Cell(self.sheet, row=1, column=1)
            if fmt is not None:
                proto.number_format = fmt
            if fill is not None:
                proto.fill = fill
            self._styles[key] = f' s="{proto.style_id}"'
        return self._styles[key]

    def put_rows(
        self,
        row: int,
        column: int,
        data: Iterable[Sequence[Any]],
        fmts: Sequence[str | None],
        fill: Fill | None = None,
    ) -> None:
        """`data` (tuples of values) from (row, column) down, one number format a column;
        with a `fill`, every cell of those rows is filled, empty ones too."""
        styles: list[str] | None = None  # registered at the first row, as put_row would
        for i, values in enumerate(data):
            if styles is None:
                styles = [self._style(fmt, fill) for fmt in fmts]
            self._put(row + i, column, values, styles, fill is not None)

    def put_row(
        self,
        row: int,
        column: int,
        values: Sequence[Any],
        fmts: Sequence[str | None],
        fill: Fill | None = None,
    ) -> None:
        """One row of `put_rows`."""
        styles = [self._style(fmt, fill) for fmt in fmts]
        self._put(row, column, values, styles, fill is not None)

    def _put(
        self, row: int, column: int, values: Sequence[Any], styles: list[str], filled: bool
    ) -> None:
        """One row's cells, each value made cell-safe once (issue 16: twice a cell, and its
        style looked up by a hash of the fill, were a third of the Charts tables' time)."""
        cells = self.rows.setdefault(row, {})
        widths = self.widths
        for j, (v, style) in enumerate(zip(values, styles, strict=True)):
            value = clean(v)
            tail = clean_value_xml(value)
            if not tail and not filled:
                continue
            at = column + j
            cells[at] = f'<c r="{get_column_letter(at)}{row}"{style}' + (tail or "/>")
            if tail:
                widths[at] = max(widths.get(at, 0), shown_width(value))

    @property
    def last_column(self) -> int:
        return max(max(self.widths, default=1), self.sheet.max_column)

    @property
    def last_row(self) -> int:
        return max(self.rows, default=0)

    def patch(self, xml: bytes) -> bytes:
        """The sheet's XML with the streamed rows spliced in (unchanged when there are none)."""
        if not self.rows:
            return xml
        if min(self.rows) <= self.sheet.max_row:
            raise RuntimeError("streamed rows overlap the rows openpyxl wrote")
        last_col = self.last_column
        body = "".join(
            f'<row r="{r}">{"".join(cells[c] for c in sorted(cells))}</row>'
            for r, cells in sorted(self.rows.items())
            if cells
        )
        return splice(xml, body.encode("utf-8"), f"A1:{get_column_letter(last_col)}{self.last_row}")
