"""The workbook in a real spreadsheet engine: LibreOffice recalculates every formula.

openpyxl writes formulas without values, so the other export tests check them with
`read_back`, the exporter's own evaluator. Here LibreOffice (headless) opens the workbook,
recalculates and saves it with cached values; every formula cell must then equal the
planner's figure and the Python evaluator's value, and editing a GPU price on the
Assumptions sheet must move the totals exactly as the planner predicts.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess
import tempfile
from pathlib import Path

import openpyxl
import pytest

from planner.inputs.catalog import load_catalog
from planner.inputs.scenarios import load_scenario
from planner.planning.pipeline import plan as make_plan
from planner.render.xlsx import CANDIDATES, read_back, write_workbook
from planner.units import HOURS_PER_MONTH

ROOT = Path(__file__).resolve().parent.parent
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
TIMEOUT_S = 120
REL = 1e-6  # LibreOffice stores 15 significant digits; the planner's figures are floats

pytestmark = [
    pytest.mark.skipif(
        SOFFICE is None,
        reason="LibreOffice is not installed (no soffice on PATH); .ci/run installs "
        "libreoffice-calc-nogui",
    ),
    pytest.mark.slow,  # LibreOffice starts twice: 20 s and more
]

# Recalculate on load even when a file carries cached values (LibreOffice's default for
# .xlsx is to trust them); openpyxl's files carry none, so this is belt and braces.
RECALC_ALWAYS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">
<prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""


def recalculate(workbook: Path, out_dir: Path) -> Path:
    """LibreOffice opens `workbook`, recalculates and saves it into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    profile = Path(tempfile.mkdtemp(prefix="lo-profile-"))  # a fresh profile: no locks
    try:
        (profile / "user").mkdir()
        (profile / "user" / "registrymodifications.xcu").write_text(RECALC_ALWAYS)
        cmd = [
            SOFFICE,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--calc",
            "--convert-to",
            "xlsx",
            "--outdir",
            str(out_dir),
            str(workbook),
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    out = out_dir / workbook.name
    assert res.returncode == 0 and out.exists(), f"soffice failed: {res.stdout}{res.stderr}"
    return out


def close(a, b, rel: float = REL) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-9)


def formula_cells(path: Path) -> dict[str, str]:
    """Every formula the exporter wrote, as "Sheet!A1" -> formula."""
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return {
            f"{ws.title}!{c.coordinate}": c.value
            for ws in wb.worksheets
            if ws.title != CANDIDATES
            for row in ws.iter_rows()
            for c in row
            if isinstance(c.value, str) and c.value.startswith("=")
        }
    finally:
        wb.close()


def values(path: Path, keys) -> dict[str, object]:
    wb = openpyxl.load_workbook(path, data_only=True)
    out = {}
    for key in keys:
        sheet, coord = key.rsplit("!", 1)
        out[key] = wb[sheet][coord].value
    return out


def named_cell(wb: openpyxl.Workbook, name: str):
    sheet, coord = wb.defined_names[name].attr_text.split("!")
    return wb[sheet.strip("'")][coord.replace("$", "")]


def fleet_total_row(ws) -> int:
    return next(r for r in range(2, ws.max_row + 1) if ws.cell(row=r, column=1).value == "Total")


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def plan():
    sc, cat = load_scenario(str(ROOT / "scenarios" / "diurnal-chatbot.yaml"), load_catalog())
    p = make_plan(sc, cat)
    assert p.over_time is not None
    return p


@pytest.fixture(scope="module")
def comparisons(plan):
    from planner.planning.breakeven import compare

    return {c.quote: c for c in compare(plan)}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("recalc")


@pytest.fixture(scope="module")
def written(plan, folder):
    """As `planner solve` writes it, with the break-even analysis."""
    from planner.planning.breakeven import analyse

    return write_workbook(plan, folder / "diurnal.xlsx", analyse(plan))


@pytest.fixture(scope="module")
def formulas(written):
    return formula_cells(written)


@pytest.fixture(scope="module")
def recalculated(written, folder, formulas):
    return values(recalculate(written, folder / "lo"), formulas)


@pytest.fixture(scope="module")
def edit(plan):
    """A fleet GPU's on-demand price x1.5 (one the plan over time also rents, if any)."""
    ot = plan.over_time
    fleet_gpus = [d.gpu for d in plan.fleet.deployments]
    rented = [g for g in fleet_gpus if any(g in p.gpus and p.gpus[g].on_demand for p in ot.periods)]
    gpu = (rented or fleet_gpus)[0]
    old = next(d.price_usd_per_gpu_hour for d in plan.fleet.deployments if d.gpu == gpu)
    return gpu, old, old * 1.5


@pytest.fixture(scope="module")
def edited(written, folder, formulas, edit):
    gpu, _, new = edit
    wb = openpyxl.load_workbook(written)
    named_cell(wb, f"price_{gpu.replace('-', '_')}").value = new
    path = folder / "edited" / "diurnal.xlsx"
    path.parent.mkdir()
    wb.save(path)
    return values(recalculate(path, folder / "edited-lo"), formulas)


# ---------------------------------------------------------------- tests


