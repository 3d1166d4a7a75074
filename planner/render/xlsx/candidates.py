"""The Candidates sheet: header by openpyxl, the (possibly large) body streamed as XML."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from openpyxl.cell.cell import Cell
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from planner.render.xlsx.cells import header
from planner.render.xlsx.names import CANDIDATE_COLUMNS
from planner.render.xlsx.stream import splice, value_xml
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
        series = self.table[name]
        shown = _distinct_shown(series)
        if shown:  # each distinct value's text once (issue 16: 25 ms on 13,572 rows)
            return max(len(t) for t in shown) + 2
        return int(series.astype(str).str.len().max()) + 2

    def _column_part(self, i: int, name: str, rows: list[str]) -> tuple[str, list[Any] | None]:
        """Column i's piece of the row template (`{0}` the row number, `{}` where its value
        goes) and the values, one a row; the whole cell is the value where some are empty."""
        letter, style = get_column_letter(i + 1), self.styles[i]
        if name not in self.table:
            return "", None
        series = self.table[name]
        head = f'<c r="{letter}{{0}}"{style}'
        complete = not series.isna().any()
        if complete and pd.api.types.is_bool_dtype(series.dtype):
            return head + ' t="b"><v>{}</v></c>', series.astype(int).tolist()
        if complete and pd.api.types.is_integer_dtype(series.dtype):
            return head + "><v>{}</v></c>", series.tolist()
        if series.dtype == np.float32 or pd.api.types.is_float_dtype(series.dtype):
            values = series.to_numpy()
            # float32 physics detail: its shortest decimal, not 21.50399971; float64: repr
            texts = values.astype(str) if values.dtype == np.float32 else None
            finite = np.isfinite(values.astype(float))
            if finite.all() and texts is None:  # repr inside str.format, no list of texts
                return head + "><v>{!r}</v></c>", values.tolist()
            shown = texts.tolist() if texts is not None else [repr(v) for v in values.tolist()]
            if finite.all():
                return head + "><v>{}</v></c>", shown
            cells = [
                f'<c r="{letter}{r}"{style}><v>{t}</v></c>' if ok else ""
                for r, t, ok in zip(rows, shown, finite.tolist(), strict=True)
            ]
            return "{}", cells
        tails = _text_tails(series)
        if all(tails):
            return head + "{}", tails
        cells = [
            f'<c r="{letter}{r}"{style}{t}' if t else "" for r, t in zip(rows, tails, strict=True)
        ]
        return "{}", cells

    def body(self) -> bytes:
        """The <row> elements of every candidate: one row template filled by str.format per
        row (issue 16: a string per cell and a join per row were 0.3 s on 13,572 rows)."""
        rows = [str(r) for r in range(2, self.n_rows + 2)]
        parts = [
            self._column_part(i, name, rows) for i, (name, _, _) in enumerate(CANDIDATE_COLUMNS)
        ]
        pieces, values = [], []
        for piece, column in parts:
            if column is not None:
                values.append(column)
                field = f"{{{len(values)}"  # fields {1}, {2}, ... ({0}: the row)
                piece = piece.replace("{}", field + "}").replace("{!r}", field + "!r}")
            pieces.append(piece)
        template = '<row r="{0}">' + "".join(pieces) + "</row>"
        fill = template.format
        return "".join(fill(r, *cells) for r, *cells in zip(rows, *values, strict=True)).encode(
            "utf-8"
        )

    def patch(self, xml: bytes) -> bytes:
        """Splice the body rows and the true dimension into openpyxl's sheet XML."""
        if self.n_rows == 0:
            return xml
        return splice(xml, self.body(), self.ref)


def _is_text(series: pd.Series) -> bool:
    """A column of text only (or missing values): a string dtype, or a categorical whose
    categories are all text. Their distinct values are distinct texts; an object column may
    hold 1 and True, which hash alike but are written apart."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return dtype.categories.inferred_type in ("string", "empty")
    return pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype)


def _distinct_shown(series: pd.Series) -> list[str]:
    """`str` of each distinct present value of a text column, or of an integer or boolean
    column with none missing ([] for any other column, or none present): what `astype(str)`
    shows, with no string made per row."""
    if _is_text(series):
        return [str(v) for v in pd.unique(series.dropna())]
    complete = not series.isna().any()
    plain = pd.api.types.is_integer_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype)
    if complete and plain and not pd.api.types.is_object_dtype(series.dtype):
        return [str(v) for v in pd.unique(series.to_numpy())]
    return []


def _text_tails(series: pd.Series) -> list[str]:
    """The tails of a text (or mixed) column's <c> elements ('' for an empty cell), each
    distinct text escaped once (text columns repeat a few values many times); a text column's
    rows take their tails by their codes (issue 16: a dict look-up a cell was 50 ms on
    mixed-traffic's 13,572 rows x 7 text columns)."""
    if _is_text(series):
        codes, uniques = pd.factorize(series)  # missing: code -1, the last tail ('')
        tails = np.array([*(value_xml(v) for v in uniques), ""], dtype=object)
        return tails[codes].tolist()
    values = series.tolist()
    memo: dict[str, str] = {}
    out = []
    for v in values:
        if isinstance(v, str):
            tail = memo.get(v)
            if tail is None:
                tail = memo[v] = value_xml(v)
        else:
            tail = value_xml(v)
        out.append(tail)
    return out
