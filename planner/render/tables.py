"""Terminal tables and prose that fit the terminal: the one door to `rich`.

A table is laid out by rich at the output width (100 columns unless the terminal is
narrower, or no limit with `--wide`): when it is too wide, the columns of least priority
are left out first (and named under the table), then long text cells wrap. Numbers are
formatted by `human` and `money` so that every command writes them the same way.
"""

from __future__ import annotations

import io
import math
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box
from rich.console import Console
from rich.table import Table

WIDTH = 100  # the widest output a command writes unless asked for --wide
WIDE = 10_000  # "no limit": rich needs a number


@dataclass(frozen=True)
class Layout:
    """How wide the output may be: `wide` shows every column, unwrapped."""

    wide: bool = False

    @property
    def width(self) -> int:
        """The output width: 100, the terminal's if narrower (COLUMNS), or no limit."""
        if self.wide:
            return WIDE
        try:
            columns = int(os.environ.get("COLUMNS", WIDTH))
        except ValueError:
            columns = WIDTH
        return max(40, min(WIDTH, columns))


@dataclass(frozen=True)
class Col:
    """One column: its header, alignment (l/r) and priority (0 is never dropped; higher
    numbers are dropped first when the table is too wide)."""

    header: str
    align: str = "l"
    priority: int = 0
    max_width: int | None = None  # a text column wider than this wraps
    no_wrap: bool = False  # a word that must not break (a status), even when text


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def cell(v: Any) -> str:
    """A cell's text: numbers in human form, None and NaN as a dash."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if _is_number(v):
        return human(float(v))
    return str(v)


def human(v: float, digits: int = 3) -> str:
    """A number as people read it: 1,234 / 12.3 / 0.0123 / 3.32 trillion, never 3.32e+11."""
    if not math.isfinite(v):
        return "n/a"
    if float(v).is_integer() and abs(v) < 1e9:
        return f"{int(v):,}"
    size = abs(v)
    for scale, word in ((1e12, "trillion"), (1e9, "billion")):
        if size >= scale:
            return f"{v / scale:,.{digits - 1}f} {word}"
    if size >= 1000:  # a decimal on thousands is noise (10,291.2 output tokens/s)
        return f"{v:,.0f}"
    if size >= 100:
        return f"{v:,.1f}"
    return f"{v:.{digits}g}" if size >= 1e-4 or v == 0 else f"{v:.2e}"


def money(v: float, digits: int = 2) -> str:
    """Dollars with thousands separators; n/a when not finite."""
    return f"${v:,.{digits}f}" if math.isfinite(v) else "n/a"


def per_token_money(v: float) -> str:
    """A cost per 1K tokens with the digits it needs (never $0.0007 for $0.00074), in plain
    decimals however small ($0.0000922, not $9.22e-05: finance reads these)."""
    if not math.isfinite(v):
        return "n/a"
    if abs(v) >= 0.01:
        return f"${v:,.4f}"
    if v == 0:
        return "$0.00"
    places = 2 - int(f"{v:.2e}".split("e")[1])  # three significant digits, once rounded
    return f"${v:.{places}f}"


def usd(value: float) -> str:
    """Dollars per request or per 1K tokens: cents and thousands from $1 (`money`: $747.22,
    not $747.2222), the digits a small figure needs below it (`per_token_money`)."""
    return money(value) if abs(value) >= 1 else per_token_money(value)


def _rich_table(cols: Sequence[Col], rows: Sequence[Sequence[str]], wide: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for c in cols:
        justify: Literal["right", "left"] = "right" if c.align == "r" else "left"
        table.add_column(
            c.header,
            justify=justify,
            no_wrap=wide or c.align == "r" or c.no_wrap,
            overflow="fold",
            max_width=None if wide else c.max_width,
        )
    for r in rows:
        table.add_row(*r)
    return table


def _console(width: int) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        color_system=None,
        force_terminal=False,
        highlight=False,
        emoji=False,
        markup=False,
    )


def _text(console: Console, table: Table) -> str:
    console.print(table)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in out.splitlines()).strip("\n")


def table(
    cols: Sequence[Col | str],
    rows: Sequence[Sequence[Any]],
    layout: Layout = Layout(),
    align: str = "",
) -> str:
    """A table at the layout's width: columns dropped by priority, then text wrapped."""
    spec = [
        c if isinstance(c, Col) else Col(c, align[i] if i < len(align) else _guess(rows, i))
        for i, c in enumerate(cols)
    ]
    cells = [[cell(v) for v in r] for r in rows]
    keep = list(range(len(spec)))
    width = layout.width
    dropped: list[str] = []
    while True:
        tbl = _rich_table(
            [spec[i] for i in keep], [[r[i] for i in keep] for r in cells], layout.wide
        )
        if layout.wide or _console(WIDE).measure(tbl).maximum <= width:
            break
        droppable = [i for i in keep if spec[i].priority > 0]
        if not droppable:
            break
        worst = max(droppable, key=lambda i: (spec[i].priority, i))
        keep.remove(worst)
        dropped.append(spec[worst].header)
    out = _text(_console(width), tbl)
    if dropped:
        out += "\n" + wrap(
            f"(left out to fit {width} columns: {', '.join(reversed(dropped))}; --wide shows all)",
            layout,
        )
    return out


def _guess(rows: Sequence[Sequence[Any]], i: int) -> str:
    """Right-align a column whose every cell is a number or a formatted amount."""
    if rows and all(_is_number(r[i]) or _numeric_text(r[i]) for r in rows):
        return "r"
    return "l"


def _numeric_text(v: Any) -> bool:
    text = str(v).lstrip("$-").replace(",", "").replace(".", "").replace("%", "")
    return text.isdigit()


def wrap(text: str, layout: Layout = Layout(), indent: str = "") -> str:
    """Prose wrapped at the layout's width, each paragraph (line) on its own."""
    if layout.wide:
        return text
    return "\n".join(
        textwrap.fill(line, layout.width, subsequent_indent=indent, break_on_hyphens=False)
        if line
        else ""
        for line in text.split("\n")
    )