def test_every_formula_agrees_with_the_python_evaluator(formulas, recalculated, written):
    """LibreOffice and read_back compute the same value for every formula cell."""
    ours = read_back(written)
    assert len(formulas) > 200
    worst, mismatched = 0.0, []
    for key in formulas:
        lo, py = recalculated[key], ours[key]
        assert not (isinstance(lo, str) and lo.startswith(("#", "Err:"))), (key, lo)
        if py is None:
            assert lo in (None, ""), (key, lo)
            continue
        assert isinstance(lo, int | float), (key, formulas[key], lo)
        diff = abs(lo - py) / max(abs(py), 1e-12) if py else abs(lo)
        worst = max(worst, diff)
        if diff > 1e-9:
            mismatched.append((key, formulas[key], lo, py))
    print(f"\n{len(formulas)} formula cells recalculated by LibreOffice; max rel diff {worst:.2e}")
    assert not mismatched, mismatched[:10]


def test_recalculated_totals_are_the_planners(plan, comparisons, recalculated, written):
    wb = openpyxl.load_workbook(written)
    fleet_ws = wb["Fleet"]
    total = fleet_total_row(fleet_ws)
    fleet = plan.fleet
    assert close(recalculated[f"Fleet!I{total}"], fleet.total_cost_per_hour_usd)
    assert close(recalculated[f"Fleet!J{total}"], fleet.monthly_cost_usd)
    assert close(recalculated[f"Fleet!G{total}"], fleet.total_gpus)
    for i, d in enumerate(fleet.deployments):
        assert close(recalculated[f"Fleet!I{i + 2}"], d.cost_per_hour_usd)
    # Summary: every formula in column B against the planner's number in column C
    summary = wb["Summary"]
    checked = 0
    for row in range(2, 24):
        key, planner = f"Summary!B{row}", summary[f"C{row}"].value
        if key in recalculated and planner is not None:
            assert close(recalculated[key], planner), (row, recalculated[key], planner)
            checked += 1
    assert checked >= 14
    # Monthly: every month's tiers, total and $ per 1K output tokens; the horizon total
    ot = plan.over_time
    cols = zip(
        "BCDEFGHI",
        (
            "avg_requests_per_s",
            "output_tokens",
            "reserved_usd",
            "owned_usd",
            "on_demand_usd",
            "spot_usd",
            "total_usd",
            "cost_per_1k_output_tokens_usd",
        ),
        strict=True,
    )
    monthly = [dataclasses.asdict(m) for m in ot.monthly]
    for col, field in cols:
        for i, row in enumerate(monthly):
            key = f"Monthly!{col}{i + 2}"
            if key in recalculated:  # month 1's demand and tokens are numbers
                assert close(recalculated[key], row[field]), (key, field)
    last = len(monthly) + 2
    assert close(recalculated[f"Monthly!H{last}"], ot.solution.total_cost)
    assert close(recalculated[f"Monthly!I{last}"], ot.cost_per_1k_output_tokens_usd)
    # Periods: each period's cost
    periods = wb["Periods"]
    total_col = next(c.column_letter for c in periods[1] if c.value == "total $")
    for i, period in enumerate(ot.periods):
        assert close(recalculated[f"Periods!{total_col}{i + 2}"], period.cost_usd)
    # Build vs API: the API bill at the average demand, as buildvsbuy.compare has it
    for i, q in enumerate(plan.api_quotes):
        assert close(recalculated[f"Build vs API!F{i + 3}"], comparisons[q].api_monthly_usd)


def test_editing_a_gpu_price_moves_the_totals_as_planned(plan, recalculated, edited, edit, written):
    gpu, old, new = edit
    delta = new - old
    fleet = plan.fleet
    wb = openpyxl.load_workbook(written)
    total = fleet_total_row(wb["Fleet"])
    gpus = sum(d.gpus for d in fleet.deployments if d.gpu == gpu)
    assert gpus > 0
    expect_h = fleet.total_cost_per_hour_usd + delta * gpus
    assert close(edited[f"Fleet!I{total}"], expect_h)
    assert close(edited[f"Fleet!J{total}"], expect_h * HOURS_PER_MONTH)
    assert close(edited["Summary!B11"], expect_h)
    for i, d in enumerate(fleet.deployments):
        moved = d.cost_per_hour_usd + (delta * d.gpus if d.gpu == gpu else 0.0)
        assert close(edited[f"Fleet!I{i + 2}"], moved)
    # Monthly: on-demand $ moves by the price change x that GPU's on-demand GPU-hours of the
    # month's block, split over the block's months; reserved, owned and spot do not move
    ot = plan.over_time
    periods = ot.periods
    moved_months = 0
    for i, month in enumerate(ot.monthly):
        r, m = i + 2, month.month
        block = [p for p in periods if m in p.months]
        gpu_hours = sum(p.gpus[gpu].on_demand * p.hours for p in block if gpu in p.gpus)
        change = delta * gpu_hours / len(block[0].months)
        moved_months += change > 0
        assert close(edited[f"Monthly!F{r}"], month.on_demand_usd + change), m
        assert close(edited[f"Monthly!H{r}"], month.total_usd + change), m
        for col, field in zip("DEG", ("reserved_usd", "owned_usd", "spot_usd"), strict=True):
            assert close(edited[f"Monthly!{col}{r}"], getattr(month, field)), (m, col)
    print(
        f"\n{gpu} ${old:g} -> ${new:g}/GPU-h: Fleet ${fleet.total_cost_per_hour_usd:,.2f}/h -> "
        f"${edited[f'Fleet!I{total}']:,.2f}/h; {moved_months} months' on-demand $ moved"
    )
    assert moved_months > 0 or not any(gpu in p.gpus and p.gpus[gpu].on_demand for p in periods)
    for i in range(len(plan.api_quotes)):  # API bills do not depend on GPU prices
        for col in "EFG":
            key = f"Build vs API!{col}{i + 3}"
            assert close(edited[key], recalculated[key]), key
