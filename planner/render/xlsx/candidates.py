"""The Candidates sheet: header by openpyxl, the (possibly large) body streamed as XML."""

from __future__ import annotations

from typing import Any

import numpy as np
from openpyxl.cell.cell import Cell
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from planner.arrays import distinct
from planner.perf.table import Coded, Column, Table
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

    def __init__(self, ws: Worksheet, table: Table) -> None:
        self.sheet = ws
        self.table = table
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
        column = self.table.stored(name)
        shown = _distinct_shown(column)
        if shown:  # each distinct value's text once (issue 16: 25 ms on 13,572 rows)
            return max(len(t) for t in shown) + 2
        return max(len(_shown(v)) for v in np.asarray(column).tolist()) + 2

    def _column_part(self, i: int, name: str, rows: list[str]) -> tuple[str, list[Any] | None]:
        """Column i's piece of the row template (`{0}` the row number, `{}` where its value
        goes) and the values, one a row; the whole cell is the value where some are empty."""
        letter, style = get_column_letter(i + 1), self.styles[i]
        if name not in self.table:
            return "", None
        column = self.table.stored(name)
        head = f'<c r="{letter}{{0}}"{style}'
        kind = "O" if isinstance(column, Coded) else column.dtype.kind
        if isinstance(column, np.ndarray) and kind == "b":
            return head + ' t="b"><v>{}</v></c>', column.astype(int).tolist()
        if isinstance(column, np.ndarray) and kind in "iu":
            return head + "><v>{}</v></c>", column.tolist()
        if isinstance(column, np.ndarray) and kind == "f":
            values = column
            finite = np.isfinite(values.astype(float))
            shown = _float_texts(values)
            if finite.all():
                return head + "><v>{}</v></c>", shown
            cells = [
                f'<c r="{letter}{r}"{style}><v>{t}</v></c>' if ok else ""
                for r, t, ok in zip(rows, shown, finite.tolist(), strict=True)
            ]
            return "{}", cells
        tails = _text_tails(column)
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


def _as_text(column: Column) -> Coded | None:
    """A column of text only (or missing values) as codes into its texts, else None. Coded
    ids are; an object column is when every present value is a str (1 and True, which hash
    alike but are written apart, keep the per-value path)."""
    if isinstance(column, Coded):
        texts = all(isinstance(c, str) for c in column.categories.tolist())
        return column if texts else None
    if column.dtype.kind not in "OU":
        return None
    values = column.tolist()
    if not all(isinstance(v, str) or v is None or v != v for v in values):
        return None
    return Coded.of(np.asarray(values, dtype=object))


def _float_texts(values: np.ndarray) -> list[str]:
    """Each value's text: float32 its shortest decimal (not 21.50399971), float64 its repr;
    each distinct bit pattern formatted once (issue 16: a float's repr is ~0.4 us, and half
    of a Candidates column repeats across batches: mixed-traffic's prefill times are 212
    values in 10,955 rows). Distinct by bits, not by value: -0.0 and 0.0 keep their texts."""
    if values.dtype not in (np.float32, np.float64):
        return [repr(v) for v in values.tolist()]
    bits = values.view(np.int32 if values.dtype == np.float32 else np.int64)
    _, first, inverse = np.unique(bits, return_index=True, return_inverse=True)
    distinct = values[first]
    if values.dtype == np.float32:
        shown = distinct.astype(str).tolist()
    else:
        shown = [repr(v) for v in distinct.tolist()]
    return np.asarray(shown, dtype=object)[inverse.reshape(-1)].tolist()


def _distinct_shown(column: Column) -> list[str]:
    """`str` of each distinct present value of a text column, or of an integer or boolean
    column ([] for any other column, or none present): what each row shows, with no string
    made per row."""
    text = _as_text(column)
    if text is not None:
        present = distinct(text.codes[text.codes >= 0])
        return [str(text.categories[c]) for c in present]
    if not isinstance(column, Coded) and column.dtype.kind in "iub":
        return [str(v) for v in distinct(column)]
    return []


def _shown(value: Any) -> str:
    """A value as text ('nan' for a missing one), for a column's width."""
    return "nan" if value is None else str(value)


def _text_tails(column: Column) -> list[str]:
    """The tails of a text (or mixed) column's <c> elements ('' for an empty cell), each
    distinct text escaped once (text columns repeat a few values many times); a text column's
    rows take their tails by their codes (issue 16: a dict look-up a cell was 50 ms on
    mixed-traffic's 13,572 rows x 7 text columns)."""
    text = _as_text(column)
    if text is not None:  # missing: code -1, the last tail ('')
        tails = np.array([*(value_xml(v) for v in text.categories.tolist()), ""], dtype=object)
        return tails[text.codes].tolist()
    values = np.asarray(column).tolist()
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
