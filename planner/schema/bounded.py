"""Bounded field types: finite numbers in a stated range, strict booleans, lists without repeats.

One type per kind of value, used by every schema, so that no number outside float range or
int64, no boolean posing as a number (or number as a boolean) and no repeated list entry gets
past the edge. Each refusal states the allowed range; `describe_error` adds the value, cut.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from planner.errors import shorten
from planner.schema.limits import MAX_LIST

_NUMBER = re.compile(r"^\s*[+-]?(\d[\d_]*\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


def _fmt(x: float) -> str:
    """A bound as a message shows it: 1,000,000 for whole numbers, 0.5 or 1e+12 otherwise."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


@dataclass(frozen=True)
class Range:
    """An interval of allowed values, its unit, and whether only whole numbers are allowed."""

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False
    unit: str = ""
    whole: bool = False

    def text(self) -> str:
        """'a number greater than 0 and at most 1,000,000 requests/s' (the unit last)."""
        kind = "a whole number" if self.whole else "a finite number"
        low = f"{'greater than' if self.low_open else 'at least'} {_fmt(self.low)}"
        high = f"{'less than' if self.high_open else 'at most'} {_fmt(self.high)}"
        return f"{kind} {low} and {high}" + (f" {self.unit}" if self.unit else "")

    def fail(self) -> ValueError:
        return ValueError(f"must be {self.text()}")

    def check(self, value: Any) -> float | int:
        """The value as a float (or int when whole), or ValueError naming the range."""
        number = self._number(value)
        inside_low = number > self.low if self.low_open else number >= self.low
        inside_high = number < self.high if self.high_open else number <= self.high
        if not (inside_low and inside_high):
            raise self.fail()
        return int(number) if self.whole else float(number)

    def _number(self, value: Any) -> float | int:
        """A finite int or float from a number or numeric text; booleans are not numbers."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real | str):
            raise ValueError(f"must be {self.text()}, not {_kind(value)}")
        if isinstance(value, str):
            if not _NUMBER.match(value):
                raise ValueError(f"must be {self.text()}, not text")
            value = float(value.replace("_", ""))
        if isinstance(value, numbers.Integral):
            return int(value)
        value = float(value)
        if not math.isfinite(value):
            raise self.fail()
        if self.whole:
            if not value.is_integer():
                raise ValueError(f"must be {self.text()}")
            return int(value)
        return value


def _kind(value: Any) -> str:
    """What a value is, for 'must be a number, not <kind>'."""
    kinds = {bool: "a boolean", str: "text", list: "a list", dict: "a mapping", int: "a number"}
    if value is None:
        return "empty (null)"
    return kinds.get(type(value), f"a {type(value).__name__}")


def between(
    low: float,
    high: float,
    *,
    unit: str = "",
    low_open: bool = False,
    high_open: bool = False,
    parse: Callable[[Any], Any] | None = None,
) -> BeforeValidator:
    """For `Annotated[float, between(0, 1)]`: a finite float in [low, high] (ends open as
    asked); `parse` runs first (e.g. '50ms' to 50)."""
    bounds = Range(low, high, low_open, high_open, unit)

    def check(value: Any) -> float:
        return float(bounds.check(parse(value) if parse else value))

    return BeforeValidator(check)


def whole(low: int, high: int, *, unit: str = "", low_open: bool = False) -> BeforeValidator:
    """For `Annotated[int, whole(0, 1024, low_open=True)]`: a whole number in [low, high]
    (low excluded if asked); 3.0 is 3, while 3.5 and true are refused."""
    bounds = Range(low, high, low_open=low_open, unit=unit, whole=True)

    def check(value: Any) -> int:
        return int(bounds.check(value))

    return BeforeValidator(check)


def _strict_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {_kind(value)}")  # 1, 'yes', null
    return value


Flag = Annotated[bool, BeforeValidator(_strict_bool)]
"""true or false only: 1, 'yes' and 'on' (as text) are refused."""


def _no_repeats(values: list) -> list:
    seen: dict[Any, int] = {}
    for i, value in enumerate(values):
        key = value if isinstance(value, str | int | float) else repr(value)
        if key in seen:
            raise ValueError(
                f"lists {shorten(value)} twice (entries {seen[key]} and {i}); give each once"
            )
        seen[key] = i
    return values


NoRepeats = AfterValidator(_no_repeats)
"""For `Annotated[list[str], NoRepeats]`: refuses a list that names an entry twice."""
ListCap = Field(max_length=MAX_LIST)
"""At most MAX_LIST entries in a list of ids, degrees or batch sizes."""

Name = Annotated[str, Field(min_length=1, max_length=200)]
"""An id as a scenario names it; checked against the catalog, with a close match, later."""

ENTRY_ID = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$"
EntryId = Annotated[str, Field(pattern=ENTRY_ID)]
"""A catalog id, which is also a file name: letters, digits, . _ + -, not starting with a dot."""
