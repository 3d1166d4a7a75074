"""The candidate table's declared schema (perf/columns.py), held against real frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.fleet.selection import OFFERED_COLUMNS
from planner.inputs.scenarios import load_scenario
from planner.perf import columns
from planner.perf.candidates import GridSpec, Price, build_grid
from planner.perf.evaluate import evaluate
from planner.planning.pipeline import plan
from planner.schema.engine import Efficiency

SCENARIOS = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.yaml"))


def assert_declared(frame: pd.DataFrame, declared: tuple[columns.Column, ...]) -> None:
    """Same names, same order, every column at its declared dtype."""
    assert list(frame.columns) == [c.name for c in declared]
    wrong = {c.name: str(frame[c.name].dtype) for c in declared if not c.holds(frame[c.name].dtype)}
    assert not wrong, f"columns not at their declared dtype: {wrong}"


def grid_and_rows(catalog, gpus=("h100-sxm", "a100-80gb", "l4"), priced=2):
    gpu_list = [catalog.gpu(g) for g in gpus]
    spec = GridSpec(
        gpus=gpu_list,
        quants=[catalog.quant("bf16"), catalog.quant("fp8")],
        batches=[1, 8, 64, 512],
        shapes=[(1024, 256), (8000, 100)],
        prices={g.id: Price(2.0, "test") for g in gpu_list[:priced]},
    )
    model = catalog.model("llama-3.1-70b")
    grid, _ = build_grid(model, spec, catalog.engine("vllm"))
    return grid, evaluate(model, grid, 0.8, "p95")


def test_every_column_is_documented_once_with_a_unit_meaning_and_dtype():
    names = [c.name for c in columns.CANDIDATE_COLUMNS]
    assert len(names) == len(set(names))
    for c in columns.CANDIDATE_COLUMNS:
        assert c.unit.strip() and len(c.meaning.split()) >= 2, c
        assert c.pandas_dtype is not None  # pandas knows the dtype
    assert names[0] == "class" and names[-1] == "sla_ok"


def test_engine_constants_are_declared_field_by_field():
    eff = [c.name for c in columns.GRID_COLUMNS if c.name.startswith("eff_")]
    assert eff == [f"eff_{f}" for f in Efficiency.model_fields]


def test_grid_and_evaluation_produce_exactly_the_declared_columns(catalog):
    grid, rows = grid_and_rows(catalog)
    assert len(grid) > 0
    assert_declared(grid, columns.GRID_COLUMNS)
    assert_declared(rows, columns.EVALUATED_COLUMNS)
    assert rows["price_usd_per_gpu_hour"].isna().any()  # unpriced GPU kept, NaN price
    assert set(rows["bound"]) <= {"memory", "compute"}


def test_an_empty_grid_still_has_the_declared_columns(catalog):
    spec = GridSpec(gpus=[catalog.gpu("l4")], quants=[catalog.quant("bf16")], tps=[3])
    model = catalog.model("llama-3.1-70b")
    grid, rejected = build_grid(model, spec, catalog.engine("vllm"))
    assert grid.empty and len(rejected) == 1
    assert_declared(grid, columns.GRID_COLUMNS)
    assert_declared(evaluate(model, grid), columns.EVALUATED_COLUMNS)


def test_ids_are_categorical_with_sorted_categories(catalog):
    _, rows = grid_and_rows(catalog)
    for c in columns.EVALUATED_COLUMNS:
        if c.dtype == columns.ID:
            cats = list(rows[c.name].cat.categories)
            assert cats == sorted(cats), c.name  # sorting by the column sorts by name


def test_building_by_the_declaration_refuses_undeclared_and_missing_columns(catalog):
    grid, _ = grid_and_rows(catalog)
    with pytest.raises(KeyError, match="undeclared"):
        columns.conform(grid.assign(extra=1.0), columns.GRID_COLUMNS)
    with pytest.raises(KeyError, match="missing"):
        columns.conform(grid.drop(columns="batch"), columns.GRID_COLUMNS)
    with pytest.raises(KeyError, match="undeclared"):
        columns.select(["gpu", "chat"])


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_a_plans_candidate_table_is_exactly_the_declared_one(path, catalog):
    """Nothing downstream of the grid adds an undeclared column (finance left out: only
    the steady plan builds the table)."""
    scenario, cat = load_scenario(path, catalog)
    result = plan(scenario.model_copy(update={"finance": None}), cat)
    assert_declared(result.candidates, columns.CANDIDATE_COLUMNS)
    assert_declared(result.offered.key_frame(), OFFERED_COLUMNS)
    capacity = result.offered.capacity
    assert capacity.shape == (len(result.offered.keys), len(result.classes))
    assert capacity.dtype == np.float64 and (capacity >= 0).all()
    assert (capacity > 0).any(axis=1).all()  # every offered candidate serves some class


def test_renderers_name_only_declared_columns():
    """The workbook's Candidates sheet and the estimate JSON read declared columns only."""
    from planner.render.json import BREAKDOWN_KEYS, ESTIMATE_KEYS
    from planner.render.xlsx.names import CANDIDATE_COLUMNS

    declared = set(columns.BY_NAME)
    assert {name for name, _, _ in CANDIDATE_COLUMNS} <= declared
    assert set(ESTIMATE_KEYS) - declared == {"model", "engine"}  # labels estimate() adds
    assert {v for v in BREAKDOWN_KEYS.values() if v} <= declared


_KINDS = {"f8": np.float64, "f4": np.float32, "i8": np.int64, "i4": np.int32, "b": np.bool_}


@pytest.mark.parametrize("source", sorted(_KINDS))
def test_frame_narrows_arrays_exactly_as_pandas_astype_would(source):
    """frame casts numeric arrays with numpy before building the table (issue #16): the
    same table, value for value and dtype for dtype, as building then DataFrame.astype."""
    declared = columns.select(["tp", "batch", "max_batch", "fits", "t_kv_ms", "tpot_ms"])
    raw = np.random.default_rng(7).normal(0, 1e5, 50)
    raw[:2] = (70000.5, 3.3)  # an int16 that wraps, a float32 that rounds: as astype does
    data = {c.name: (raw > 0 if source == "b" else raw).astype(_KINDS[source]) for c in declared}
    got = columns.frame(data, declared)
    want = pd.DataFrame(data).astype({c.name: c.storage for c in declared})
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert_declared(got, declared)


def test_conform_with_a_few_columns_off_casts_only_those_and_leaves_the_input_alone():
    """A couple of columns off their dtype (the plan's class and why_not) are cast one by
    one (issue #16: DataFrame.astype rebuilt all 102): the same table as astype gives."""
    declared = columns.select(["class", "tp", "batch", "fits", "t_kv_ms", "tpot_ms", "why_not"])
    table = pd.DataFrame(
        {
            "class": ["b", "a", "b"],
            "tp": np.array([1, 2, 4], dtype=np.int16),
            "batch": np.array([8, 16, 32], dtype=np.int32),
            "fits": [True, False, True],
            "t_kv_ms": np.array([1.5, 2.5, 3.5], dtype=np.float32),
            "tpot_ms": np.array([10.0, 20.0, 30.0]),
            "why_not": np.array(["", "out of memory", ""], dtype=object),
        }
    )
    before = table.copy()
    got = columns.conform(table, declared)
    want = table.astype({"class": "category", "why_not": "str"})
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert_declared(got, declared)
    pd.testing.assert_frame_equal(table, before)  # the caller's table is not changed
