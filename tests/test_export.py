"""The Excel export: sheets, live formulas that reproduce the plan, speed, atomic writes."""

from __future__ import annotations

import dataclasses
import math
import os
import time
import zipfile

import numpy as np
import openpyxl
import pandas as pd
import pytest

from planner import export
from planner.catalog import load_catalog
from planner.errors import InputError
from planner.export import SHEETS, SUMMARY_CELLS, read_back, write_workbook
from planner.pipeline import plan as make_plan
from planner.schema.scenario import Scenario
from planner.units import HOURS_PER_MONTH


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
def written(plan, tmp_path_factory):
    return write_workbook(plan, tmp_path_factory.mktemp("x") / "plan.xlsx")


def _named_cell(wb: openpyxl.Workbook, name: str):
    sheet, coord = wb.defined_names[name].attr_text.split("!")
    return wb[sheet.strip("'")][coord.replace("$", "")]


def _fleet_total_row(ws) -> int:
    return next(r for r in range(2, ws.max_row + 1) if ws.cell(row=r, column=1).value == "Total")


def test_sheets_in_order(written):
    wb = openpyxl.load_workbook(written)
    assert tuple(wb.sheetnames) == SHEETS
    assert SHEETS == ("Summary", "Fleet", "Candidates", "Build vs API", "Assumptions")
    for name in SHEETS:
        assert wb[name].freeze_panes is not None, name
        assert wb[name]["A1"].value is not None


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
        assert ws[f"I{r}"].value == f"=F{r}*B{r}*H{r}"
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


def test_planner_values_stand_beside_formulas(written):
    """Column C of Summary is the planner's number for every formula in column B."""
    got = read_back(written)
    ws = openpyxl.load_workbook(written)["Summary"]
    checked = 0
    for row in range(2, 24):
        formula, planner = ws[f"B{row}"].value, ws[f"C{row}"].value
        if isinstance(formula, str) and formula.startswith("=") and planner is not None:
            assert close(got[f"Summary!B{row}"], planner), row
            checked += 1
    assert checked >= 12


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


def test_candidates_table(plan, written):
    wb = openpyxl.load_workbook(written)
    ws = wb["Candidates"]
    n = len(plan.candidates)
    headers = [c.value for c in ws[1]]
    assert headers == [h for _, h, _ in export.CANDIDATE_COLUMNS]
    assert all(c.font.bold for c in ws[1])
    assert ws.freeze_panes == "A2"
    assert ws.auto_filter.ref == f"A1:U{n + 1}"
    assert ws.max_row == n + 1
    cols = {name: i + 1 for i, (name, _, _) in enumerate(export.CANDIDATE_COLUMNS)}
    for idx in (0, n // 2, n - 1):
        src = plan.candidates.iloc[idx]
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
    priced = int(np.flatnonzero(plan.candidates["cost_per_hour_usd"].notna().to_numpy())[0])
    cost = ws.cell(row=priced + 2, column=cols["cost_per_hour_usd"])
    assert cost.number_format == export.MONEY
    assert cost.value == float(plan.candidates["cost_per_hour_usd"].iloc[priced])


def test_non_finite_numbers_are_empty_cells(plan, tmp_path):
    cands = plan.candidates.head(3).copy()
    cands.loc[0, "tpot_ms"] = np.nan
    cands.loc[1, "ttft_ms"] = np.inf
    cands.loc[2, "why_not"] = "bad <xml> & \x07 text"
    fleet = plan.fleet
    odd = dataclasses.replace(
        fleet, deployments=(dataclasses.replace(fleet.deployments[0], ttft_ms=float("nan")),)
    )
    p = dataclasses.replace(plan, candidates=cands, fleet=odd)
    ws = openpyxl.load_workbook(write_workbook(p, tmp_path / "nan.xlsx"))["Candidates"]
    cols = {name: i + 1 for i, (name, _, _) in enumerate(export.CANDIDATE_COLUMNS)}
    assert ws.cell(row=2, column=cols["tpot_ms"]).value is None
    assert ws.cell(row=3, column=cols["ttft_ms"]).value is None
    assert ws.cell(row=4, column=cols["why_not"]).value == "bad <xml> &  text"
    assert ws.cell(row=2, column=cols["ttft_ms"]).value == float(cands.loc[0, "ttft_ms"])
    fleet_ws = ws.parent["Fleet"]
    assert fleet_ws["Q2"].value is None


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


def test_two_classes(two_class_plan, tmp_path):
    p = two_class_plan
    path = write_workbook(p, tmp_path / "two.xlsx")
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


def test_large_candidate_table_is_fast(plan, tmp_path):
    reps = -(-20_000 // len(plan.candidates))
    big = pd.concat([plan.candidates] * reps, ignore_index=True).iloc[:20_000]
    p = dataclasses.replace(plan, candidates=big)
    start = time.perf_counter()
    path = write_workbook(p, tmp_path / "big.xlsx")
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"{elapsed:.2f} s for 20,000 candidate rows"
    wb = openpyxl.load_workbook(path, read_only=True)
    assert wb["Candidates"].max_row == 20_001  # the <dimension> element
    wb.close()
    with zipfile.ZipFile(path) as z:
        xml = z.read("xl/worksheets/sheet3.xml")
    assert xml.count(b"<row ") == 20_001
    assert b'<row r="20001"><c r="A20001" t="inlineStr">' in xml


def test_failed_write_leaves_target_untouched(plan, tmp_path, monkeypatch):
    target = tmp_path / "plan.xlsx"
    target.write_bytes(b"previous workbook")

    def boom(self, filename):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(openpyxl.Workbook, "save", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_workbook(plan, target)
    assert target.read_bytes() == b"previous workbook"
    assert sorted(os.listdir(tmp_path)) == ["plan.xlsx"]


def test_unreplaceable_target_is_an_input_error(plan, tmp_path, monkeypatch):
    target = tmp_path / "plan.xlsx"
    target.write_bytes(b"previous workbook")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(export.os, "replace", refuse)
    with pytest.raises(InputError, match="plan.xlsx"):
        write_workbook(plan, target)
    assert target.read_bytes() == b"previous workbook"
    assert sorted(os.listdir(tmp_path)) == ["plan.xlsx"]


def test_replaces_an_existing_workbook(plan, tmp_path):
    target = tmp_path / "plan.xlsx"
    target.write_bytes(b"previous workbook")
    write_workbook(plan, target)
    assert openpyxl.load_workbook(target).sheetnames == list(SHEETS)
    assert sorted(os.listdir(tmp_path)) == ["plan.xlsx"]


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
def test_read_only_folder_is_an_input_error(plan, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(InputError, match="not writable"):
            write_workbook(plan, folder / "plan.xlsx")
    finally:
        folder.chmod(0o700)


def test_wrong_extension_is_an_input_error(plan, tmp_path):
    with pytest.raises(InputError, match=r"\.xlsx"):
        write_workbook(plan, tmp_path / "plan.csv")


def test_minimal_hand_built_plan(tmp_path):
    """No candidates table, no assumptions, no API, no single-GPU plan, a timed-out solve."""
    from planner.schema.plan import Deployment, FleetSummary, Plan, RequestClassPlan

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
        candidates=pd.DataFrame(), offered=pd.DataFrame(), api_quotes=(),
        assumptions=pd.DataFrame(),
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
    assert wb.sheetnames == list(SHEETS)
    assert wb["Candidates"].max_row == 1
    assert _named_cell(wb, "price_h100_sxm").value == 2.5
    assert _named_cell(wb, "utilisation").value == 0.7
