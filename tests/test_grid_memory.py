"""Issue 16: the grid is evaluated in slices, so a sweep's temporaries stay bounded; the
slices give exactly the table one pass gives. The table is stored at its declared, narrow
dtypes: per-deployment numbers once per value (`columns.SHARED`), small ints at int16/int32,
physics detail at float32; that narrowing loses nothing but float32's rounding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.perf import columns
from planner.perf import evaluate as ev
from planner.perf.candidates import GridSpec, Price, build_grid
from planner.perf.queueing import _erlang_b_arrays, _erlang_b_exact, _erlang_b_scalar


def _grid(catalog, batches=(1, 8, 64, 256)) -> tuple:
    model = catalog.model("llama-3.1-70b")
    gpus = [catalog.gpus["h100-sxm"], catalog.gpus["a100-80gb"]]
    spec = GridSpec(
        gpus=gpus,
        quants=list(catalog.quants.values()),
        tps=[1, 2, 4, 8],
        batches=list(batches),
        shapes=[(2048, 256), (512, 64)],
        prices={g.id: Price(2.0, "test") for g in gpus},
    )
    grid, _ = build_grid(model, spec, catalog.engine("vllm"))
    return model, grid


def test_evaluating_in_slices_gives_the_table_of_one_pass(catalog, monkeypatch):
    model, grid = _grid(catalog)
    whole = ev.evaluate(model, grid, 0.8, "p95")
    monkeypatch.setattr(ev, "CHUNK_ROWS", 7)  # slices that end mid-deployment and mid-shape
    assert len(grid) > 3 * ev.CHUNK_ROWS
    sliced = ev.evaluate(model, grid, 0.8, "p95")
    pd.testing.assert_frame_equal(sliced, whole)


@pytest.fixture(scope="module")
def small(catalog):
    """A grid, its table in one pass, and the rows' count."""
    model, grid = _grid(catalog, batches=(1, 16, 128))
    return model, grid, ev.evaluate(model, grid, 0.8, "p90")


@settings(max_examples=15, deadline=None)
@given(chunk=st.integers(1, 400))
def test_any_slice_size_gives_the_same_table(small, chunk):
    model, grid, whole = small
    saved = ev.CHUNK_ROWS
    ev.CHUNK_ROWS = chunk
    try:
        sliced = ev.evaluate(model, grid, 0.8, "p90")
    finally:
        ev.CHUNK_ROWS = saved
    pd.testing.assert_frame_equal(sliced, whole)


def _row_bytes(declared: tuple[columns.Column, ...]) -> int:
    """Bytes a row costs by the declaration: a categorical (ID, SHARED) holds a 1-byte code
    (fewer than 128 values), every other column its dtype's width."""
    return sum(1 if c.storage == "category" else np.dtype(c.storage).itemsize for c in declared)


def test_per_deployment_numbers_are_stored_once_not_on_every_row(catalog):
    """Doubling the rows (batches) adds exactly the declared bytes a row: the 32 per-GPU,
    per-quant and per-engine numbers add a 1-byte code a row, not 8 bytes."""
    model, few = _grid(catalog, batches=(1, 2))
    _, many = _grid(catalog, batches=(1, 2, 3, 4))
    few_t, many_t = ev.evaluate(model, few), ev.evaluate(model, many)
    added = many_t.memory_usage(deep=True).sum() - few_t.memory_usage(deep=True).sum()
    per_row = added / (len(many_t) - len(few_t))
    assert per_row == _row_bytes(columns.EVALUATED_COLUMNS)
    shared = [c for c in columns.EVALUATED_COLUMNS if c.dtype == columns.SHARED]
    assert len(shared) >= 30  # what storing them at float64 would cost: 8 bytes each a row
    # 699 bytes a row before issue 16 (every number float64 or int64); 301 in session 24,
    # which added the fused decode rows' time (float32) and the short-K GEMM constant (a code);
    # 313 in session 39, which added the overlap scheduler's launched step in TTFT (float32)
    # and its per-engine step count (a code)
    assert per_row <= 315


def test_the_narrow_table_holds_the_wide_evaluation_rounded_only_where_declared(small):
    """The same grid at float64/int64 throughout, evaluated without the declaration: every
    column equal to the narrow table's, FLOAT32 ones equal after rounding to float32."""
    model, grid, table = small
    wide = grid.astype(
        {c.name: "float64" for c in columns.GRID_COLUMNS if c.dtype == columns.SHARED}
        | {c.name: "int64" for c in columns.GRID_COLUMNS if c.storage in ("int16", "int32")}
    )
    arrays = ev.evaluate_arrays(model, wide, 0.8, "p90")
    for c in columns.GRID_COLUMNS:
        got = table[c.name]
        want = wide[c.name]
        if c.dtype == columns.SHARED:
            np.testing.assert_array_equal(got.to_numpy(dtype=float), want.to_numpy(), c.name)
        elif c.dtype != columns.ID:
            np.testing.assert_array_equal(got.to_numpy(), want.to_numpy(), c.name)
    for c in columns.MODEL_COLUMNS:
        got, want = table[c.name], arrays[c.name]
        if c.dtype == columns.ID:
            assert list(got.astype(str)) == list(pd.Categorical(np.asarray(want)).astype(str)), (
                c.name
            )
        elif c.dtype == columns.FLOAT32:
            np.testing.assert_array_equal(got.to_numpy(), np.asarray(want, np.float32), c.name)
        else:
            np.testing.assert_array_equal(got.to_numpy(), np.asarray(want), c.name)


def test_a_one_row_report_shows_float32_detail_as_its_shortest_decimal():
    row = pd.Series({"t_kv_ms": np.float32(21.504), "tpot_ms": 1.0 / 3.0, "gpu": "h100-sxm"})
    out = columns.shortest_floats(row)
    assert out["t_kv_ms"] == 21.504  # not 21.503999710083008, what float() of it reads
    assert float(row["t_kv_ms"]) != 21.504
    assert out["tpot_ms"] == 1.0 / 3.0 and out["gpu"] == "h100-sxm"  # float64 kept whole


def _erlang_b_by_masks(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The recursion as it was before #16: every pair stepped to the largest c, by masks."""
    erlang_b, result = np.ones(a.shape), np.zeros(a.shape)
    for n in range(1, int(c.max(initial=0)) + 1):
        erlang_b = a * erlang_b / (n + a * erlang_b)
        result[c == n] = erlang_b[c == n]
    return result


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.integers(0, 600), st.floats(0.0, 1.5, allow_nan=False)), max_size=80
    )
)
def test_erlang_b_in_order_of_servers_equals_the_masked_recursion_bit_for_bit(pairs):
    """The per-slice Erlang-B steps only the pairs still below their c: the same floats."""
    c = np.asarray([p[0] for p in pairs], dtype=np.int64)
    a = np.asarray([p[1] * p[0] for p in pairs], dtype=float)
    np.testing.assert_array_equal(_erlang_b_exact(c, a), _erlang_b_by_masks(c, a))
    # both ways of stepping, whichever _erlang_b_exact picks for these pairs (issue #16)
    np.testing.assert_array_equal(_erlang_b_arrays(c, a), _erlang_b_by_masks(c, a))
    np.testing.assert_array_equal(_erlang_b_scalar(c, a), _erlang_b_by_masks(c, a))
