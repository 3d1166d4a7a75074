"""planner.arrays.distinct is np.unique without numpy.ma (issue 16)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from planner.arrays import distinct


@given(arrays(np.int64, st.integers(0, 40), elements=st.integers(-5, 5)))
def test_distinct_is_np_unique_on_integers(values):
    assert np.array_equal(distinct(values), np.unique(values))


@given(arrays(np.float64, st.integers(0, 40), elements=st.floats(-1e3, 1e3, allow_nan=False)))
def test_distinct_is_np_unique_on_floats(values):
    got = distinct(values)
    assert np.array_equal(got, np.unique(values)) and got.dtype == values.dtype


def test_distinct_flattens_and_keeps_booleans():
    assert distinct(np.array([[3, 1], [3, 2]])).tolist() == [1, 2, 3]
    assert distinct(np.array([True, False, True])).tolist() == [False, True]
    assert distinct(np.array([], dtype=int)).size == 0


@given(
    arrays(
        np.int64,
        st.tuples(st.integers(0, 30), st.integers(1, 4)),
        elements=st.integers(-1, 3),
    ),
    st.booleans(),
)
def test_row_groups_number_equal_rows_in_first_seen_order(table, huge):
    """pd.factorize of the rows' tuples, by the integer key or (too many combinations for
    one int64) by sorting the rows."""
    import pandas as pd

    from planner.arrays import row_groups

    codes = [table[:, j] for j in range(table.shape[1])]
    if huge:  # a column whose codes reach 2**62 forces the sort of rows
        codes.append(np.where(np.arange(len(table)) % 2 == 0, 2**62, 0).astype(np.int64))
    want, _ = pd.factorize(pd.Series(list(zip(*codes, strict=True)), dtype=object))
    assert row_groups(codes).tolist() == want.tolist()
