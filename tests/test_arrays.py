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
