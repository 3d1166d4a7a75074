"""Array helpers numpy spells at a cost (issue 16)."""

from __future__ import annotations

import math

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


def row_groups(codes: list[np.ndarray]) -> np.ndarray:
    """Each row's group of equal (code, code, ...) tuples, numbered in first-seen order
    (`pd.factorize` of the rows' tuples). The codes (integers, -1 for a missing value) are
    the digits of one integer key, one sort of a column instead of `np.unique(axis=0)`'s sort
    of rows (23 -> 2 ms on mixed-traffic's candidates); rows too varied for one int64 take
    that sort."""
    if not len(codes[0]):
        return np.zeros(0, dtype=np.int64)
    digits = [np.asarray(c).astype(np.int64) + 1 for c in codes]
    bases = [int(d.max(initial=0)) + 1 for d in digits]
    if math.prod(bases) < 2**62:
        key = np.zeros(len(digits[0]), dtype=np.int64)
        for d, base in zip(digits, bases, strict=True):
            key = key * base + d
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    else:
        stacked = np.stack(digits, axis=1)
        _, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]
