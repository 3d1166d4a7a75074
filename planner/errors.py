"""The PlannerError tree: every user-facing failure, each knowing its exit code."""

from __future__ import annotations

import difflib
import math
import reprlib
from collections.abc import Iterable
from typing import Any

SHORT_VALUE = 60  # characters of a user's value shown in a message
_MATCH_LONGEST = 100  # longer names are not compared (difflib is quadratic in the length)


class PlannerError(Exception):
    """Base of every error a user may see; `exit_code` is what the CLI returns."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(PlannerError):
    """A file, key or value the user gave is wrong (exit 2)."""

    exit_code = 2


class CatalogError(InputError):
    """A catalog file is malformed, duplicated or unsourced (exit 2)."""


class OutputError(InputError):
    """A file or standard output cannot be written: full disk, read-only folder (exit 2)."""


class InfeasibleError(PlannerError):
    """No plan meets the scenario's constraints; the message says which binds (exit 1)."""

    exit_code = 1

    def __init__(self, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


class SolverError(PlannerError):
    """The solver failed or timed out without any solution (exit 3)."""

    exit_code = 3


def _repr_limits() -> reprlib.Repr:
    """A repr that stops early: a nested value of any size renders in bounded time."""
    limits = reprlib.Repr()
    limits.maxlevel, limits.maxlist, limits.maxtuple = 3, 6, 6
    limits.maxdict, limits.maxset, limits.maxfrozenset = 4, 4, 4
    limits.maxstring, limits.maxother, limits.maxlong = SHORT_VALUE, SHORT_VALUE, 40
    return limits


_REPR = _repr_limits()


def shorten(value: Any, limit: int = SHORT_VALUE) -> str:
    """A value as a message shows it: repr cut to `limit` characters, never built whole (an
    alias-expanded YAML list or a megabyte string would otherwise take minutes)."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def plain(value: float, digits: int = 3) -> str:
    """A number as people read it in a message, to `digits` significant digits in plain
    decimals (a rate of 0.000001 req/s, not 1e-06), thousands separated and without a
    decimal at or above 1,000 (as `render.tables.human`); n/a when not finite."""
    if not math.isfinite(value):
        return "n/a"
    if abs(value) >= 999.5:
        return f"{value:,.0f}"
    text = f"{value:.{digits}g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    places = max(-int(exponent) + len(mantissa.replace("-", "").replace(".", "")) - 1, 0)
    return f"{value:.{places}f}"


def short_name(name: Any, limit: int = SHORT_VALUE) -> str:
    """A name as a message shows it, without quotes: cut to `limit` characters."""
    text = name if isinstance(name, str) else shorten(name, limit)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_MAX_HINTS = 3  # names a message suggests at most


def _folded(name: str) -> str:
    """A name without case or separators: 'H100_SXM' and 'h100-sxm' read alike."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def close_matches(name: str, choices: Iterable[str]) -> list[str]:
    """Known names a misspelt or shortened one may mean, best first ([] for none, or for
    absurdly long names): the one that differs only in case or separators; else the few
    that begin with it ('h100' -> h100-nvl, h100-pcie, h100-sxm; difflib alone says h200);
    else the closest by difflib."""
    if not isinstance(name, str) or len(name) > _MATCH_LONGEST:
        return []
    choices = sorted(choices)
    key = _folded(name)
    same = [c for c in choices if _folded(c) == key]
    if same:
        return same[:1]
    longer = [c for c in choices if key and _folded(c).startswith(key)]
    if 0 < len(longer) <= _MAX_HINTS:
        return longer
    return difflib.get_close_matches(name, choices, n=1, cutoff=0.5)


def close_match(name: str, choices: Iterable[str]) -> str | None:
    """The closest known name to a misspelt one, or None (`close_matches`' first)."""
    found = close_matches(name, choices)
    return found[0] if found else None


def did_you_mean(name: Any, choices: Iterable[str]) -> str:
    """' (did you mean 'a' or 'b'?)' for a misspelt name's close matches, or ''."""
    hints = [f"'{h}'" for h in close_matches(name, choices)]
    if not hints:
        return ""
    either = hints[0] if len(hints) == 1 else ", ".join(hints[:-1]) + f" or {hints[-1]}"
    return f" (did you mean {either}?)"


def unknown_name_message(kind: str, name: str, choices: Iterable[str]) -> str:
    """One sentence for an unknown id: what was given, close matches, what is allowed."""
    choices = sorted(choices)
    msg = f"unknown {kind} '{short_name(name)}'" + did_you_mean(name, choices)
    shown = ", ".join(choices[:40]) + (" ..." if len(choices) > 40 else "")
    return f"{msg}; known: {shown}"
