"""A table of equal-length numpy columns: what the solve path passes between layers.

Issue #16: `import pandas` alone was a third of `planner solve`'s CPU time, and a plan
uses a table only to hold columns, pick rows and add columns. `Table` does that over plain
numpy arrays, with `Coded` for columns of few distinct values (ids, per-deployment
constants) stored as pandas stores a categorical: codes into sorted categories. It
converts to and from a pandas DataFrame (imported only then) for the workbook, charts,
sweeps and calibration, which keep their pandas code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


Frame = Any  # a `Table`, a DataFrame or a mapping of Series: what `values` reads


def values(table: Any, name: str, dtype: Any = None) -> np.ndarray:
    """Column `name` of a `Table`, a DataFrame or a mapping of Series, as one numpy array
    (categories decoded): the one reader the performance model uses for all three."""
    return np.asarray(table[name], dtype=dtype)


def mapped(
    table: Frame, name: str, mapping: Mapping[Any, Any], missing: Any = np.nan, dtype: Any = float
) -> np.ndarray:
    """Column `name` through `mapping` (`missing` where a value, or the row, has no entry),
    looked up once per distinct value."""
    col = table.stored(name) if isinstance(table, Table) else None
    coded = col if isinstance(col, Coded) else Coded.of(values(table, name))
    lookup = np.asarray([mapping.get(c, missing) for c in coded.categories] + [missing], dtype)
    return lookup[coded.codes]  # code -1 reads the trailing `missing`


def _code_dtype(n_categories: int) -> np.dtype:
    """The narrowest signed integer that holds every code and -1 (pandas' own choice)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n_categories < np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


class Coded:
    """A column as integer codes into sorted distinct values; -1 is a missing value (NaN).

    The storage of a pandas Categorical built from the same values, so a plan's ids and
    per-deployment constants cost a byte a row and convert to pandas without a copy."""

    __slots__ = ("categories", "codes")

    def __init__(self, codes: np.ndarray, categories: np.ndarray) -> None:
        self.codes = codes
        self.categories = categories

    @classmethod
    def of(cls, data: Any) -> Coded:
        """`data` coded against its sorted distinct values (NaN and None become -1)."""
        if isinstance(data, Coded):
            return data
        arr = np.asarray(data)
        if arr.dtype.kind == "O":
            missing = np.fromiter((v is None or v != v for v in arr), bool, len(arr))
        elif arr.dtype.kind == "f":
            missing = np.isnan(arr)
        else:
            missing = np.zeros(len(arr), dtype=bool)
        present = arr[~missing] if missing.any() else arr
        numbers = all(isinstance(v, int | float | np.number) for v in present)
        if arr.dtype.kind == "O" and len(present) and numbers:
            present = present.astype(float)  # numbers with gaps: float categories, as pandas
        categories, inverse = np.unique(present, return_inverse=True)
        codes = np.full(len(arr), -1, dtype=_code_dtype(len(categories)))
        codes[~missing] = inverse
        if categories.dtype.kind == "U":
            categories = categories.astype(object)  # python str, as pandas keeps them
        return cls(codes, categories)

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, index: np.ndarray) -> Coded:
        """The rows at these positions (or where a boolean mask is true)."""
        return Coded(self.codes[index], self.categories)

    def decoded(self) -> np.ndarray:
        """The values, one per row (NaN where missing)."""
        if len(self.categories) == 0:
            fill = np.nan if self.categories.dtype.kind == "f" else None
            return np.full(len(self.codes), fill, dtype=self.categories.dtype)
        out = self.categories[self.codes]
        missing = self.codes < 0
        if missing.any():
            out = out.astype(float if out.dtype.kind in "fiu" else object)
            out[missing] = np.nan
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.decoded()
        return out if dtype is None else out.astype(dtype)


Column = np.ndarray | Coded


