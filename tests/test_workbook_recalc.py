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
        if isinstance(py, str):  # the capacity checks: "ok" or the flag
            assert lo == py, (key, formulas[key], lo, py)
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
            value = recalculated[key]
            same = value == planner if isinstance(planner, str) else close(value, planner)
            assert same, (row, value, planner)
            checked += 1
    assert checked >= 14
    assert recalculated["Summary!B21"] == summary["C21"].value  # LibreOffice's INDEX/MATCH
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
    discount = next(
        (f.discount_vs_on_demand for f in ot.prices if f.gpu == gpu and f.discount_vs_on_demand),
        1.0,
    )
    for i, month in enumerate(ot.monthly):
        r, m = i + 2, month.month
        block = [p for p in periods if m in p.months]
        gpu_hours = sum(p.gpus[gpu].on_demand * p.hours for p in block if gpu in p.gpus)
        change = delta * gpu_hours / len(block[0].months)
        moved_months += change > 0
        assert close(edited[f"Monthly!F{r}"], month.on_demand_usd + change), m
        # a reserved price derived from the discount follows the on-demand price
        reserved = (
            month.reserved_usd
            + ot.solution.reserved.get(gpu, 0) * delta * (1 - discount) * HOURS_PER_MONTH
        )
        assert close(edited[f"Monthly!D{r}"], reserved), m
        assert close(
            edited[f"Monthly!H{r}"], month.total_usd + change + reserved - month.reserved_usd
        ), m
        for col, field in zip("EG", ("owned_usd", "spot_usd"), strict=True):
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


# ---------------------------------------------------------------- every shaded input flows


FLOW_EDITS = {
    "demand_all": 33.0,  # req/s, from 30
    "output_tokens_all": 300,  # from 256
    "growth": 0.10,  # from 0.05: month 12 needs more than the fleet planned for it
    "reserved_discount": 0.30,  # from 0.40
    "utilisation": 0.90,  # from 0.80
}


@pytest.fixture(scope="module")
def flowed(plan, written, folder, formulas, edit):
    """Demand, output tokens, growth, an on-demand price, the reserved discount and the
    utilisation edited with openpyxl, then recalculated by LibreOffice."""
    gpu, _, new = edit
    wb = openpyxl.load_workbook(written)
    for name, value in FLOW_EDITS.items():
        named_cell(wb, name).value = value
    named_cell(wb, f"price_{gpu.replace('-', '_')}").value = new
    path = folder / "flowed" / "diurnal.xlsx"
    path.parent.mkdir()
    wb.save(path)
    return values(recalculate(path, folder / "flowed-lo"), formulas)


def test_every_shaded_input_drives_its_figures_in_libreoffice(plan, flowed, edit, written):
    """LibreOffice proves the flows: demand and tokens move tokens/s, $ per 1K, the months'
    volumes and the API bills; growth moves the months; the discount and an on-demand price
    move the reserved price; utilisation moves capacity; the capacity check flags months
    whose peak exceeds the fleet planned for them."""
    gpu, old, new = edit
    ot = plan.over_time
    rps, out_len, growth, util = 33.0, 300, 0.10, 0.90
    in_len = plan.classes[0].input_tokens
    mean = plan.average_demand_factor
    assert close(flowed["Summary!B8"], rps)
    assert close(flowed["Summary!B10"], rps * out_len)
    assert close(flowed["Summary!B13"], flowed["Summary!B11"] / (3600 * rps * out_len) * 1e3)
    assert close(flowed["Summary!B24"], plan.capacity_requests_per_s * util / plan.utilisation)
    seconds = HOURS_PER_MONTH * 3600
    flagged = []
    busiest = {m: p.capacity_requests_per_s for p in ot.periods if p.slot == 1 for m in p.months}
    for i, month in enumerate(ot.monthly):
        r, m = i + 2, month.month
        grow = (1 + growth) ** (m - 1)
        assert close(flowed[f"Monthly!B{r}"], rps * mean * grow), m
        assert close(flowed[f"Monthly!C{r}"], rps * mean * out_len * seconds * grow), m
        assert close(flowed[f"Monthly!M{r}"], rps * mean * in_len * seconds * grow), m
        assert close(flowed[f"Monthly!L{r}"], rps * grow), m
        capacity = busiest[m] * util / plan.utilisation
        assert close(flowed[f"Monthly!N{r}"], capacity), m
        over = rps * grow > capacity
        assert (flowed[f"Monthly!O{r}"] != "ok") == over, (m, flowed[f"Monthly!O{r}"])
        flagged += [m] * over
    assert flagged and 1 not in flagged, flagged
    total = len(ot.monthly) + 2
    assert flowed[f"Monthly!O{total}"] != "ok"
    # the reserved price follows the edited on-demand price and discount
    wb = openpyxl.load_workbook(written)
    for fact in (f for f in ot.prices if f.discount_vs_on_demand is not None):
        cell = named_cell(wb, f"price_reserved_{fact.gpu.replace('-', '_')}")
        od = next(
            p.usd_per_gpu_hour for p in ot.prices if p.gpu == fact.gpu and p.tier == "on_demand"
        )
        od = new if fact.gpu == gpu else od
        assert close(flowed[f"Assumptions!{cell.coordinate}"], od * (1 - 0.30)), fact.gpu
    # the API bills: the horizon's tokens at the new demand and output length
    tokens_in = sum(rps * mean * in_len * seconds * (1 + growth) ** k for k in range(12))
    tokens_out = sum(rps * mean * out_len * seconds * (1 + growth) ** k for k in range(12))
    for i, q in enumerate(plan.api_quotes):
        bill = (tokens_in * q.input_usd_per_1m + tokens_out * q.output_usd_per_1m) / 1e6 / 12
        assert close(flowed[f"Build vs API!F{i + 3}"], bill), q.provider
    print(f"\nmonths flagged over capacity at 10%/month growth and 33 req/s: {flagged}")
