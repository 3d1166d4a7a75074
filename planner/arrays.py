"""Array helpers numpy spells at a cost (issue 16)."""

from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of `values` (flattened), as `np.unique(values)` for values
    without NaN. numpy 2's plain `np.unique` asks `np.ma.is_masked`, and with it imports
    numpy.ma: 12-30 ms of a solve, for a mask no planner array carries."""
    ordered = np.sort(np.asarray(values).ravel())
    if ordered.size == 0:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
