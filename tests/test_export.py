"""The Excel export: sheets, live formulas that reproduce the plan, atomic writes."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import zipfile
from pathlib import Path

import numpy as np
import openpyxl
import openpyxl.writer.excel
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openpyxl.utils import get_column_letter

from planner.errors import InputError
from planner.inputs.catalog import load_catalog
from planner.inputs.scenarios import load_scenario
from planner.perf.table import Table
from planner.planning.breakeven import BuildVsBuy, analyse
from planner.planning.pipeline import plan as make_plan
from planner.render import xlsx as export
from planner.render.xlsx import BASE_SHEETS, SHEETS, SUMMARY_CELLS, read_back, write_workbook
from planner.render.xlsx.names import CANDIDATE_COLUMNS
from planner.schema.scenario import Scenario
from planner.units import HOURS_PER_MONTH

ROOT = Path(__file__).resolve().parent.parent


def close(a: float, b: float, rel: float = 1e-6) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def plan(catalog):
    sc = Scenario.model_validate(
        {
            "name": "t",
            "model": "llama-3.1-70b",
            "workload": {"requests_per_second": 10, "input_tokens": 1024, "output_tokens": 256},
            "sla": {"tpot_ms": 50, "ttft_ms": 2000},
        }
    )
    return make_plan(sc, catalog)


@pytest.fixture(scope="module")
def two_class_plan(catalog):
    sc = Scenario.model_validate(
        {
            "name": "two classes",
            "model": "llama-3.1-8b",
            "workload": {
                "classes": [
                    {
                        "name": "chat",
                        "requests_per_second": 20,
                        "input_tokens": 512,
                        "output_tokens": 256,
                        "sla": {"tpot_ms": 40, "ttft_ms": 1000},
                    },
                    {
                        "name": "bulk",
                        "requests_per_second": 5,
                        "input_tokens": 4096,
                        "output_tokens": 512,
                        "sla": {"tpot_ms": 100, "ttft_ms": 10000},
                    },
                ]
            },
            "sla": {"tpot_ms": 50, "ttft_ms": 2000},
        }
    )
    return make_plan(sc, catalog)


@pytest.fixture(scope="module")
def analysis(plan):
    """Break-even volumes and cost curves, computed once (MIP solves) and passed in."""
    return analyse(plan)


@pytest.fixture(scope="module")
def written(plan, analysis, tmp_path_factory):
    return write_workbook(plan, tmp_path_factory.mktemp("x") / "plan.xlsx", analysis)


@pytest.fixture(scope="module")
def time_plan(catalog):
    sc, cat = load_scenario(str(ROOT / "scenarios" / "diurnal-chatbot.yaml"), catalog)
    p = make_plan(sc, cat)
    assert p.over_time is not None
    return p


@pytest.fixture(scope="module")
def time_analysis(time_plan):
    return analyse(time_plan)


@pytest.fixture(scope="module")
def time_written(time_plan, time_analysis, tmp_path_factory):
    path = tmp_path_factory.mktemp("t") / "diurnal.xlsx"
    return write_workbook(time_plan, path, time_analysis)


def _named_cell(wb: openpyxl.Workbook, name: str):
    sheet, coord = wb.defined_names[name].attr_text.split("!")
    return wb[sheet.strip("'")][coord.replace("$", "")]


def _fleet_total_row(ws) -> int:
    return next(r for r in range(2, ws.max_row + 1) if ws.cell(row=r, column=1).value == "Total")


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_sheets_in_order(written):
    wb = openpyxl.load_workbook(written)
    assert wb.sheetnames == [
        "Summary",
        "Fleet",
        "Candidates",
        "Build vs API",
        "Charts",
        "Assumptions",
    ]
    assert SHEETS == (
        "Summary", "Fleet", "Monthly", "Periods", "Candidates", "Build vs API", "Charts",
        "Assumptions",
    )  # fmt: skip
    assert BASE_SHEETS == ("Summary", "Fleet", "Candidates", "Build vs API", "Assumptions")
    for name in wb.sheetnames:
        assert wb[name]["A1"].value is not None
        if name != "Charts":  # charts on top, their tables below: nothing to freeze
            assert wb[name].freeze_panes is not None, name


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_fleet_costs_are_formulas_on_named_prices(plan, written):
    wb = openpyxl.load_workbook(written)
    ws = wb["Fleet"]
    total = _fleet_total_row(ws)
    assert total == len(plan.fleet.deployments) + 2
    for i, d in enumerate(plan.fleet.deployments):
        r = i + 2
        assert ws[f"A{r}"].value == d.gpu
        name = f"price_{d.gpu.replace('-', '_')}"
        assert ws[f"H{r}"].value == f"={name}"
        assert _named_cell(wb, name).value == pytest.approx(d.price_usd_per_gpu_hour)
        assert ws[f"G{r}"].value.startswith(f"=F{r}*B{r}")  # replicas x tp (x pp x dp)
        assert ws[f"I{r}"].value == f"=G{r}*H{r}"  # GPUs x price
        assert ws[f"J{r}"].value == f"=I{r}*hours_per_month"
        assert ws[f"K{r}"].value == pytest.approx(d.cost_per_hour_usd)
        assert ws[f"P{r}"].value == pytest.approx(d.tpot_ms)
        assert ws[f"Q{r}"].value == pytest.approx(d.ttft_ms)
        assert ws[f"I{r}"].number_format == export.MONEY
    assert ws[f"I{total}"].value == f"=SUM(I2:I{total - 1})"
    assert _named_cell(wb, "hours_per_month").value == HOURS_PER_MONTH
    assert _named_cell(wb, "utilisation").value == pytest.approx(plan.utilisation)
    assert wb["Summary"][SUMMARY_CELLS["total_cost_per_hour_usd"]].value == f"='Fleet'!$I${total}"


def test_formulas_reproduce_the_plan(plan, written):
    got = read_back(written)
    fleet = plan.fleet
    assert close(got["total_cost_per_hour_usd"], fleet.total_cost_per_hour_usd)
    assert close(got["monthly_cost_usd"], fleet.monthly_cost_usd)
    assert close(got["cost_per_1k_output_tokens_usd"], fleet.cost_per_1k_output_tokens_usd)
    assert close(got["cost_per_1m_tokens_usd"], fleet.cost_per_1m_tokens_usd)
    assert close(got["total_gpus"], fleet.total_gpus)
    assert close(got["demand_requests_per_s"], plan.total_requests_per_s)
    assert close(got["utilisation"], plan.utilisation)
    for i, d in enumerate(fleet.deployments):
        assert close(got[f"Fleet!I{i + 2}"], d.cost_per_hour_usd)
    assert plan.single_gpu_best is not None
    single = plan.single_gpu_best.total_cost_per_hour_usd
    assert got["single_gpu_best_gpu"] == plan.single_gpu_best_gpu
    assert close(got["single_gpu_cost_per_hour_usd"], single)
    saving = (single - fleet.total_cost_per_hour_usd) * HOURS_PER_MONTH
    assert close(got["mix_saving_monthly_usd"], saving)
    assert close(got["mix_saving_fraction"], saving / (single * HOURS_PER_MONTH))
    api = plan.cheapest_api
    assert api is not None
    assert close(got["cheapest_api_monthly_cost_usd"], api.monthly_cost_usd)
    assert close(got["api_saving_monthly_usd"], api.monthly_cost_usd - fleet.monthly_cost_usd)
    for i, q in enumerate(plan.api_quotes):
        assert close(got[f"Build vs API!E{i + 3}"], q.cost_per_hour_usd)
        assert close(got[f"Build vs API!G{i + 3}"], q.cost_per_1k_output_tokens_usd)


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_planner_values_stand_beside_formulas(written):
    """Column C of Summary is the planner's number for every formula in column B."""
    got = read_back(written)
    ws = openpyxl.load_workbook(written)["Summary"]
    checked = 0
    for row in range(2, 24):
        formula, planner = ws[f"B{row}"].value, ws[f"C{row}"].value
        if isinstance(formula, str) and formula.startswith("=") and planner is not None:
            value = got[f"Summary!B{row}"]
            assert value == planner if isinstance(planner, str) else close(value, planner), row
            checked += 1
    assert checked >= 12
    assert got["Summary!B21"] == ws["C21"].value  # the cheapest API's name, live


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_editing_a_price_recomputes_costs(plan, written, tmp_path):
    wb = openpyxl.load_workbook(written)
    d = plan.fleet.deployments[0]
    _named_cell(wb, f"price_{d.gpu.replace('-', '_')}").value = d.price_usd_per_gpu_hour + 1.0
    _named_cell(wb, "hours_per_month").value = 720
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    got = read_back(edited)
    expect = plan.fleet.total_cost_per_hour_usd + d.replicas * d.tp * 1.0
    assert close(got["total_cost_per_hour_usd"], expect)
    assert close(got["monthly_cost_usd"], expect * 720)


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_candidates_table(plan, written):
    wb = openpyxl.load_workbook(written)
    ws = wb["Candidates"]
    shown = plan.sheet_candidates.to_pandas()
    n = len(shown)
    headers = [c.value for c in ws[1]]
    assert headers == [h for _, h, _ in export.CANDIDATE_COLUMNS]
    assert all(c.font.bold for c in ws[1])
    assert ws.freeze_panes == "A2"
    last = get_column_letter(len(export.CANDIDATE_COLUMNS))
    assert ws.auto_filter.ref == f"A1:{last}{n + 1}"
    assert ws.max_row == n + 1
    cols = {name: i + 1 for i, (name, _, _) in enumerate(export.CANDIDATE_COLUMNS)}
    for idx in (0, n // 2, n - 1):
        src = shown.iloc[idx]
        r = idx + 2
        for name in ("class", "gpu", "quant", "why_not", "bound"):
            assert ws.cell(row=r, column=cols[name]).value == (src[name] or None)
        for name in ("tp", "batch", "max_batch"):
            assert ws.cell(row=r, column=cols[name]).value == int(src[name])
        for name in ("fits", "sla_ok"):
            assert ws.cell(row=r, column=cols[name]).value is bool(src[name])
        for name in ("tpot_ms", "ttft_ms", "cost_per_hour_usd", "capacity_requests_per_s"):
            value = float(src[name])
            expect = value if math.isfinite(value) else None  # NaN/inf are empty cells
            assert ws.cell(row=r, column=cols[name]).value == expect
        assert ws.cell(row=r, column=cols["tpot_ms"]).number_format == export.MS
    priced = int(np.flatnonzero(shown["cost_per_hour_usd"].notna().to_numpy())[0])
    cost = ws.cell(row=priced + 2, column=cols["cost_per_hour_usd"])
    assert cost.number_format == export.MONEY
    assert cost.value == float(shown["cost_per_hour_usd"].iloc[priced])


def test_the_sheet_drops_only_batches_past_a_configurations_first_out_of_memory(plan):
    """Every row that fits stays, and per configuration the smallest batch that does not (it
    names the largest that fits); the larger ones only repeat it. By hand, with pandas."""
    every = plan.candidates
    shown = plan.sheet_candidates.to_pandas()
    config = ["class", "gpu", "tp", "pp", "ep", "dp_attention", "quant", "kv_dtype",
              "speculative", "spec_tokens", "role", "kv_link"]  # fmt: skip
    out = every[~every["fits"]]
    first = out.groupby(config, observed=True, dropna=False)["batch"].transform("min")
    want = every.drop(index=out.index[out["batch"] > first])
    assert len(out) > 0 and (out["batch"] > first).any(), "nothing to drop: checks nothing"
    assert len(shown) == len(want) == len(every) - int((out["batch"] > first).sum())
    for name in ("class", "gpu", "tp", "quant", "batch", "fits", "why_not"):
        assert shown[name].tolist() == want[name].tolist(), name
    assert shown["fits"].sum() == every["fits"].sum()


@pytest.mark.slow  # loads the whole Candidates sheet with openpyxl
def test_float32_physics_cells_are_shortest_decimals(plan, written):
    """A float32 column (physics detail) is written as the decimal that reads back as its
    float32, 21.504 and not 21.503999710083008, so finance sees the number the grid holds."""
    wb = openpyxl.load_workbook(written, read_only=True)
    ws = wb["Candidates"]
    narrow = [
        i
        for i, (name, _, _) in enumerate(export.CANDIDATE_COLUMNS)
        if name in plan.candidates and plan.candidates[name].dtype == np.float32
    ]
    assert narrow, "no float32 column on the Candidates sheet: the test checks nothing"
    checked = 0
    try:  # closed here: a read-only workbook left open warns in whichever test GC runs
        for row in ws.iter_rows(min_row=2, max_row=200, values_only=True):
            for i in narrow:
                if isinstance(row[i], float):
                    assert row[i] == float(str(np.float32(row[i])))
                    assert len(repr(row[i])) <= 16  # no float64 tail of a float32
                    checked += 1
    finally:
        wb.close()
    assert checked


def test_non_finite_numbers_are_empty_cells(plan, analysis, tmp_path):
    fit = plan.candidates[plan.candidates["fits"]]  # all three reach the sheet
    cands = fit.head(3).reset_index(drop=True)
    cands.loc[0, "tpot_ms"] = np.nan
    cands.loc[1, "ttft_ms"] = np.inf
    cands.loc[2, "why_not"] = "bad <xml> & \x07 text"
    fleet = plan.fleet
    odd = dataclasses.replace(
        fleet, deployments=(dataclasses.replace(fleet.deployments[0], ttft_ms=float("nan")),)
    )
    p = dataclasses.replace(plan, candidate_table=cands, fleet=odd)
    ws = openpyxl.load_workbook(write_workbook(p, tmp_path / "nan.xlsx", analysis))["Candidates"]
    cols = {name: i + 1 for i, (name, _, _) in enumerate(export.CANDIDATE_COLUMNS)}
    assert ws.cell(row=2, column=cols["tpot_ms"]).value is None
    assert ws.cell(row=3, column=cols["ttft_ms"]).value is None
    assert ws.cell(row=4, column=cols["why_not"]).value == "bad <xml> &  text"
    assert ws.cell(row=2, column=cols["ttft_ms"]).value == float(cands.loc[0, "ttft_ms"])
    fleet_ws = ws.parent["Fleet"]
    assert fleet_ws["Q2"].value is None


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_assumptions_are_shaded_with_a_legend(plan, written):
    ws = openpyxl.load_workbook(written)["Assumptions"]
    assert ws["A1"].fill.fgColor.rgb.endswith("FFF2CC")
    assert "assumption" in ws["B1"].value
    header = export.ASSUMPTIONS_HEADER_ROW
    assert [c.value for c in ws[header]][:8] == [
        "category", "item", "field", "value", "unit", "source", "as of", "assumption",
    ]  # fmt: skip
    assert ws.freeze_panes == f"A{header + 1}"
    rows = list(ws.iter_rows(min_row=header + 1))
    assert len(rows) >= len(plan.assumptions) + 1
    for row in rows:
        shaded = row[0].fill.fill_type == "solid"
        assert shaded == (row[7].value is True), [c.value for c in row]


@pytest.mark.slow  # writes, re-evaluates and reloads the two-class workbook
def test_two_classes(two_class_plan, tmp_path):
    p = two_class_plan
    path = write_workbook(p, tmp_path / "two.xlsx", BuildVsBuy([], None))
    got = read_back(path)
    assert close(got["total_cost_per_hour_usd"], p.fleet.total_cost_per_hour_usd)
    assert close(got["cost_per_1k_output_tokens_usd"], p.fleet.cost_per_1k_output_tokens_usd)
    assert close(got["cost_per_1m_tokens_usd"], p.fleet.cost_per_1m_tokens_usd)
    ws = openpyxl.load_workbook(path)["Summary"]
    assert [ws.cell(row=r, column=6).value for r in (2, 3)] == ["chat", "bulk"]
    fleet = ws.parent["Fleet"]
    for i, d in enumerate(p.fleet.deployments):
        served = [c for c in p.classes if d.load_by_class.get(c.name, 0) > 1e-9]
        if served:
            assert fleet[f"R{i + 2}"].value == min(c.tpot_ms for c in served)


@pytest.mark.slow  # writes and reads 20,000 candidate rows
def test_large_candidate_table_is_written_whole(plan, analysis, tmp_path):
    """20,000 candidate rows all reach the sheet, the chart keeps its cap; how fast they are
    written is benchmarks/workbook_speed.py's to measure."""
    fit = plan.candidates[plan.candidates["fits"]]  # no batch past one that does not fit
    reps = -(-20_000 // len(fit))
    big = pd.concat([fit] * reps, ignore_index=True).iloc[:20_000]
    p = dataclasses.replace(plan, candidate_table=big)
    path = write_workbook(p, tmp_path / "big.xlsx", analysis)
    wb = openpyxl.load_workbook(path, read_only=True)
    assert wb["Candidates"].max_row == 20_001  # the <dimension> element
    charted = wb["Charts"].max_row - export.CHART_TABLE_ROW - 1
    assert charted <= export.MAX_CHART_POINTS
    wb.close()
    with zipfile.ZipFile(path) as z:
        xml = z.read("xl/worksheets/sheet3.xml")
    assert xml.count(b"<row ") == 20_001
    assert b'<row r="20001"><c r="A20001" t="inlineStr">' in xml


def test_failed_write_leaves_target_untouched(plan, analysis, tmp_path, monkeypatch):
    target = tmp_path / "plan.xlsx"
    target.write_bytes(b"previous workbook")

    def boom(self):
        raise RuntimeError("disk on fire")

    # openpyxl's writer, mid-write (the workbook is saved through it into a stored archive)
    monkeypatch.setattr(openpyxl.writer.excel.ExcelWriter, "save", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_workbook(plan, target, analysis)
    assert target.read_bytes() == b"previous workbook"
    assert sorted(os.listdir(tmp_path)) == ["plan.xlsx"]


def test_unreplaceable_target_is_an_input_error(plan, analysis, tmp_path, monkeypatch):
    target = tmp_path / "plan.xlsx"
    target.write_bytes(b"previous workbook")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(export.os, "replace", refuse)
    with pytest.raises(InputError, match="plan.xlsx"):
        write_workbook(plan, target, analysis)
    assert target.read_bytes() == b"previous workbook"
    assert sorted(os.listdir(tmp_path)) == ["plan.xlsx"]


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_replaces_an_existing_workbook(plan, analysis, tmp_path):
    target = tmp_path / "plan.xlsx"
    target.write_bytes(b"previous workbook")
    target.chmod(0o640)
    write_workbook(plan, target, analysis)
    assert openpyxl.load_workbook(target).sheetnames[0] == "Summary"
    assert target.stat().st_mode & 0o777 == 0o640  # the replaced file's mode is kept
    assert sorted(os.listdir(tmp_path)) == ["plan.xlsx"]


def test_a_new_workbook_gets_normal_permissions(plan, analysis, tmp_path, umask_022):
    """0666 less the umask, as for any file; a replaced workbook keeps its mode (above)."""
    import stat

    target = write_workbook(plan, tmp_path / "plan.xlsx", analysis)
    assert stat.S_IMODE(target.stat().st_mode) == umask_022


def test_missing_folder_is_an_input_error(plan, tmp_path):
    target = tmp_path / "exports" / "x.xlsx"
    with pytest.raises(InputError, match=r"exports.x\.xlsx.*does not exist"):
        write_workbook(plan, target)
    assert not (tmp_path / "exports").exists()


def test_unwritable_folder_is_an_input_error(plan, tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(export.tempfile, "NamedTemporaryFile", refuse)
    with pytest.raises(InputError, match=r"plan\.xlsx.*not writable"):
        write_workbook(plan, tmp_path / "plan.xlsx")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores modes")
def test_read_only_folder_is_an_input_error(plan, analysis, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(InputError, match="not writable"):
            write_workbook(plan, folder / "plan.xlsx", analysis)
    finally:
        folder.chmod(0o700)


def test_wrong_extension_is_an_input_error(plan, tmp_path):
    with pytest.raises(InputError, match=r"\.xlsx"):
        write_workbook(plan, tmp_path / "plan.csv")


def test_minimal_hand_built_plan(tmp_path):
    """No candidates table, no assumptions, no API, no single-GPU plan, a timed-out solve."""
    from planner.planning.plan import Plan
    from planner.schema.plan import Deployment, FleetSummary, RequestClassPlan

    line = Deployment(
        gpu="h100-sxm", tp=2, quant="fp8", kv_dtype="fp8", batch=64, replicas=3, gpus=6,
        price_usd_per_gpu_hour=2.5, price_provider="X", cost_per_hour_usd=15.0,
        requests_per_s=4.0, capacity_requests_per_s=4.5, load_by_class={"a": 4.0},
        tpot_ms=30.0, ttft_ms=200.0, tpot_ms_by_class={"a": 30.0}, ttft_ms_by_class={"a": 200.0},
    )  # fmt: skip
    fleet = FleetSummary(
        status="time_limit", deployments=(line,), total_cost_per_hour_usd=15.0, total_gpus=6,
        cost_per_1k_output_tokens_usd=15.0 / (3600 * 4.0 * 100) * 1e3,
        cost_per_1m_tokens_usd=15.0 / (3600 * 4.0 * 300) * 1e6,
        lower_bound_per_hour_usd=14.0, gap=1 / 15, solve_seconds=1.0,
    )  # fmt: skip
    p = Plan(
        scenario_name="hand", model_id="m", engine="vllm",
        classes=(RequestClassPlan("a", 4.0, 200, 100, 50.0, None, "p95"),),
        utilisation=0.7, fleet=fleet, single_gpu_best=None, single_gpu_best_gpu=None,
        candidate_table=pd.DataFrame(), offered=pd.DataFrame(), api_quotes=(),
        assumption_rows=(),
    )  # fmt: skip
    path = write_workbook(p, tmp_path / "hand.xlsx")
    got = read_back(path)
    assert close(got["total_cost_per_hour_usd"], 15.0)
    assert close(got["cost_per_1k_output_tokens_usd"], fleet.cost_per_1k_output_tokens_usd)
    assert close(got["cost_per_1m_tokens_usd"], fleet.cost_per_1m_tokens_usd)
    assert close(got["utilisation"], 0.7)
    assert got["status"] == "time_limit (gap 6.7%)"
    assert got["single_gpu_monthly_cost_usd"] is None
    assert got["cheapest_api_monthly_cost_usd"] is None
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == list(BASE_SHEETS)  # nothing to chart, no plan over time
    assert wb["Candidates"].max_row == 1
    assert _named_cell(wb, "price_h100_sxm").value == 2.5
    assert _named_cell(wb, "utilisation").value == 0.7


# ---------------------------------------------------------------- break-even and charts


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_break_even_columns(plan, analysis, written):
    """The figures planning's compare() computed, written as they are."""
    ws = openpyxl.load_workbook(written)["Build vs API"]
    headers = [c.value for c in ws[1]]
    assert headers[11:13] == ["break-even peak req/s", "break-even tokens/month (in + out)"]
    by_quote = {c.quote: c for c in analysis.comparisons}
    assert ws["L2"].value is None and ws["M2"].value is None  # the self-hosted row
    for i, q in enumerate(plan.api_quotes):
        r = i + 3
        c = by_quote[q]
        assert ws[f"F{r}"].value == f"=E{r}*hours_per_month"  # no profile: peak = average
        for col, value in (
            ("L", c.break_even_peak_requests_per_s),
            ("M", c.break_even_tokens_per_month),
        ):
            if value is None:
                assert ws[f"{col}{r}"].value is None
            else:
                assert close(ws[f"{col}{r}"].value, value, 1e-9)
                assert ws[f"{col}{r}"].number_format in (export.RATE, export.COUNT)


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_a_failed_break_even_still_writes_the_workbook(plan, tmp_path, monkeypatch):
    from planner.errors import SolverError
    from planner.planning import breakeven as buildvsbuy

    def fail(*args, **kwargs):
        raise SolverError("the cbc solver failed: test")

    monkeypatch.setattr(buildvsbuy, "compare", fail)
    monkeypatch.setattr(buildvsbuy, "cost_curves", fail)
    path = write_workbook(plan, tmp_path / "p.xlsx", buildvsbuy.analyse(plan))
    ws = openpyxl.load_workbook(path)["Build vs API"]
    notes = [c.value for c in ws["B"] if isinstance(c.value, str)]
    assert any("break-even volumes not computed" in n for n in notes)
    assert all(ws[f"L{r}"].value is None for r in range(3, 3 + len(plan.api_quotes)))
    assert close(read_back(path)["total_cost_per_hour_usd"], plan.fleet.total_cost_per_hour_usd)


def _series_refs(chart) -> list[tuple[str, str, str]]:
    return [(s.tx.v, s.xVal.numRef.f, s.yVal.numRef.f) for s in chart.series]


def _table(ws, first: int, columns: str) -> list[list]:
    rows = []
    for r in range(first, ws.max_row + 1):
        values = [ws[f"{c}{r}"].value for c in columns]
        if all(v is None for v in values):
            break
        rows.append(values)
    return rows


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_frontier_chart_plots_sla_feasible_candidates(plan, written):
    wb = openpyxl.load_workbook(written)
    ws = wb["Charts"]
    first = export.CHART_TABLE_ROW + 2
    points = _table(ws, first, "ABCDEFG")
    cands = plan.candidates
    feasible = cands[
        cands["sla_ok"] & cands["tpot_ms"].notna() & cands["cost_per_1k_output_tokens_usd"].notna()
    ]
    assert 0 < len(points) == min(len(feasible), export.MAX_CHART_POINTS)
    known = {  # openpyxl writes 16 significant digits
        (g, tp, b, round(t, 9))
        for g, tp, b, t in zip(
            feasible["gpu"], feasible["tp"], feasible["batch"], feasible["tpot_ms"], strict=True
        )
    }
    assert all((p[1], p[2], p[4], round(p[5], 9)) in known for p in points)
    frontier = _table(ws, first, "IJK")
    tpots, costs = [f[1] for f in frontier], [f[2] for f in frontier]
    assert tpots == sorted(tpots) and all(a > b for a, b in zip(costs[:-1], costs[1:], strict=True))
    assert min(costs) == pytest.approx(feasible["cost_per_1k_output_tokens_usd"].min())
    scatter = ws._charts[0]
    refs = _series_refs(scatter)
    gpus = sorted({p[1] for p in points})
    assert [t for t, _, _ in refs] == [*gpus, "frontier"]
    for gpu, x, y in refs[:-1]:  # each GPU's series covers exactly its rows
        rows = [first + i for i, p in enumerate(points) if p[1] == gpu]

        def span(col: str, rows: list[int] = rows) -> str:
            """openpyxl writes a one-row series as one cell."""
            return f"'Charts'!${col}${rows[0]}" + (f":${col}${rows[-1]}" if len(rows) > 1 else "")

        assert x == span("F") and y == span("G")
        assert rows == list(range(rows[0], rows[-1] + 1))


@pytest.mark.slow  # loads the whole workbook of a 2,466-candidate plan with openpyxl
def test_break_even_chart_data(plan, analysis, written):
    ws = openpyxl.load_workbook(written)["Charts"]
    first = export.CHART_TABLE_ROW + 2
    volume, own, api = analysis.curves
    table = _table(ws, first, "MNO")
    assert len(table) == len(volume)
    for (v, o, a), row in zip(zip(volume, own, api, strict=True), table, strict=True):
        assert close(row[0], v) and close(row[2], a)
        assert row[1] is None if not math.isfinite(o) else close(row[1], o)
    point = 13 + 2 + len(analysis.api_curves) + 1  # after every API's column and a gap
    letter = openpyxl.utils.get_column_letter
    assert ws[f"{letter(point)}{first}"].value == pytest.approx(plan.total_requests_per_s)
    assert ws[f"{letter(point + 1)}{first}"].value == pytest.approx(plan.fleet.monthly_cost_usd)
    chart = ws._charts[1]
    titles = [t for t, _, _ in _series_refs(chart)]
    assert titles[0].startswith("self-hosted") and titles[-1] == "this plan"
    assert plan.cheapest_api.provider in titles[1]
    assert chart.title is not None
    assert chart.x_axis.scaling.logBase == 10


@pytest.mark.slow  # writes and reloads the two-class workbook again
def test_two_class_frontiers(two_class_plan, tmp_path):
    path = write_workbook(two_class_plan, tmp_path / "two.xlsx", BuildVsBuy([], None))
    wb = openpyxl.load_workbook(path)
    assert wb["Build vs API"]["L3"].value is None
    charts = wb["Charts"]._charts
    assert len(charts) == 1  # no cost curves given: no break-even chart
    titles = [t for t, _, _ in _series_refs(charts[0])]
    assert {"frontier chat", "frontier bulk"} <= set(titles)


# ---------------------------------------------------------------- plan over time


def _ident(gpu: str) -> str:
    return gpu.replace("-", "_")


@pytest.mark.slow  # the diurnal plan over time and its break-even analysis
def test_time_plan_sheets_in_order(time_written):
    wb = openpyxl.load_workbook(time_written)
    assert wb.sheetnames == list(SHEETS)
    assert wb["Monthly"].freeze_panes == "B2"
    assert wb["Periods"].freeze_panes == "C2"
    assert wb["Monthly"]["D1"].font.bold


@pytest.mark.slow  # the diurnal plan over time and its break-even analysis
def test_monthly_formulas_reproduce_the_plan(time_plan, time_written):
    ot = time_plan.over_time
    got = read_back(time_written)
    ws = openpyxl.load_workbook(time_written)["Monthly"]
    monthly = [dataclasses.asdict(m) for m in ot.monthly]
    columns = {
        "D": "reserved_usd",
        "E": "owned_usd",
        "F": "on_demand_usd",
        "G": "spot_usd",
        "H": "total_usd",
        "I": "cost_per_1k_output_tokens_usd",
        "B": "avg_requests_per_s",
        "C": "output_tokens",
    }
    for i, row in enumerate(monthly):
        r = i + 2
        assert ws[f"A{r}"].value == row["month"]
        for col, key in columns.items():
            value = ws[f"{col}{r}"].value
            assert isinstance(value, str) and value.startswith("="), (col, r, value)
            assert close(got.get(f"Monthly!{col}{r}", value), row[key]), (col, r)
        assert ws[f"J{r}"].value == pytest.approx(row["total_usd"])
        assert ws[f"F{r}"].number_format == export.MONEY
    assert ws["C3"].value == (
        "=SUMPRODUCT('Summary'!$G$2:$G$2,'Summary'!$I$2:$I$2,'Summary'!$M$2:$M$2)"
        "*3600*hours_per_month*(1+growth)^(A3-1)"
    )
    total = len(monthly) + 2
    assert ws[f"A{total}"].value == "Total"
    sol = ot.solution
    assert close(got[f"Monthly!H{total}"], sol.total_cost)
    assert close(got[f"Monthly!C{total}"], ot.output_tokens)
    assert close(got[f"Monthly!I{total}"], ot.cost_per_1k_output_tokens_usd)
    for col, tier in zip("DEFG", ("reserved", "owned", "on_demand", "spot"), strict=True):
        assert close(got[f"Monthly!{col}{total}"], sol.cost_by_tier[tier]), tier
    assert "all on-demand" in ws[f"A{total + 2}"].value
    assert ws[f"H{total + 2}"].value == pytest.approx(ot.all_on_demand.total_cost)
    assert close(got[f"Monthly!H{total + 3}"], ot.all_on_demand.total_cost - sol.total_cost)
    assert "all reserved" in ws[f"A{total + 4}"].value
    assert ws[f"H{total + 4}"].value == pytest.approx(ot.all_reserved_cost)
    assert close(got[f"Monthly!H{total + 5}"], ot.all_reserved_cost - sol.total_cost)
    notes = [c.value for c in ws["A"] if isinstance(c.value, str)]
    assert any("GPU counts are as planned (they cannot be live)" in n for n in notes)


def test_workbook_monthly_figures_equal_the_json(time_plan, time_written):
    """Every month's volume, tokens and cost in the workbook are the JSON plan's."""
    from planner.render.json import plan_dict

    months = plan_dict(time_plan)["over_time"]["monthly"]
    got = read_back(time_written)
    ws = openpyxl.load_workbook(time_written)["Monthly"]
    for i, month in enumerate(months):
        r = i + 2
        for col, key in (("B", "avg_requests_per_s"), ("C", "output_tokens"), ("H", "total_usd")):
            assert close(got.get(f"Monthly!{col}{r}", ws[f"{col}{r}"].value), month[key]), (r, key)
    assert close(got.get("Monthly!B2", ws["B2"].value), 17.0625)


@pytest.mark.slow  # the diurnal plan over time and its break-even analysis
def test_periods_sheet(time_plan, time_written):
    ot = time_plan.over_time
    got = read_back(time_written)
    ws = openpyxl.load_workbook(time_written)["Periods"]
    col = {c.value: c.column_letter for c in ws[1]}
    for i, period in enumerate(ot.periods):
        r = i + 2
        months = period.months
        label = f"{months[0]}-{months[-1]}" if len(months) > 1 else str(months[0])
        assert ws[f"B{r}"].value == label
        assert ws[f"C{r}"].value == months[0] and ws[f"D{r}"].value == len(months)
        assert ws[f"G{r}"].value == f"=F{r}*hours_per_month*D{r}"
        assert close(got[f"Periods!G{r}"], period.hours)
        assert close(got[f"Periods!{col['total $']}{r}"], period.cost_usd)
        assert ws[f"{col['planner $']}{r}"].value == pytest.approx(period.cost_usd)
        for g in ot.solution.gpu_types:
            for kind in ("reserved", "owned", "on-demand", "spot", "in-use"):
                count = getattr(period.gpus[g], kind.replace("-", "_"))
                assert ws[f"{col[f'{g} {kind}']}{r}"].value == count, (r, g, kind)


@pytest.mark.slow  # the diurnal plan over time and its break-even analysis
def test_tier_prices_growth_and_demand_factor_are_named(time_plan, time_written):
    wb = openpyxl.load_workbook(time_written)
    got = read_back(time_written)
    ot = time_plan.over_time
    tiers = set()
    for fact in ot.prices:
        tier = fact.plan_tier
        tiers.add(tier)
        name = f"price_{_ident(fact.gpu)}"
        if tier != "on_demand":
            name = f"price_{tier}_{_ident(fact.gpu)}"
        cell = _named_cell(wb, name)
        shaded = cell.parent.cell(row=cell.row, column=1).fill.fill_type == "solid"
        if fact.discount_vs_on_demand is not None:  # follows the on-demand price, live
            assert cell.value == f"=price_{_ident(fact.gpu)}*(1-reserved_discount)", name
            value = got[f"Assumptions!{cell.coordinate}"]
            assert value == pytest.approx(fact.usd_per_gpu_hour, rel=1e-12), name
            assert not shaded, name  # a formula, not an input
        else:
            assert cell.value == pytest.approx(fact.usd_per_gpu_hour, rel=1e-12), name
            assert shaded == fact.assumption, name
        assert cell.parent.cell(row=cell.row, column=9).value == name
    assert {"on_demand", "reserved", "spot"} <= tiers
    discount = _named_cell(wb, "reserved_discount")
    assert discount.value == 0.4
    assert discount.parent.cell(row=discount.row, column=1).fill.fill_type == "solid"
    for d in time_plan.fleet.deployments:  # the fleet's names still work
        assert _named_cell(wb, f"price_{_ident(d.gpu)}").value == d.price_usd_per_gpu_hour
    assert _named_cell(wb, "growth").value == 0.05  # exactly, as the scenario says
    factor = _named_cell(wb, "average_demand_factor")
    assert factor.value == pytest.approx(time_plan.average_demand_factor)
    assert factor.number_format == export.PERCENT
    assert "growth" in wb["Assumptions"]["B2"].value


@pytest.mark.slow  # the diurnal plan over time and its break-even analysis
def test_editing_tier_prices_and_growth_recomputes(time_plan, time_written, tmp_path):
    """An edited on-demand price and reserved discount move the reserved price; growth
    moves every month's tokens (month 1 included: all are live)."""
    ot = time_plan.over_time
    sol = ot.solution
    periods = ot.periods
    held = next(g for g, n in sol.reserved.items() if n)
    rented = next(g for g in sol.gpu_types if any(p.gpus[g].on_demand for p in periods))
    od = {f.gpu: f.usd_per_gpu_hour for f in ot.prices if f.tier == "on_demand"}
    wb = openpyxl.load_workbook(time_written)
    _named_cell(wb, f"price_{_ident(rented)}").value += 0.5
    _named_cell(wb, "reserved_discount").value = 0.3
    _named_cell(wb, "growth").value = 0.10
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    got = read_back(edited)
    new_od_held = od[held] + (0.5 if held == rented else 0.0)
    res_old = next(
        f.usd_per_gpu_hour for f in ot.prices if f.gpu == held and f.plan_tier == "reserved"
    )
    res_change = new_od_held * (1 - 0.3) - res_old
    tokens_1 = ot.monthly[0].output_tokens
    for i, month in enumerate(ot.monthly):
        r, m = i + 2, month.month
        block = [p for p in periods if m in p.months]
        od_hours = sum(p.gpus[rented].on_demand * p.hours for p in block) / len(block[0].months)
        expect = month.total_usd + sol.reserved[held] * res_change * HOURS_PER_MONTH
        expect += 0.5 * od_hours
        tokens = tokens_1 * 1.1 ** (m - 1)
        assert close(got[f"Monthly!H{r}"], expect), m
        assert close(got[f"Monthly!C{r}"], tokens), m
        assert close(got[f"Monthly!I{r}"], expect / tokens * 1e3), m
    fleet_gpus = sum(d.gpus for d in time_plan.fleet.deployments if d.gpu == rented)
    expect_h = time_plan.fleet.total_cost_per_hour_usd + 0.5 * fleet_gpus
    assert close(got["total_cost_per_hour_usd"], expect_h)


@pytest.mark.slow  # the diurnal plan over time and its break-even analysis
def test_build_vs_api_uses_the_average_demand(time_plan, time_analysis, time_written):
    got = read_back(time_written)
    ws = openpyxl.load_workbook(time_written)["Build vs API"]
    by_quote = {c.quote: c for c in time_analysis.comparisons}
    found = set()
    for i, q in enumerate(time_plan.api_quotes):
        r = i + 3
        c = by_quote[q]
        n = len(time_plan.over_time.monthly)
        assert ws[f"F{r}"].value == (
            f"=('Monthly'!$M${n + 2}*C{r}+'Monthly'!$C${n + 2}*D{r})/1000000/{n}"
        )
        assert close(got[f"Build vs API!F{r}"], c.api_monthly_usd)
        assert close(ws[f"H{r}"].value, c.api_monthly_usd)
        be = c.break_even_peak_requests_per_s
        found.add(be is None)
        assert ws[f"L{r}"].value == (pytest.approx(be) if be is not None else None)
    assert found == {True, False}  # both kinds of row are exercised
    cheapest = min(c.api_monthly_usd for c in by_quote.values())
    assert close(got["cheapest_api_monthly_cost_usd"], cheapest)
    own = time_plan.self_hosted_monthly_usd
    assert close(got["api_saving_monthly_usd"], cheapest - own)
    assert close(got["Build vs API!F2"], own)
    assert own == pytest.approx(time_plan.over_time.solution.total_cost / n)


@pytest.mark.slow  # the diurnal plan over time and its break-even analysis
def test_monthly_cost_chart(time_plan, time_written):
    ws = openpyxl.load_workbook(time_written)["Monthly"]
    (chart,) = ws._charts
    assert chart.grouping == "stacked" and chart.type == "col"
    n = len(time_plan.over_time.monthly)
    refs = [s.val.numRef.f for s in chart.series]
    assert refs == [f"'Monthly'!${c}$2:${c}${n + 1}" for c in "DEFG"]
    assert [s.tx.strRef.f for s in chart.series] == [f"'Monthly'!{c}1" for c in "DEFG"]


@pytest.mark.slow  # a 7-month plan over time
def test_owned_gpus_short_last_block_and_uneven_growth(catalog, tmp_path):
    """Owned tier prices are named and costed; a 7-month horizon ends in a 1-month block."""
    import yaml

    doc = yaml.safe_load((ROOT / "scenarios" / "diurnal-chatbot.yaml").read_text())
    doc["finance"].update(
        horizon_months=7,
        growth_per_month=0.0333,
        owned={"b200": {"purchase_usd_per_gpu": 30000}, "h100-sxm": {"purchase_usd_per_gpu": 2e4}},
    )
    p = make_plan(Scenario.model_validate(doc), catalog)
    ot = p.over_time
    assert sum(ot.solution.owned.values()) > 0  # the case this test is about
    path = write_workbook(p, tmp_path / "owned.xlsx", BuildVsBuy([], None))
    got = read_back(path)
    wb = openpyxl.load_workbook(path)
    for fact in (f for f in ot.prices if f.tier == "owned"):
        cell = _named_cell(wb, f"price_owned_{_ident(fact.gpu)}")
        assert cell.value == pytest.approx(fact.usd_per_gpu_hour)
        assert "finance.owned" in cell.parent.cell(row=cell.row, column=6).value
    assert "finance.owned" in wb["Assumptions"]["B2"].value
    assert _named_cell(wb, "growth").value == 0.0333
    assert wb["Periods"][f"B{len(ot.periods) + 1}"].value == "7"
    for i, month in enumerate(ot.monthly):
        r = i + 2
        assert close(got[f"Monthly!E{r}"], month.owned_usd)
        assert close(got[f"Monthly!H{r}"], month.total_usd)
        if r > 2:
            assert close(got[f"Monthly!C{r}"], month.output_tokens)
    total = len(ot.monthly) + 2
    assert close(got[f"Monthly!E{total}"], ot.solution.cost_by_tier["owned"])
    assert close(got[f"Monthly!H{total}"], ot.solution.total_cost)


def test_summary_shows_every_solve_and_never_calls_a_time_limited_one_optimal(time_plan, tmp_path):
    """The Summary's Solves table: the peak plan, the single-GPU plan, the plan over time and
    its all-on-demand comparison, each with its own status and gap."""
    from planner.render.json import plan_dict
    from planner.render.xlsx.names import SUMMARY_SOLVES_ROW

    ot = time_plan.over_time
    stopped = dataclasses.replace(
        ot.solution, status="time_limit", lower_bound=ot.solution.total_cost * 0.9
    )
    p = dataclasses.replace(time_plan, over_time=dataclasses.replace(ot, solution=stopped))
    path = write_workbook(p, tmp_path / "stopped.xlsx", BuildVsBuy([], None))
    ws = openpyxl.load_workbook(path)["Summary"]
    first = SUMMARY_SOLVES_ROW + 2
    rows = {
        ws[f"A{r}"].value: (ws[f"B{r}"].value, ws[f"C{r}"].value) for r in range(first, first + 4)
    }
    assert set(rows) == {
        "peak plan",
        "best single-GPU-type plan",
        "plan over time",
        "all on-demand",
    }
    assert rows["plan over time"][0] == "time_limit (gap 10.0%)"
    assert rows["plan over time"][1] == pytest.approx(0.1)
    assert rows["peak plan"][0] == time_plan.fleet.status
    solves = {s["name"]: s for s in plan_dict(p)["solves"]}
    assert solves["plan over time"]["status"] == "time_limit"
    assert solves["plan over time"]["gap"] == pytest.approx(0.1)


def test_every_sheet_has_print_setup_and_charts_start_a_page(time_written):
    """Landscape, one page wide, header rows repeated, a print area; a chart never split."""
    wb = openpyxl.load_workbook(time_written)
    for ws in wb.worksheets:
        assert ws.page_setup.orientation == "landscape", ws.title
        assert ws.page_setup.fitToWidth == 1 and ws.page_setup.fitToHeight == 0, ws.title
        assert ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        assert ws.print_area, ws.title
        if ws.title != "Charts":
            want = "$3:$3" if ws.title == "Assumptions" else "$1:$1"
            assert ws.print_title_rows == want, (ws.title, ws.print_title_rows)
        breaks = {b.id for b in ws.row_breaks.brk}
        for chart in ws._charts:
            top = chart.anchor._from.row + 1
            assert top <= 2 or top - 1 in breaks, (ws.title, top, breaks)
    last = get_column_letter(len(CANDIDATE_COLUMNS))  # U before the layout columns (Z now)
    assert wb["Candidates"].print_area.endswith(f"${last}${len(wb['Candidates']['A'])}")
    # the Charts sheet prints its charts, not the point tables below them (#13: mixed-traffic
    # printed 11 Charts pages, 9 of them chart data)
    charts = wb["Charts"]
    assert charts.max_row >= export.CHART_TABLE_ROW  # the tables are there ...
    assert int(charts.print_area.rsplit("$", 1)[1]) < export.CHART_TABLE_ROW  # ... but do not print


def test_per_token_costs_show_their_digits_beside_per_1m(time_written):
    wb = openpyxl.load_workbook(time_written)
    ws = wb["Monthly"]
    col = {c.value: c.column_letter for c in ws[1]}
    assert ws[f"{col['$ per 1K output tokens']}2"].number_format == '"$"#,##0.000000'
    assert (
        ws[f"{col['$ per 1M output tokens']}2"].value == f"={col['$ per 1K output tokens']}2*1000"
    )


def test_series_colours_never_repeat():
    from planner.render.colours import colour

    colours = [colour(k) for k in range(60)]
    assert len(set(colours)) == 60
    assert all(len(c) == 6 and int(c, 16) >= 0 for c in colours)


def test_break_even_chart_titles_say_whether_the_lines_cross():
    volume = np.array([1.0, 10.0, 100.0])
    own = np.array([100.0, 200.0, 300.0])
    never = BuildVsBuy([], (volume, own, own), api_curves={"a": volume * 0.5, "b": volume})
    assert never.crossing == ()
    assert "never cross" in never.chart_title and "every API is cheaper" in never.chart_title
    crossing = BuildVsBuy([], (volume, own, own), api_curves={"a": volume * 0.5, "b": volume * 20})
    assert crossing.crossing == ("b",)
    assert crossing.chart_title == "Build vs buy: where self-hosting becomes cheaper"


def test_break_even_chart_title_counts_apis_on_each_side_when_none_cross():
    """Self-hosting 100, 200, 300: one API at half the volume's $ stays below it, two at 20x
    +1000 stay above; before, 'not every API cheaper' read as 'self-hosting is cheaper'."""
    volume = np.array([1.0, 10.0, 100.0])
    own = np.array([100.0, 200.0, 300.0])
    above = volume * 20 + 1000
    mixed = BuildVsBuy(
        [], (volume, own, own), api_curves={"a": volume * 0.5, "b": above, "c": above + 1}
    )
    assert mixed.crossing == () and mixed.sides() == (1, 2)
    assert mixed.chart_title == (
        "Build vs buy: the lines never cross in this range: 1 API cheaper throughout, 2 dearer"
    )
    dearer = BuildVsBuy([], (volume, own, own), api_curves={"b": above})
    assert dearer.chart_title.endswith("(self-hosting is cheaper)")
    assert BuildVsBuy([], None).chart_title == "Build vs buy: the lines never cross in this range"


@pytest.mark.slow  # batch-job's break-even analysis and workbook
def test_batch_job_chart_title_in_the_workbook_and_html(catalog, tmp_path):
    """batch-job with its RTX 4090s at an assumed $0.40/GPU-hour (RunPod's $0.34 makes
    DeepInfra's $0.03/$0.05 line cross the fleet's steps): OpenRouter, Nebius and DeepInfra's
    two offerings lie below self-hosting at every volume drawn, the five others above; the
    workbook's and the HTML's title say so."""
    from planner.planning.report import plan_report
    from planner.render.xlsx.analysis import indexed

    sc, cat = load_scenario(str(ROOT / "scenarios" / "batch-job.yaml"), catalog)
    pricing = sc.hardware.pricing.model_copy(update={"usd_per_gpu_hour": {"rtx-4090": 0.40}})
    sc = sc.model_copy(update={"hardware": sc.hardware.model_copy(update={"pricing": pricing})})
    p = make_plan(sc, cat)
    found = analyse(p)
    want = "Build vs buy: the lines never cross in this range: 4 APIs cheaper throughout, 5 dearer"
    assert found.chart_title == want
    assert indexed(found).title == want
    chart = next(c for c in plan_report(p, found).charts if c.id == "breakeven")
    assert chart.title == want


def test_break_even_chart_shows_every_api(plan, analysis, written):
    ws = openpyxl.load_workbook(written)["Charts"]
    chart = ws._charts[-1]
    titles = [t for t, _, _ in _series_refs(chart)]
    apis = {f"API: {q.provider} {q.provider_model_id}" for q in plan.api_quotes}
    assert apis <= set(titles)


def test_streamed_cells_land_below_openpyxls_rows_with_their_formats(tmp_path):
    """Issue 16: the Charts tables are written as XML after openpyxl saves the sheet
    (`render/xlsx/stream.py`); read back, they are the values and formats put."""
    from planner.render.xlsx.stream import StreamedCells

    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "title"
    cells = StreamedCells(ws)
    cells.put_rows(
        3, 2, [(1.5, "a & b", None), (2, True, float("nan"))], [export.MONEY, None, None]
    )
    assert cells.widths == {2: 6, 3: 6}  # "$1.50"-ish width of 1.5, len("a & b") + 1
    buffer = io.BytesIO()
    wb.save(buffer)
    with (
        zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as zin,
        zipfile.ZipFile(tmp_path / "s.xlsx", "w") as zout,
    ):
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = cells.patch(data)
            zout.writestr(info.filename, data)
    back = openpyxl.load_workbook(tmp_path / "s.xlsx").active
    assert back.max_row == 4 and back.max_column == 3  # before reading D creates its cells
    assert back["A1"].value == "title"
    assert (back["B3"].value, back["C3"].value, back["D3"].value) == (1.5, "a & b", None)
    assert (back["B4"].value, back["C4"].value, back["D4"].value) == (2, True, None)
    assert back["B3"].number_format == export.MONEY
    ws["B3"] = "openpyxl's own row 3"  # streamed rows must lie below openpyxl's
    with pytest.raises(RuntimeError, match="overlap"):
        cells.patch(b"<worksheet><sheetData></sheetData></worksheet>")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_stream_escape_is_saxutils_escape(text):
    """The streamed sheets escape XML as xml.sax.saxutils.escape does (without importing it,
    issue 16)."""
    from xml.sax.saxutils import escape as sax_escape

    from planner.render.xlsx.stream import escape

    assert escape(text) == sax_escape(text)


_TEXT_COLUMNS = {
    "categorical": pd.Series(pd.Categorical(["a", None, "=SUM(A1)", "a", "b<c", "a"])),
    "string": pd.Series(["x & y", None, "", "x & y", "bad\x01char", "z"], dtype="str"),
    "object, 1 and True": pd.Series([1, True, "t", None, 1.5, True], dtype=object),
    "integers": pd.Series(np.array([3, 12, 3, 100, 7, 3], dtype=np.int16)),
    "booleans": pd.Series([True, False, True, True, False, True]),
}


@pytest.mark.parametrize("name", list(_TEXT_COLUMNS))
def test_candidate_text_cells_and_widths_are_each_rows_own(name):
    """Issue 16: text columns are written from their distinct values (by code) and widths
    measured on them; each cell is still what value_xml makes of that row's value (an object
    column holding 1 and True keeps them apart) and each width what astype(str) shows."""
    from planner.render.xlsx import candidates
    from planner.render.xlsx.stream import value_xml

    series = _TEXT_COLUMNS[name]
    column = Table.from_pandas(pd.DataFrame({"c": series})).stored("c")  # as the sheet gets it
    assert candidates._text_tails(column) == [value_xml(v) for v in series.tolist()]
    shown = candidates._distinct_shown(column)
    if shown:
        assert max(map(len, shown)) == int(series.astype(str).str.len().max())


def test_editing_the_cheapest_apis_price_moves_the_summary_to_the_next(written):
    """Summary B21 names the API of the least $/month live: price the cheapest row (row 3,
    sorted cheapest first) out of reach and the name follows B22 to the next one."""
    wb = openpyxl.load_workbook(written)
    api = wb["Build vs API"]
    second = f"{api['A4'].value} / {api['B4'].value}"
    api["C3"].value, api["D3"].value = 1000.0, 1000.0  # $ per 1M input / output
    edited = written.parent / "api-edited.xlsx"
    wb.save(edited)
    got = read_back(edited)
    assert got["Summary!B21"] == second != wb["Summary"]["C21"].value


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(
        st.sampled_from([0.0, -0.0, 1.5, 15.848037407035994, 1e-300, 7.1, math.inf, math.nan])
        | st.floats(allow_nan=True, allow_infinity=True),
        min_size=0,
        max_size=40,
    ),
    single=st.booleans(),
)
def test_candidate_float_texts_are_each_values_own_text(values, single):
    """The Candidates sheet formats each distinct bit pattern once: every row still gets its
    own value's text, float64's repr and float32's shortest decimal, -0.0 apart from 0.0."""
    from planner.render.xlsx.candidates import _float_texts

    dtype = np.float32 if single else np.float64
    with np.errstate(over="ignore"):
        arr = np.asarray(values, dtype=dtype)
    want = arr.astype(str).tolist() if single else [repr(v) for v in arr.tolist()]
    assert _float_texts(arr) == want
