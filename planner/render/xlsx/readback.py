"""`read_back`: re-evaluate an exported workbook's formulas in Python, from its own cells."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from openpyxl import load_workbook
from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.utils import column_index_from_string as col_index
from openpyxl.utils import get_column_letter

from planner.render.xlsx.names import CANDIDATES, CHARTS, SUMMARY, SUMMARY_CELLS

_REF = re.compile(
    r"^(?:(?P<sheet>'(?:[^']|'')+'|[^'!]+)!)?"
    r"\$?(?P<c1>[A-Z]{1,3})\$?(?P<r1>\d+)(?::\$?(?P<c2>[A-Z]{1,3})\$?(?P<r2>\d+))?$"
)
_FUNCS = {
    "SUM(": "_sum(",
    "SUMPRODUCT(": "_sumproduct(",
    "MIN(": "_min(",
    "MAX(": "_max(",
    "IF(": "_if(",
    "COUNTIF(": "_countif(",
    "INDEX(": "_index(",
    "MATCH(": "_match(",
}
_ARITHMETIC = {"+": "+", "-": "-", "*": "*", "/": "/", "^": "**", "&": "+"}  # &: text to text
_COMPARE = {">": ">", "<": "<", ">=": ">=", "<=": "<=", "<>": "!=", "=": "=="}


def read_back(path: str | Path) -> dict[str, Any]:
    """Re-evaluate the formulas of an exported workbook from its own input cells.

    Returns every formula cell as "Sheet!A1" -> value, plus each `SUMMARY_CELLS` key ->
    the value of that Summary cell (evaluated when it is a formula). Only the formula
    forms this module writes are understood: + - * / ^, & (of texts), comparisons, text
    literals, SUM, SUMPRODUCT, MIN, MAX, IF, COUNTIF (of a text), INDEX (of one column), MATCH
    (exact), cell and range references (also to other
    sheets) and defined names. Candidates and
    Charts hold no formulas and are not read, so this stays fast for large tables.
    """
    wb = load_workbook(path, read_only=True, data_only=False)
    try:
        cells = {
            ws.title: {
                c.coordinate: c.value
                for row in ws.iter_rows()
                for c in row
                if getattr(c, "coordinate", None) and c.value is not None
            }
            for ws in wb.worksheets
            if ws.title not in (CANDIDATES, CHARTS)
        }
        names = {name.lower(): dn.attr_text for name, dn in wb.defined_names.items()}
    finally:
        wb.close()
    ev = _Evaluator(cells, names)
    out: dict[str, Any] = {}
    for sheet, sheet_cells in cells.items():
        for coord, value in sheet_cells.items():
            if isinstance(value, str) and value.startswith("="):
                out[f"{sheet}!{coord}"] = ev.cell(sheet, coord)
    for key, coord in SUMMARY_CELLS.items():
        out[key] = ev.cell(SUMMARY, coord)
    return out


def _numbers(args: Iterable[Any]) -> list[float]:
    out: list[float] = []
    for a in args:
        items = a if isinstance(a, list) else [a]
        out += [float(x) for x in items if isinstance(x, int | float) and not isinstance(x, bool)]
    return out


def _num(value: Any) -> Any:
    if value is None:
        return 0
    return int(value) if isinstance(value, bool) else value


def _sumproduct(*arrays: list[Any]) -> float:
    total = 0.0
    for items in zip(*arrays, strict=True):
        prod = 1.0
        for x in items:
            prod *= x if isinstance(x, int | float) and not isinstance(x, bool) else 0.0
        total += prod
    return total


_BUILTINS: dict[str, Callable[..., Any]] = {
    "_sum": lambda *a: sum(_numbers(a)),
    "_min": lambda *a: min(_numbers(a), default=0.0),
    "_max": lambda *a: max(_numbers(a), default=0.0),
    "_sumproduct": _sumproduct,
    "_if": lambda c, a, b=False: a if c else b,
    "_countif": lambda items, crit: sum(1 for x in items if x == crit),
    "_index": lambda items, n: items[int(n) - 1],  # one column, 1-based
    "_match": lambda value, items, kind=0: items.index(value) + 1,  # exact match only
}


class _Evaluator:
    """Evaluate the small formula language the exporter writes, cell by cell, memoised."""

    def __init__(self, cells: dict[str, dict[str, Any]], names: dict[str, str]) -> None:
        self.cells, self.names = cells, names
        self.done: dict[str, Any] = {}
        self.active: set[str] = set()

    def cell(self, sheet: str, coord: str) -> Any:
        key = f"{sheet}!{coord}"
        if key in self.done:
            return self.done[key]
        if key in self.active:
            raise ValueError(f"circular reference at {key}")
        raw = self.cells.get(sheet, {}).get(coord)
        if isinstance(raw, str) and raw.startswith("="):
            self.active.add(key)
            try:
                raw = self.formula(sheet, raw)
            finally:
                self.active.discard(key)
        self.done[key] = raw
        return raw

    def reference(self, sheet: str, text: str) -> Any:
        text = self.names.get(text.lower(), text)
        m = _REF.match(text)
        if not m:
            raise ValueError(f"cannot evaluate reference {text!r}")
        if m["sheet"]:
            sheet = m["sheet"].strip("'").replace("''", "'")
        if not m["c2"]:
            return _num(self.cell(sheet, f"{m['c1']}{m['r1']}"))
        c1, c2 = sorted((col_index(m["c1"]), col_index(m["c2"])))
        r1, r2 = sorted((int(m["r1"]), int(m["r2"])))
        return [
            self.cell(sheet, f"{get_column_letter(c)}{r}")
            for r in range(r1, r2 + 1)
            for c in range(c1, c2 + 1)
        ]

    def formula(self, sheet: str, text: str) -> Any:
        parts: list[str] = []
        scope: dict[str, Any] = dict(_BUILTINS)
        for tok in Tokenizer(text).items:
            if tok.type == Token.OPERAND and tok.subtype == Token.RANGE:
                var = f"_v{len(scope)}"
                scope[var] = self.reference(sheet, tok.value)
                parts.append(var)
            elif tok.type == Token.OPERAND and tok.subtype == Token.NUMBER:
                parts.append(tok.value)
            elif tok.type == Token.OPERAND and tok.subtype == Token.TEXT:
                parts.append(repr(tok.value[1:-1].replace('""', '"')))
            elif tok.type == Token.OP_IN and tok.value in _COMPARE:
                parts.append(_COMPARE[tok.value])
            elif tok.type == Token.FUNC and tok.subtype == Token.OPEN:
                if tok.value.upper() not in _FUNCS:
                    raise ValueError(f"unsupported function {tok.value!r} in {text!r}")
                parts.append(_FUNCS[tok.value.upper()])
            elif tok.type in (Token.FUNC, Token.PAREN) or tok.type == Token.SEP:
                parts.append(tok.value)
            elif tok.type in (Token.OP_IN, Token.OP_PRE) and tok.value in _ARITHMETIC:
                parts.append(_ARITHMETIC[tok.value])
            elif tok.type == Token.WSPACE:
                continue
            else:
                raise ValueError(f"unsupported token {tok.value!r} in {text!r}")
        try:
            return eval("".join(parts), {"__builtins__": {}}, scope)
        except ZeroDivisionError:
            return None
