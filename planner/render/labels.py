"""Labels every renderer writes the same way: a block of months."""

from __future__ import annotations


def months_label(months: tuple[int, ...]) -> str:
    """A block of months as people write it: (4, 5, 6) -> "4-6", (7,) -> "7"."""
    return f"{months[0]}-{months[-1]}" if len(months) > 1 else str(months[0])
