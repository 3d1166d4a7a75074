"""perf.table: the solve path's pandas-free table (issue #16), held against pandas itself."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.perf import columns
from planner.perf.table import Coded, Table, mapped, values

_names = st.lists(st.sampled_from(["h100", "a100", "l4", "mi300x", ""]), max_size=30)
_numbers = st.lists(
    st.one_of(st.just(np.nan), st.sampled_from([0.5, 2.0, 7.25, -1.0])), max_size=30
)


@settings(max_examples=60, deadline=None)
@given(items=st.one_of(_names, _numbers))
def test_coded_is_a_pandas_categorical_of_the_same_values(items):
    """Codes into sorted categories, -1 for a missing value: what pandas stores."""
    arr = np.asarray(items, dtype=object if items and isinstance(items[0], str) else float)
    coded, cat = Coded.of(arr), pd.Categorical(arr)
    np.testing.assert_array_equal(coded.codes, cat.codes)
    assert list(coded.categories) == list(cat.categories)
    back = pd.Series(coded.decoded(), dtype=object)
    pd.testing.assert_series_equal(back, pd.Series(np.asarray(cat), dtype=object))


def test_coded_reads_missing_values_as_nan_and_as_floats():
    coded = Coded.of(np.asarray([2.0, np.nan, 1.0, 2.0]))
    assert coded.codes.tolist() == [1, -1, 0, 1]
    np.testing.assert_array_equal(np.asarray(coded, dtype=float), [2.0, np.nan, 1.0, 2.0])
    with_none = Coded.of(np.asarray([None, 3, 1.5], dtype=object))  # numbers with a gap
    assert with_none.categories.dtype == float and with_none.codes.tolist() == [-1, 1, 0]


def _table() -> Table:
    return Table(
        {
            "gpu": Coded.of(np.asarray(["l4", "h100", "l4", "a100"], dtype=object)),
            "tp": np.asarray([1, 2, 4, 8], dtype=np.int16),
            "price": Coded.of(np.asarray([1.0, np.nan, 1.0, 3.5])),
            "cost": np.asarray([0.5, 1.5, 2.5, 3.5]),
        }
    )


def test_rows_columns_and_assignment_as_a_dataframe_gives_them():
    t, df = _table(), _table().to_pandas()
    mask = np.asarray([True, False, True, True])
    pd.testing.assert_frame_equal(t[mask].to_pandas(), df[mask].reset_index(drop=True))
    pd.testing.assert_frame_equal(t[["tp", "gpu"]].to_pandas(), df[["tp", "gpu"]])
    order = np.asarray([3, 0, 0])
    pd.testing.assert_frame_equal(t.take(order).to_pandas(), df.take(order).reset_index(drop=True))
    added = t.assign(cls="chat", cost=np.zeros(4))
    assert added.columns == ["gpu", "tp", "price", "cost", "cls"]
    assert added["cls"].tolist() == ["chat"] * 4 and added["cost"].tolist() == [0.0] * 4
    assert t.row(1) == {"gpu": "h100", "tp": 2, "price": pytest.approx(np.nan, nan_ok=True),
                        "cost": 1.5}  # fmt: skip
    assert len(t) == 4 and not t.empty and t[np.zeros(4, dtype=bool)].empty


def test_a_dataframe_round_trips_with_its_categories():
    df = _table().to_pandas()
    assert isinstance(df["gpu"].dtype, pd.CategoricalDtype)
    pd.testing.assert_frame_equal(Table.from_pandas(df).to_pandas(), df)


def test_values_and_mapped_read_a_table_a_dataframe_and_a_dict_of_series_alike():
    t = _table()
    df = t.to_pandas()
    series = {c: df[c] for c in df.columns}
    for source in (t, df, series):
        np.testing.assert_array_equal(values(source, "price", float), [1.0, np.nan, 1.0, 3.5])
        assert values(source, "gpu").tolist() == ["l4", "h100", "l4", "a100"]
        got = mapped(source, "gpu", {"l4": 8.0, "h100": 4.0})
        np.testing.assert_array_equal(got, df["gpu"].map({"l4": 8.0, "h100": 4.0}).to_numpy(float))


def test_concat_is_pd_concat_then_the_declared_cast():
    """Coded columns with the same categories stay as they are; different ones are coded
    again over the values, as pandas' concat (to object) and a categorical cast do."""
    a = _table()
    b = Table(
        {
            "gpu": Coded.of(np.asarray(["b200", "l4"], dtype=object)),
            "tp": np.asarray([2, 2], dtype=np.int16),
            "price": Coded.of(np.asarray([9.0, 1.0])),
            "cost": np.asarray([1.0, 2.0]),
        }
    )
    got = Table.concat([a, b]).to_pandas()
    want = pd.concat([a.to_pandas(), b.to_pandas()], ignore_index=True)
    want = want.astype({"gpu": "category", "price": "category"})
    pd.testing.assert_frame_equal(got, want)
    same = Table.concat([a, a])
    assert same.stored("gpu").categories is a.stored("gpu").categories  # kept, not recoded


def test_a_declared_table_is_the_declared_frame():
    """columns.table builds what columns.frame builds, without pandas."""
    names = ["gpu", "tp", "quant", "bandwidth_bytes_per_s", "batch", "why_not"]
    declared = columns.select(names)
    data = {
        "gpu": ["l4", "h100", "l4"],
        "tp": np.asarray([1, 2, 1]),
        "quant": np.asarray(["fp8", "bf16", "fp8"]),
        "bandwidth_bytes_per_s": np.asarray([3e11, 3.35e12, 3e11]),
        "batch": np.asarray([8, 64, 512]),
        "why_not": np.asarray(["", "TPOT 60.0 ms > 50 ms", ""], dtype=object),
    }
    table = columns.table(data, declared)
    frame = columns.frame(data, declared)
    pd.testing.assert_frame_equal(columns.conform(table.to_pandas(), declared), frame)
    assert isinstance(table.stored("bandwidth_bytes_per_s"), Coded)  # shared: stored once
    assert table["tp"].dtype == np.int16 and table["batch"].dtype == np.int32
    empty = columns.empty_table(declared)
    pd.testing.assert_frame_equal(
        columns.conform(empty.to_pandas(), declared),
        columns.empty(declared),
        check_index_type=False,
    )


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="different lengths"):
        Table({"a": np.zeros(2), "b": np.zeros(3)})


def test_a_dataframe_is_read_without_copying_its_columns():
    """from_pandas views the categoricals' codes and the numeric arrays: `evaluate` reads a
    sweep's grid through it, and a copy of 48 coded columns was 110 MiB at 2.7M rows."""
    df = _table().to_pandas()
    t = Table.from_pandas(df)
    assert np.shares_memory(t.stored("gpu").codes, df["gpu"].array.codes)
    assert np.shares_memory(t.stored("cost"), df["cost"].to_numpy())