class Table:
    """Named columns of one length, in order: numpy arrays or `Coded`.

    `table[name]` is a column's values as a numpy array, `table[names]` the projection,
    `table[mask]` (a boolean or index array) the rows picked; nothing is copied that a
    numpy index does not copy."""

    __slots__ = ("_data", "_n")

    def __init__(self, data: Mapping[str, Column], n: int | None = None) -> None:
        self._data = dict(data)
        lengths = {len(c) for c in self._data.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")
        self._n = lengths.pop() if lengths else (n or 0)

    @property
    def columns(self) -> list[str]:
        return list(self._data)

    @property
    def empty(self) -> bool:
        return self._n == 0

    def __len__(self) -> int:
        return self._n

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def stored(self, name: str) -> Column:
        """The column as stored (a `Coded` stays coded)."""
        return self._data[name]

    def codes(self, name: str) -> np.ndarray:
        """Integer codes that sort as the column's values do (a numeric column: itself)."""
        col = self._data[name]
        if isinstance(col, Coded):
            return col.codes
        return col if col.dtype.kind in "iub" else Coded.of(col).codes

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            col = self._data[key]
            return col.decoded() if isinstance(col, Coded) else col
        if isinstance(key, list | tuple):
            return Table({k: self._data[k] for k in key}, self._n)
        return self.take(np.asarray(key))

    def take(self, index: np.ndarray) -> Table:
        """The rows at these positions, in that order (or where a boolean mask is true)."""
        out = {
            k: c.take(index) if isinstance(c, Coded) else c[index] for k, c in self._data.items()
        }
        n = int(index.sum()) if index.dtype == bool else len(index)
        return Table(out, n)

    def assign(self, **columns: Any) -> Table:
        """This table with columns added or replaced (a scalar fills every row)."""
        out = dict(self._data)
        for name, value in columns.items():
            if isinstance(value, Coded):
                out[name] = value
            elif np.ndim(value) == 0:
                out[name] = np.full(self._n, value)
            else:
                out[name] = np.asarray(value)
        return Table(out, self._n)

    def row(self, i: int) -> dict[str, Any]:
        """Row `i` as a dict of its values."""
        return {k: self[k][i] for k in self._data}

    @staticmethod
    def concat(tables: Sequence[Table]) -> Table:
        """The tables' rows one after another (same columns, in the first one's order). Coded
        columns keep their categories where all agree, else are coded again, as
        `pd.concat` and a categorical cast do."""
        if len(tables) == 1:
            return tables[0]
        names = tables[0].columns
        out: dict[str, Column] = {}
        for name in names:
            parts = [t._data[name] for t in tables]
            out[name] = _concat_column(parts)
        return Table(out, sum(len(t) for t in tables))

    def to_pandas(self) -> pd.DataFrame:
        """The same table as a DataFrame (coded columns as categoricals, no copy)."""
        import pandas as pd

        data = {
            k: pd.Categorical.from_codes(c.codes, c.categories) if isinstance(c, Coded) else c
            for k, c in self._data.items()
        }
        return pd.DataFrame(data, copy=False, index=pd.RangeIndex(self._n))

    @classmethod
    def from_pandas(cls, frame: pd.DataFrame) -> Table:
        """A DataFrame's columns (categoricals as `Coded`, categories kept)."""
        import pandas as pd

        out: dict[str, Column] = {}
        for name in frame.columns:
            series = frame[name]
            if isinstance(series.dtype, pd.CategoricalDtype):
                # the Categorical's own codes, a view: `series.cat.codes` builds a Series,
                # which pandas 3 copies (a byte a row a column: 110 MiB at 2.7M rows)
                categorical = series.array
                out[str(name)] = Coded(categorical.codes, categorical.categories.to_numpy())
            else:
                out[str(name)] = series.to_numpy()
        return cls(out, len(frame))


def _concat_column(parts: Iterable[Column]) -> Column:
    parts = list(parts)
    coded = [p for p in parts if isinstance(p, Coded)]
    if coded and len(coded) == len(parts):
        first = coded[0].categories
        if all(np.array_equal(p.categories, first) for p in coded):
            return Coded(np.concatenate([p.codes for p in coded]), first)
    joined = np.concatenate([np.asarray(p) for p in parts])
    return Coded.of(joined) if coded else joined
