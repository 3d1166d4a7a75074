"""Excel export: a Plan as a workbook a finance team can use as it is.

`write_workbook(plan, path)` writes these sheets, in this order (`SHEETS`): Summary, Fleet,
Monthly and Periods (only when `plan.over_time` is set), Candidates, Build vs API, Charts
(when there is anything to chart), Assumptions. `BASE_SHEETS` are always there.

Summary
    Column A the item, B the value (a live formula wherever the figure can be
    recomputed), C the planner's own figure as a plain number, D the unit. Rows are fixed
    (`SUMMARY_CELLS` maps a key to its B cell):

    ==  ===============================  ==================================================
    B2  scenario name                    text
    B3  model                            text
    B4  engine                           text
    B5  status                           text; "status (gap x%)" when not optimal
    B6  optimality gap                   number (fraction), lower bound in D6
    B7  target utilisation               =utilisation
    B8  total demand, req/s              =SUM of the class table's req/s (G2:G..)
    B9  input tokens/s                   =SUMPRODUCT(req/s, input tokens)
    B10 output tokens/s                  =SUMPRODUCT(req/s, output tokens)
    B11 total $/h                        =Fleet total $/h cell
    B12 total $/month                    =Fleet total $/month cell
    B13 $ per 1K output tokens           =B11/(3600*B10)*1000
    B14 $ per 1M tokens (in + out)       =B11/(3600*(B9+B10))*1000000
    B15 total GPUs                       =Fleet total GPUs cell
    B16 best single-GPU-type plan: GPU   text (blank if no single type can serve)
    B17 its $/h                          =<its GPU count>*price_<gpu>
    B18 its $/month                      =B17*hours_per_month
    B19 saving of the mix, $/month       =B18-B12
    B20 saving of the mix, %             =B19/B18
    B21 cheapest API (at planner prices) text "provider / model id"
    B22 cheapest API, $/month            =MIN('Build vs API' API $/month column) (at
                                         the average demand with a plan over time)
    B23 self-host saving vs API, $/month =B22-B12
    A25 "Notes", then one planner note per row from A26 (text in B)
    ==  ===============================  ==================================================

    The per-class table sits at F1:L(1+n): name, req/s, input tokens, output tokens,
    SLA TPOT ms, SLA TTFT ms, statistic.

Fleet
    Row 1 header, one row per deployment from row 2, then a "Total" row (row n+2).
    Columns (`FLEET_COLUMNS`): A GPU, B TP, C quant, D KV dtype, E batch, F replicas,
    G GPUs (=F*B), H $/GPU-h (=price_<gpu>, a defined name on the Assumptions sheet),
    I $/h (=F*B*H), J $/month (=I*hours_per_month), K planner $/h (number), L requests/s,
    M capacity req/s at planned utilisation, N load share (=L/L_total), O capacity used
    (=L/M), P TPOT ms and Q TTFT ms (predicted, worst served class), R SLA TPOT ms and
    S SLA TTFT ms (tightest served class), T per-class detail, U price provider.
    The Total row sums F, G, I, J, K, L, M, N.

Monthly (plan over time)
    Row 1 header, one row per month from row 2 (`MONTHLY_COLUMNS`): A month, B avg req/s,
    C output tokens (row 2 the planner's numbers; later rows =$B$2*(1+growth)^(A-1) and
    =$C$2*(1+growth)^(A-1)), D reserved $ and E owned $
    (=SUMPRODUCT(held GPUs, held $/GPU-h)*hours_per_month over the held table below),
    F on-demand $ and G spot $ (=SUM of the month's block on Periods / months in block),
    H total $ (=SUM(D:G)), I $ per 1K output tokens (=H/C*1000), J planner total $ and
    K planner $ per 1K (numbers). Row n+2 "Total": C..H summed, I =H/C*1000, J, K.
    Rows n+4..n+7: all on-demand and all reserved for the busiest period's peak as
    horizon totals in H (planner numbers at the planner's prices), each followed by the
    saving of this plan (=that - H<total>, % in I, planner figure in J). Row n+9 the
    "held for the whole horizon" title, row n+10 its header, then one row per GPU type:
    A GPU, B reserved GPUs, C =price_reserved_<gpu>, D owned GPUs, E =price_owned_<gpu>.
    Notes below (GPU counts stay as planned when growth is edited), a stacked column
    chart of D:G by month at M2; frozen at B2.

Periods (plan over time)
    Row 1 header, one row per (block of months, demand slot) of `TimePlan.periods`:
    A period, B months ("4-6"), C first month, D months in block, E slot, F share of the
    hours, G hours (=F*hours_per_month*D), then demand per class req/s, then per GPU type
    its reserved, owned, on-demand, spot and in-use GPUs, then reserved $, owned $,
    on-demand $, spot $ (each =(GPUs x named tier price summed over GPU types)*G), total $
    (=SUM of the four) and planner $ (number). Frozen at C2.

Candidates
    Row 1 header, one row per `plan.candidates` row (`CANDIDATE_COLUMNS`), autofilter over
    the whole table, header frozen. NaN/inf cells are left empty.

Build vs API
    Row 1 header; row 2 the self-hosted fleet (formulas to the Fleet totals); from row 3
    one row per API quote: A provider, B model id, C $/1M input, D $/1M output,
    E $/h (=(Summary!B9*C+Summary!B10*D)*3600/1e6), F $/month (=E*hours_per_month, and
    *average_demand_factor with a plan over time: an API bills the traffic served),
    G $ per 1K output tokens, H planner $/month (number), I self-host saving $/month
    (=F-$F$2), J source, K as of, L break-even peak req/s and M break-even tokens/month
    (numbers from `buildvsbuy.compare`; empty where self-hosting never wins). Notes
    below the table.

Charts (no formulas: planner figures at the planner's prices)
    A scatter of $ per 1K output tokens vs TPOT of the SLA-feasible candidates (one
    series per GPU, log y, the cost-vs-TPOT frontier per class as a line) at A2, and
    self-hosted fleet vs cheapest API $/month against peak req/s (log-log,
    `buildvsbuy.cost_curves`, the plan itself as a point) below it. Their tables start at
    row `CHART_TABLE_ROW`: candidates A:G (at most `MAX_CHART_POINTS`, sampled evenly
    along TPOT, grouped by GPU), frontier I:K, curves M:O, this plan Q:R.

Assumptions
    A1:B1 legend (shaded rows are assumptions), A2:B2 how to edit, row 3 header, table
    from row 4: category, item, field, value (column D), unit, source, as of, assumption,
    named cell. The first data row is hours per month (730); target utilisation and every
    GPU price the fleet or the single-GPU plan uses have workbook-level defined names:
    `hours_per_month`, `utilisation`, `price_<gpu id>` (non-alphanumerics -> "_").
    With a plan over time every tier price of `TimePlan.prices` has its own named row:
    `price_<gpu>` (on demand; the fleet's own cell when the price is the same, else
    `price_on_demand_<gpu>`), `price_reserved_<gpu>`, `price_spot_<gpu>`,
    `price_owned_<gpu>` (one hourly figure: the Plan does not carry the scenario's
    purchase, amortisation, power and hosting inputs), plus `growth` (per month, as the
    monthly demand implies) and `average_demand_factor` (mean of the demand profile).
    Editing a price, hours_per_month or growth there recomputes every cost; editing
    utilisation or demand does not re-plan (replica counts and latencies are the
    planner's, and so are the GPU counts over time).

openpyxl stores formulas without computed values, so every formula cell that carries a
planner figure has that figure beside it as a number (Summary column C, Fleet column K,
Build vs API column H, Monthly columns J:K, Periods' last column), and `read_back(path)`
re-evaluates the workbook's formulas in Python (from the workbook's own, possibly edited,
input cells) for tests and checks; tests/test_workbook_recalc.py checks them against
LibreOffice.

The break-even volumes and cost curves re-solve the fleet MIP at many volumes (0.3-2.5 s
for the shipped scenarios); `write_workbook` runs them unless the caller passes
`comparisons=` and `curves=`. The write is atomic: a temporary file in the target's
folder, then `os.replace`.
"""

from __future__ import annotations

import io
import math
import os
import re
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import numpy as np
import pandas as pd
from openpyxl import Workbook, load_workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, Cell
from openpyxl.chart import BarChart, Reference, ScatterChart, Series
from openpyxl.chart.shapes import GraphicalProperties
from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import column_index_from_string as col_index
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.worksheet import Worksheet

from planner.errors import InputError, SolverError
from planner.schema.plan import Deployment, FleetSummary, Plan
from planner.units import HOURS_PER_MONTH, SECONDS_PER_HOUR, TOKENS_PER_1K, TOKENS_PER_1M

SUMMARY, FLEET, MONTHLY, PERIODS, CANDIDATES, BUILD_VS_API, CHARTS, ASSUMPTIONS = (
    "Summary",
    "Fleet",
    "Monthly",
    "Periods",
    "Candidates",
    "Build vs API",
    "Charts",
    "Assumptions",
)
# every sheet a workbook may hold, in workbook order; BASE_SHEETS are always there, Monthly
# and Periods only for a plan over time, Charts when there is something to chart
SHEETS = (SUMMARY, FLEET, MONTHLY, PERIODS, CANDIDATES, BUILD_VS_API, CHARTS, ASSUMPTIONS)
BASE_SHEETS = (SUMMARY, FLEET, CANDIDATES, BUILD_VS_API, ASSUMPTIONS)

MONEY = '"$"#,##0.00'
MONEY_FINE = '"$"#,##0.0000'  # per-1K/1M-token costs
UNIT_PRICE = '"$"#,##0.00##'  # $/GPU-h and $/1M-token list prices: never hide a digit
MS = "0.0"
COUNT = "#,##0"
PERCENT = "0.0%"
RATE = "#,##0.00"
GB = "0.0"

MAX_WIDTH = 60
ASSUMPTION_FILL = PatternFill("solid", fgColor="FFF2CC")
BOLD = Font(bold=True)

HOURS_NAME = "hours_per_month"
UTILISATION_NAME = "utilisation"
GROWTH_NAME = "growth"
FACTOR_NAME = "average_demand_factor"

SUMMARY_ROWS: dict[str, int] = {
    "scenario": 2,
    "model": 3,
    "engine": 4,
    "status": 5,
    "gap": 6,
    "utilisation": 7,
    "demand_requests_per_s": 8,
    "input_tokens_per_s": 9,
    "output_tokens_per_s": 10,
    "total_cost_per_hour_usd": 11,
    "monthly_cost_usd": 12,
    "cost_per_1k_output_tokens_usd": 13,
    "cost_per_1m_tokens_usd": 14,
    "total_gpus": 15,
    "single_gpu_best_gpu": 16,
    "single_gpu_cost_per_hour_usd": 17,
    "single_gpu_monthly_cost_usd": 18,
    "mix_saving_monthly_usd": 19,
    "mix_saving_fraction": 20,
    "cheapest_api": 21,
    "cheapest_api_monthly_cost_usd": 22,
    "api_saving_monthly_usd": 23,
}
SUMMARY_CELLS: dict[str, str] = {key: f"B{row}" for key, row in SUMMARY_ROWS.items()}
SUMMARY_NOTES_ROW = 25
CLASS_TABLE_COLUMN = 6  # F: the per-class table on the Summary sheet

FLEET_COLUMNS: tuple[tuple[str, str | None], ...] = (
    ("GPU", None),
    ("TP", None),
    ("quant", None),
    ("KV dtype", None),
    ("batch", COUNT),
    ("replicas", COUNT),
    ("GPUs", COUNT),
    ("$/GPU-h", UNIT_PRICE),
    ("$/h", MONEY),
    ("$/month", MONEY),
    ("planner $/h", MONEY),
    ("requests/s", RATE),
    ("capacity req/s", RATE),
    ("load share", PERCENT),
    ("capacity used", PERCENT),
    ("TPOT ms", MS),
    ("TTFT ms", MS),
    ("SLA TPOT ms", MS),
    ("SLA TTFT ms", MS),
    ("classes served", None),
    ("price provider", None),
)

# plan.candidates column -> (header, number format)
CANDIDATE_COLUMNS: tuple[tuple[str, str, str | None], ...] = (
    ("class", "class", None),
    ("gpu", "GPU", None),
    ("tp", "TP", None),
    ("quant", "quant", None),
    ("kv_dtype", "KV dtype", None),
    ("compute_dtype", "compute dtype", None),
    ("batch", "batch", COUNT),
    ("fits", "fits", None),
    ("memory_per_gpu_gb", "memory/GPU GB", GB),
    ("max_batch", "max batch", COUNT),
    ("tpot_ms", "TPOT ms", MS),
    ("ttft_ms", "TTFT ms", MS),
    ("prefill_ms", "prefill ms", MS),
    ("bound", "bound", None),
    ("requests_per_s", "req/s at full load", RATE),
    ("capacity_requests_per_s", "capacity req/s", RATE),
    ("throughput_tok_s", "output tok/s", COUNT),
    ("cost_per_hour_usd", "$/h", MONEY),
    ("cost_per_1k_output_tokens_usd", "$ per 1K output tokens", MONEY_FINE),
    ("sla_ok", "SLA ok", None),
    ("why_not", "why not", None),
)

API_COLUMNS: tuple[tuple[str, str | None], ...] = (
    ("provider", None),
    ("model id", None),
    ("$ per 1M input", UNIT_PRICE),
    ("$ per 1M output", UNIT_PRICE),
    ("$/h", MONEY),
    ("$/month", MONEY),
    ("$ per 1K output tokens", MONEY_FINE),
    ("planner $/month", MONEY),
    ("self-host saving $/month", MONEY),
    ("source", None),
    ("as of", None),
    ("break-even peak req/s", RATE),
    ("break-even tokens/month (in + out)", COUNT),
)

ASSUMPTION_COLUMNS = (
    "category",
    "item",
    "field",
    "value",
    "unit",
    "source",
    "as of",
    "assumption",
    "named cell",
)
ASSUMPTIONS_HEADER_ROW = 3


# ---------------------------------------------------------------- public API


def write_workbook(
    plan: Plan,
    path: str | Path,
    *,
    comparisons: Sequence[Any] | None = None,
    curves: Sequence[np.ndarray] | None = None,
) -> Path:
    """Write `plan` to an .xlsx workbook at `path`, atomically; returns the path.

    `comparisons` (`buildvsbuy.compare(plan, plan.problem, plan.average_demand_factor)`)
    and `curves` (`buildvsbuy.cost_curves(plan.problem, plan, plan.cheapest_api,
    plan.average_demand_factor)`) are computed here when not given and the plan carries
    its fleet problem and API quotes; they re-solve the fleet MIP at many volumes and take
    most of the time (0.3-2.5 s), so a caller that has them should pass them. Pass `[]`
    and `()` to leave the break-even columns and chart out.

    Raises InputError when the folder is missing or not writable, or the target cannot be
    replaced; on any failure an existing file at `path` is left untouched.
    """
    target = Path(path)
    folder = target.parent
    _check_target(target, folder)
    mode = _file_mode(target)
    try:
        # closed by the `with handle:` below; kept on disk for os.replace
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115
            dir=folder, prefix=f".{target.stem}.", suffix=".xlsx", delete=False
        )
    except OSError as err:
        raise InputError(
            f"cannot write {target}: folder {folder} is not writable ({_reason(err)})"
        ) from err
    tmp = Path(handle.name)
    try:
        with handle:
            _write_xlsx(plan, handle, _analysis(plan, comparisons, curves))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        try:
            os.replace(tmp, target)
        except OSError as err:
            raise InputError(
                f"cannot write {target}: the existing file could not be replaced "
                f"({_reason(err)}); is it open in another program?"
            ) from err
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise InputError(f"cannot write {target}: {_reason(err)}") from err
        raise
    return target


def read_back(path: str | Path) -> dict[str, Any]:
    """Re-evaluate the formulas of an exported workbook from its own input cells.

    Returns every formula cell as "Sheet!A1" -> value, plus each `SUMMARY_CELLS` key ->
    the value of that Summary cell (evaluated when it is a formula). Only the formula
    forms this module writes are understood: + - * / ^, SUM, SUMPRODUCT, MIN, MAX,
    cell and range references (also to other sheets) and defined names. Candidates and
    Charts hold no formulas and are not read, so this stays fast for large tables.
    """
    wb = load_workbook(path, read_only=True, data_only=False)
    try:
        cells = {
            ws.title: {
                c.coordinate: c.value
                for row in ws.iter_rows()
                for c in row
                if getattr(c, "coordinate", None) and c.value is not None
            }
            for ws in wb.worksheets
            if ws.title not in (CANDIDATES, CHARTS)
        }
        names = {name.lower(): dn.attr_text for name, dn in wb.defined_names.items()}
    finally:
        wb.close()
    ev = _Evaluator(cells, names)
    out: dict[str, Any] = {}
    for sheet, sheet_cells in cells.items():
        for coord, value in sheet_cells.items():
            if isinstance(value, str) and value.startswith("="):
                out[f"{sheet}!{coord}"] = ev.cell(sheet, coord)
    for key, coord in SUMMARY_CELLS.items():
        out[key] = ev.cell(SUMMARY, coord)
    return out


# ---------------------------------------------------------------- file handling


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


def _check_target(target: Path, folder: Path) -> None:
    if not folder.is_dir():
        raise InputError(
            f"cannot write {target}: folder {folder} does not exist; "
            "create it or pass -o with another path"
        )
    if target.is_dir():
        raise InputError(f"cannot write {target}: it is a folder; give a file name ending .xlsx")
    if target.suffix.lower() != ".xlsx":
        raise InputError(f"cannot write {target}: an Excel workbook needs the .xlsx extension")


def _file_mode(target: Path) -> int:
    """Keep an existing file's permissions; a new one gets 0666 less the umask."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _write_xlsx(plan: Plan, handle, analysis: _Analysis) -> None:
    """Build the workbook with openpyxl, then stream the candidate rows into its XML."""
    wb, cand = _build(plan, analysis)
    buffer = io.BytesIO()
    wb.save(buffer)
    sheet_xml = cand.sheet.path.lstrip("/")
    with (
        zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as zin,
        zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zout,
    ):
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == sheet_xml:
                data = cand.patch(data)
            zout.writestr(info.filename, data)


# ---------------------------------------------------------------- values and layout


def _clean(value: Any) -> Any:
    """A cell-safe value: finite numbers, bools, text; NaN/inf/None -> None."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return ILLEGAL_CHARACTERS_RE.sub("", value)
    if value is pd.NA or value is pd.NaT:
        return None
    return ILLEGAL_CHARACTERS_RE.sub("", str(value))


def _finite(value: Any) -> float | None:
    value = _clean(value)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _header(ws: Worksheet, labels: Sequence[str], row: int = 1, column: int = 1) -> None:
    for i, label in enumerate(labels):
        cell = ws.cell(row=row, column=column + i, value=label)
        cell.font = BOLD


def _put(ws: Worksheet, row: int, column: int, value: Any, fmt: str | None = None) -> Cell:
    cell = ws.cell(row=row, column=column, value=_clean(value))
    if fmt:
        cell.number_format = fmt
    return cell


def _fit_widths(ws: Worksheet, widths: dict[int, int] | None = None) -> None:
    """Column widths from the longest shown text (formulas count as ~12), capped."""
    found: dict[int, int] = dict(widths or {})
    for row in ws.iter_rows():
        for cell in row:
            if cell.value is None:
                continue
            value = cell.value
            if isinstance(value, str) and value.startswith("="):
                size = 12
            elif isinstance(value, float):
                size = min(len(f"{value:,.2f}"), 16) + 2
            else:
                size = len(str(value)) + 1
            found[cell.column] = max(found.get(cell.column, 0), size)
    for column, size in found.items():
        ws.column_dimensions[get_column_letter(column)].width = min(max(size, 6), MAX_WIDTH)


def _defined_name(prefix: str, ident: str, taken: set[str]) -> str:
    """An Excel-safe workbook name: letters, digits, underscore; never a cell reference."""
    base = f"{prefix}_{re.sub(r'[^A-Za-z0-9_]', '_', ident).strip('_').lower() or 'x'}"
    name, n = base[:250], 2
    while name.lower() in taken:
        name, n = f"{base[:245]}_{n}", n + 1
    taken.add(name.lower())
    return name


def _add_name(wb: Workbook, name: str, sheet: str, coord: str) -> None:
    col, row = re.match(r"([A-Z]+)(\d+)$", coord).groups()
    wb.defined_names[name] = DefinedName(name, attr_text=f"{quote_sheetname(sheet)}!${col}${row}")


def _ref(sheet: str, coord: str) -> str:
    col, row = re.match(r"([A-Z]+)(\d+)$", coord).groups()
    return f"{quote_sheetname(sheet)}!${col}${row}"


# ---------------------------------------------------------------- Assumptions


def _fleet_prices(plan: Plan) -> dict[str, tuple[float, str]]:
    """GPU id -> (price per GPU-hour, provider) for the fleet and the single-GPU plan."""
    out: dict[str, tuple[float, str]] = {}
    fleets = [plan.fleet] + ([plan.single_gpu_best] if plan.single_gpu_best else [])
    for fleet in fleets:
        for d in fleet.deployments:
            out.setdefault(d.gpu, (float(d.price_usd_per_gpu_hour), d.price_provider))
    return out


@dataclass
class _Names:
    """The workbook's defined names for prices and plan-over-time assumptions."""

    gpu: dict[str, str] = field(default_factory=dict)  # fleet GPU -> its price name
    tier: dict[tuple[str, str], str] = field(default_factory=dict)  # (tier, gpu) -> name
    growth: str | None = None
    factor: str | None = None
    owned: bool = False  # an owned-GPU hourly cost is among the prices


def _price_row(rows: list[list[Any]], gpu: str, price: float) -> int | None:
    """The index of an existing price row of `gpu` at exactly `price`, if any."""
    return next(
        (
            i
            for i, r in enumerate(rows)
            if r[0] == "price"
            and r[1] == gpu
            and _finite(r[3]) is not None
            and math.isclose(float(r[3]), price, rel_tol=1e-12, abs_tol=0.0)
        ),
        None,
    )


def _utilisation_row(rows: list[list[Any]], plan: Plan) -> int:
    util = next(
        (
            i
            for i, r in enumerate(rows)
            if r[0] == "scenario"
            and r[2] == "target utilisation"
            and _finite(r[3]) is not None
            and abs(float(r[3]) - plan.utilisation) <= 1e-12
        ),
        None,
    )
    if util is not None:
        return util
    rows.append(
        ["scenario", "search", "target utilisation", plan.utilisation, "fraction", "plan", "", True]
    )
    return len(rows) - 1


def _assumption_rows(plan: Plan) -> tuple[list[list[Any]], dict[str, int], _Names]:
    """Rows for the Assumptions table, the defined name -> table index, and the names."""
    rows: list[list[Any]] = [
        [
            "planner",
            "convention",
            "hours per month",
            HOURS_PER_MONTH,
            "h/month",
            "planner.units.HOURS_PER_MONTH: 8760 h / 12, as cloud price pages count",
            "",
            True,
        ]
    ]
    table = plan.assumptions
    if table is not None and not table.empty:
        cols = ["category", "item", "field", "value", "unit", "source", "as_of", "assumption"]
        table = table.reindex(columns=cols)
        rows += [list(r) for r in table.itertuples(index=False, name=None)]
    named = {HOURS_NAME: 0, UTILISATION_NAME: _utilisation_row(rows, plan)}
    taken = {HOURS_NAME, UTILISATION_NAME, GROWTH_NAME, FACTOR_NAME}
    names = _Names()
    for gpu, (price, provider) in _fleet_prices(plan).items():
        idx = _price_row(rows, gpu, price)
        if idx is None:
            rows.append(
                [
                    "price",
                    gpu,
                    f"$/GPU-hour ({provider}) as used by the plan",
                    price,
                    "$/GPU-h",
                    "plan (not in its assumptions table)",
                    "",
                    False,
                ]
            )
            idx = len(rows) - 1
        name = _defined_name("price", gpu, taken)
        named[name] = idx
        names.gpu[gpu] = name
    if plan.over_time is not None:
        _time_price_rows(plan.over_time, rows, named, names, taken)
        _time_rows(plan, rows, named, names)
    return rows, named, names


def _tier(tier: str) -> str:
    """A PriceFact tier as the workbook names it: reserved_1y/reserved_3y -> reserved."""
    return "reserved" if tier.startswith("reserved") else tier


def _time_price_rows(
    ot: Any, rows: list[list[Any]], named: dict[str, int], names: _Names, taken: set[str]
) -> None:
    """One named row per tier price of the plan over time (`TimePlan.prices`)."""
    for fact in ot.prices:
        tier, gpu, price = _tier(fact.tier), fact.gpu, float(fact.usd_per_gpu_hour)
        idx, prefix = None, f"price_{tier}"
        if tier == "on_demand":
            own = names.gpu.get(gpu)
            if own is not None and math.isclose(
                float(rows[named[own]][3]), price, rel_tol=1e-12, abs_tol=0.0
            ):
                names.tier[tier, gpu] = own  # the very cell the Fleet sheet prices from
                continue
            idx = _price_row(rows, gpu, price)
            prefix = "price_on_demand" if own is not None else "price"
        names.owned |= tier == "owned"
        if idx is None:
            label = fact.tier.replace("_", " ")
            if tier == "owned":
                label += " (purchase, amortisation, power and hosting, per hour)"
            rows.append(
                [
                    "price",
                    gpu,
                    f"{label} $/GPU-hour",
                    price,
                    "$/GPU-h",
                    fact.source,
                    "",
                    bool(fact.assumption),
                ]
            )
            idx = len(rows) - 1
        name = _defined_name(prefix, gpu, taken)
        named[name] = idx
        names.tier[tier, gpu] = name


def _growth(monthly: pd.DataFrame) -> float | None:
    """Growth per month as the monthly demand implies it (the Plan carries no scenario)."""
    avg = monthly["avg_requests_per_s"].to_numpy(float)
    if len(avg) < 2 or not avg[0] > 0:
        return None
    raw = avg[1] / avg[0] - 1.0
    months = np.arange(len(avg))
    for growth in (round(raw, 10), raw):  # 0.05, not 0.050000000000000044, when it fits
        if np.allclose(avg[0] * (1.0 + growth) ** months, avg, rtol=1e-9, atol=0.0):
            return float(growth)
    return None


def _time_rows(plan: Plan, rows: list[list[Any]], named: dict[str, int], names: _Names) -> None:
    growth = _growth(plan.over_time.monthly)
    if growth is not None:
        rows.append(
            [
                "scenario",
                "finance",
                "growth per month",
                growth,
                "fraction",
                "scenario finance.growth_per_month (as the plan's monthly demand implies)",
                "scenario",
                True,
            ]
        )
        named[GROWTH_NAME] = len(rows) - 1
        names.growth = GROWTH_NAME
    rows.append(
        [
            "scenario",
            "finance.profile",
            "average demand / peak",
            plan.average_demand_factor,
            "fraction",
            "mean of the hourly demand profile: an API bills the tokens served (the "
            "average), the fleet is sized for the peak",
            "scenario",
            True,
        ]
    )
    named[FACTOR_NAME] = len(rows) - 1
    names.factor = FACTOR_NAME


def _write_assumptions(wb: Workbook, ws: Worksheet, plan: Plan) -> _Names:
    rows, named, names = _assumption_rows(plan)
    ws["A1"] = "assumption"
    ws["A1"].fill = ASSUMPTION_FILL
    ws["B1"] = (
        "Shaded rows are assumptions (scenario inputs and planner conventions), "
        "not sourced catalog facts."
    )
    ws["A2"] = "how to edit"
    how = (
        "Change a named cell (hours_per_month, price_<gpu>) and the Fleet, Summary and "
        "Build vs API costs recompute; utilisation and demand do not re-plan: rerun "
        "planner for new replica counts or latencies."
    )
    if plan.over_time is not None:
        how += (
            " Plan over time: price_reserved_<gpu>, price_spot_<gpu>, price_owned_<gpu>, "
            "price_<gpu> (on demand), growth and average_demand_factor drive the Monthly, "
            "Periods and Build vs API sheets; each tier price is its own input (a reserved "
            "price derived from a discount does not follow an edited on-demand price), and "
            "the GPU counts stay as planned."
        )
    if names.owned:
        how += (
            " An owned GPU's $/GPU-hour is one figure combining purchase price, "
            "amortisation, power (TDP x utilisation x PUE x electricity) and hosting from "
            "the scenario's finance.owned; those inputs are summarised, not listed here."
        )
    ws["B2"] = how
    _header(ws, ASSUMPTION_COLUMNS, row=ASSUMPTIONS_HEADER_ROW)
    name_of = {idx: name for name, idx in named.items()}
    first = ASSUMPTIONS_HEADER_ROW + 1
    for i, values in enumerate(rows):
        r = first + i
        unit = values[4] if isinstance(values[4], str) else ""
        fmt = {"$/GPU-h": UNIT_PRICE, "fraction": PERCENT}.get(unit)
        value = _clean(values[3])
        if fmt is None and isinstance(value, int | float) and abs(value) >= 1000:
            fmt = COUNT if float(value).is_integer() else RATE
        for j, v in enumerate([*values[:8], name_of.get(i)]):
            cell = _put(ws, r, j + 1, v, fmt if j == 3 else None)
            if _clean(values[7]) is True:
                cell.fill = ASSUMPTION_FILL
    for name, idx in named.items():
        _add_name(wb, name, ASSUMPTIONS, f"D{first + idx}")
    ws.freeze_panes = f"A{first}"
    _fit_widths(ws, {2: 14})
    ws.column_dimensions["B"].width = min(ws.column_dimensions["B"].width, 30)
    return names


# ---------------------------------------------------------------- Fleet


def _served(d: Deployment) -> list[str]:
    return [n for n, load in d.load_by_class.items() if load > 1e-9] or list(d.tpot_ms_by_class)


def _class_detail(d: Deployment) -> str:
    parts = []
    for n in _served(d):
        tpot, ttft = d.tpot_ms_by_class.get(n), d.ttft_ms_by_class.get(n)
        lat = ""
        if tpot is not None and ttft is not None:
            lat = f" (TPOT {tpot:.1f} ms, TTFT {ttft:.0f} ms)"
        parts.append(f"{n}: {d.load_by_class.get(n, 0.0):.3g} req/s{lat}")
    return "; ".join(parts)


def _tightest(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return min(found) if found else None


def _write_fleet(ws: Worksheet, plan: Plan, price_names: dict[str, str]) -> dict[str, str]:
    """Fleet lines and totals; returns the total cells by key ("cost_per_hour", ...)."""
    _header(ws, [label for label, _ in FLEET_COLUMNS])
    fmts = [fmt for _, fmt in FLEET_COLUMNS]
    by_name = {c.name: c for c in plan.classes}
    lines = plan.fleet.deployments
    n = len(lines)
    total = n + 2
    for i, d in enumerate(lines):
        r = i + 2
        served = [by_name[c] for c in _served(d) if c in by_name]
        values = [
            d.gpu,
            d.tp,
            d.quant,
            d.kv_dtype,
            d.batch,
            d.replicas,
            f"=F{r}*B{r}",
            f"={price_names[d.gpu]}",
            f"=F{r}*B{r}*H{r}",
            f"=I{r}*{HOURS_NAME}",
            d.cost_per_hour_usd,
            d.requests_per_s,
            d.capacity_requests_per_s,
            f"=L{r}/L${total}" if plan.total_requests_per_s > 0 else None,
            f"=L{r}/M{r}" if (_finite(d.capacity_requests_per_s) or 0) > 0 else None,
            d.tpot_ms,
            d.ttft_ms,
            _tightest(c.tpot_ms for c in served),
            _tightest(c.ttft_ms for c in served),
            _class_detail(d),
            d.price_provider,
        ]
        for j, v in enumerate(values):
            _put(ws, r, j + 1, v, fmts[j])
    ws.cell(row=total, column=1, value="Total").font = BOLD
    for col in "FGIJKLMN":
        j = ord(col) - ord("A")
        value = f"=SUM({col}2:{col}{total - 1})" if n else 0
        _put(ws, total, j + 1, value, fmts[j]).font = BOLD
    ws.freeze_panes = "A2"
    _fit_widths(ws)
    return {"gpus": f"G{total}", "cost_per_hour": f"I{total}", "cost_per_month": f"J{total}"}


# ---------------------------------------------------------------- Summary


def _status(fleet: FleetSummary) -> str:
    if fleet.status == "optimal":
        return fleet.status
    gap = _finite(fleet.gap)
    return f"{fleet.status} (gap {gap:.1%})" if gap is not None else fleet.status


def _single_gpu_formula(plan: Plan, price_names: dict[str, str]) -> str | None:
    single, gpu = plan.single_gpu_best, plan.single_gpu_best_gpu
    if single is None or gpu not in price_names:
        return None
    prices = {float(d.price_usd_per_gpu_hour) for d in single.deployments if d.gpu == gpu}
    if len(prices) != 1 or any(d.gpu != gpu for d in single.deployments):
        return None
    return f"={single.total_gpus}*{price_names[gpu]}"


def _write_summary(
    ws: Worksheet,
    plan: Plan,
    totals: dict[str, str],
    price_names: dict[str, str],
    api_rows: tuple[int, int],
) -> None:
    _header(ws, ["item", "value", "planner value", "unit / note"])
    n_cls = len(plan.classes)
    last = 1 + n_cls
    rps, inp, out = (f"{c}2:{c}{last}" for c in "GHI")
    fleet, single, api = plan.fleet, plan.single_gpu_best, plan.cheapest_api
    tok_in = sum(c.requests_per_second * c.input_tokens for c in plan.classes)
    tok_out = sum(c.requests_per_second * c.output_tokens for c in plan.classes)
    single_h = single.total_cost_per_hour_usd if single else None
    single_m = single_h * HOURS_PER_MONTH if single_h is not None else None
    mix_saving = single_m - fleet.monthly_cost_usd if single_m is not None else None
    api_m = api.monthly_cost_usd * plan.average_demand_factor if api else None
    f_ref = {k: _ref(FLEET, v) for k, v in totals.items()}
    api_range = f"{_ref(BUILD_VS_API, f'F{api_rows[0]}')}:$F${api_rows[1]}"
    rows: dict[str, tuple[str, Any, Any, str | None, str]] = {
        "scenario": ("scenario", plan.scenario_name, None, None, ""),
        "model": ("model", plan.model_id, None, None, ""),
        "engine": ("engine", plan.engine, None, None, ""),
        "status": ("solver status", _status(fleet), None, None, ""),
        "gap": (
            "optimality gap",
            fleet.gap,
            None,
            PERCENT,
            f"lower bound ${fleet.lower_bound_per_hour_usd:,.2f}/h"
            if _finite(fleet.lower_bound_per_hour_usd) is not None
            else "",
        ),
        "utilisation": (
            "target utilisation",
            f"={UTILISATION_NAME}",
            plan.utilisation,
            PERCENT,
            "replicas are sized to run at this load",
        ),
        "demand_requests_per_s": (
            "total demand",
            f"=SUM({rps})",
            plan.total_requests_per_s,
            RATE,
            "req/s",
        ),
        "input_tokens_per_s": (
            "input tokens/s",
            f"=SUMPRODUCT({rps},{inp})",
            tok_in,
            COUNT,
            "tokens/s",
        ),
        "output_tokens_per_s": (
            "output tokens/s",
            f"=SUMPRODUCT({rps},{out})",
            tok_out,
            COUNT,
            "tokens/s",
        ),
        "total_cost_per_hour_usd": (
            "self-hosted fleet $/h",
            f"={f_ref['cost_per_hour']}",
            fleet.total_cost_per_hour_usd,
            MONEY,
            "$/h",
        ),
        "monthly_cost_usd": (
            "self-hosted fleet $/month",
            f"={f_ref['cost_per_month']}",
            fleet.monthly_cost_usd,
            MONEY,
            f"$/month of {HOURS_PER_MONTH:g} h",
        ),
        "cost_per_1k_output_tokens_usd": (
            "$ per 1K output tokens",
            f"=B11/({SECONDS_PER_HOUR:.0f}*B10)*{TOKENS_PER_1K:.0f}" if tok_out > 0 else None,
            fleet.cost_per_1k_output_tokens_usd,
            MONEY_FINE,
            "$",
        ),
        "cost_per_1m_tokens_usd": (
            "$ per 1M tokens (input + output)",
            f"=B11/({SECONDS_PER_HOUR:.0f}*(B9+B10))*{TOKENS_PER_1M:.0f}"
            if tok_in + tok_out > 0
            else None,
            fleet.cost_per_1m_tokens_usd,
            MONEY_FINE,
            "$",
        ),
        "total_gpus": ("total GPUs", f"={f_ref['gpus']}", fleet.total_gpus, COUNT, "GPUs"),
        "single_gpu_best_gpu": (
            "best single-GPU-type plan: GPU",
            plan.single_gpu_best_gpu if single else "none: no single GPU type can serve it",
            None,
            None,
            f"{single.total_gpus} GPUs, {len(single.deployments)} configuration(s)"
            if single
            else "",
        ),
        "single_gpu_cost_per_hour_usd": (
            "best single-GPU-type plan $/h",
            _single_gpu_formula(plan, price_names) or single_h,
            single_h,
            MONEY,
            "$/h",
        ),
        "single_gpu_monthly_cost_usd": (
            "best single-GPU-type plan $/month",
            f"=B17*{HOURS_NAME}" if single else None,
            single_m,
            MONEY,
            "$/month",
        ),
        "mix_saving_monthly_usd": (
            "saving of the GPU mix",
            "=B18-B12" if single else None,
            mix_saving,
            MONEY,
            "$/month vs the single-GPU-type plan",
        ),
        "mix_saving_fraction": (
            "saving of the GPU mix, %",
            "=B19/B18" if single_m else None,
            mix_saving / single_m if single_m else None,
            PERCENT,
            "",
        ),
        "cheapest_api": (
            "cheapest API (at planner prices)",
            f"{api.provider} / {api.provider_model_id}"
            if api
            else "none: no API offers this model",
            None,
            None,
            "",
        ),
        "cheapest_api_monthly_cost_usd": (
            "cheapest API $/month",
            f"=MIN({api_range})" if api else None,
            api_m,
            MONEY,
            "lowest $/month on the Build vs API sheet"
            + (" (API at average demand)" if plan.over_time is not None else ""),
        ),
        "api_saving_monthly_usd": (
            "self-host saving vs cheapest API",
            "=B22-B12" if api else None,
            api_m - fleet.monthly_cost_usd if api_m is not None else None,
            MONEY,
            "$/month; negative means the API is cheaper",
        ),
    }
    for key, (label, value, planner, fmt, unit) in rows.items():
        r = SUMMARY_ROWS[key]
        ws.cell(row=r, column=1, value=label)
        _put(ws, r, 2, value, fmt)
        _put(ws, r, 3, planner, fmt)
        _put(ws, r, 4, unit)
    ws.cell(row=SUMMARY_NOTES_ROW, column=1, value="Notes").font = BOLD
    notes = list(plan.notes) or ["(none)"]
    for i, note in enumerate(notes):
        ws.cell(row=SUMMARY_NOTES_ROW + 1 + i, column=1, value="note")
        _put(ws, SUMMARY_NOTES_ROW + 1 + i, 2, note)
    col = CLASS_TABLE_COLUMN
    _header(
        ws,
        [
            "class",
            "req/s",
            "input tokens",
            "output tokens",
            "SLA TPOT ms",
            "SLA TTFT ms",
            "statistic",
        ],
        column=col,
    )
    for i, c in enumerate(plan.classes):
        values = [
            c.name,
            c.requests_per_second,
            c.input_tokens,
            c.output_tokens,
            c.tpot_ms,
            c.ttft_ms,
            c.statistic,
        ]
        for j, (v, fmt) in enumerate(
            zip(values, [None, RATE, COUNT, COUNT, MS, MS, None], strict=True)
        ):
            _put(ws, 2 + i, col + j, v, fmt)
    ws.freeze_panes = "A2"
    _fit_widths(ws)
    ws.column_dimensions["B"].width = 24
    ws.column_dimensions["E"].width = 3


# ---------------------------------------------------------------- Build vs API


def _api_columns(plan: Plan) -> list[tuple[str, str | None]]:
    cols = list(API_COLUMNS)
    if plan.over_time is not None:
        cols[5] = ("$/month (API at average demand)", MONEY)
        cols[7] = ("planner $/month (API at average demand)", MONEY)
    return cols


def _write_build_vs_api(
    ws: Worksheet, plan: Plan, totals: dict[str, str], names: _Names, analysis: _Analysis
) -> tuple[int, int]:
    """The self-hosted row and one row per API quote; returns the API rows (first, last)."""
    columns = _api_columns(plan)
    _header(ws, [label for label, _ in columns])
    fmts = [fmt for _, fmt in columns]
    fleet = plan.fleet
    mix = " + ".join(f"{d.replicas}x {d.gpu} TP{d.tp}" for d in fleet.deployments)
    summary = quote_sheetname(SUMMARY)
    tok_out = sum(c.requests_per_second * c.output_tokens for c in plan.classes)
    self_row = [
        "self-hosted fleet (this plan)",
        mix or "(no deployments)",
        None,
        None,
        f"={_ref(FLEET, totals['cost_per_hour'])}",
        f"={_ref(FLEET, totals['cost_per_month'])}",
        f"={summary}!$B$13" if tok_out > 0 else None,
        fleet.monthly_cost_usd,
        None,
        "Fleet sheet of this workbook",
        "",
    ]
    for j, v in enumerate(self_row):
        _put(ws, 2, j + 1, v, fmts[j]).font = BOLD
    factor = f"*{names.factor}" if names.factor else ""
    for i, q in enumerate(plan.api_quotes):
        r = 3 + i
        found = analysis.comparisons.get(q)
        values = [
            q.provider,
            q.provider_model_id,
            q.input_usd_per_1m,
            q.output_usd_per_1m,
            f"=({summary}!$B$9*C{r}+{summary}!$B$10*D{r})*{SECONDS_PER_HOUR:.0f}/{TOKENS_PER_1M:.0f}",
            f"=E{r}*{HOURS_NAME}{factor}",
            f"=E{r}/({SECONDS_PER_HOUR:.0f}*{summary}!$B$10)*{TOKENS_PER_1K:.0f}"
            if tok_out > 0
            else None,
            found.api_monthly_usd if found else q.monthly_cost_usd * plan.average_demand_factor,
            f"=F{r}-$F$2",
            q.source,
            q.as_of,
            found.break_even_peak_requests_per_s if found else None,
            found.break_even_tokens_per_month if found else None,
        ]
        for j, v in enumerate(values):
            _put(ws, r, j + 1, v, fmts[j])
    last = 2 + len(plan.api_quotes)
    notes = [
        "break-even: the peak demand (and the tokens per month it brings) from which a "
        "self-hosted fleet, re-solved at that volume, costs no more than this API; empty "
        "where self-hosting does not win up to 1000x the scenario's demand"
    ]
    if plan.over_time is not None:
        notes.append(
            "the API bill follows the average demand (average_demand_factor x the peak); "
            "the self-hosted fleet is sized for the peak and paid around the clock"
        )
    notes += analysis.notes
    ws.freeze_panes = "A2"
    _fit_widths(ws)
    for i, note in enumerate(notes):  # after the widths: notes run on over empty cells
        ws.cell(row=last + 2 + i, column=1, value="note")
        _put(ws, last + 2 + i, 2, note)
    return 3, last


# ---------------------------------------------------------------- plan over time: Periods, Monthly

PERIOD_TIERS = ("reserved", "owned", "on_demand", "spot")
TIER_LABELS = {"reserved": "reserved", "owned": "owned", "on_demand": "on-demand", "spot": "spot"}
PERIOD_COUNTS = ("reserved", "owned", "on_demand", "spot", "in_use")
MONTHLY_COLUMNS: tuple[tuple[str, str | None], ...] = (
    ("month", "0"),
    ("avg req/s", RATE),
    ("output tokens", COUNT),
    ("reserved $", MONEY),
    ("owned $", MONEY),
    ("on-demand $", MONEY),
    ("spot $", MONEY),
    ("total $", MONEY),
    ("$ per 1K output tokens", MONEY_FINE),
    ("planner total $", MONEY),
    ("planner $ per 1K output tokens", MONEY_FINE),
)
HOURS_FMT = "#,##0.0"


@dataclass(frozen=True)
class _PeriodRefs:
    """Where Monthly finds a month's block on the Periods sheet."""

    blocks: dict[int, tuple[int, int]]  # month (from 1) -> first and last row of its block
    months_col: str  # column of "months in block"
    cost_cols: dict[str, str]  # tier -> column of that tier's $ in the period


def _block(months: Any) -> tuple[int, int]:
    """ "4-6" -> (4, 6); "7" -> (7, 7)."""
    first, _, last = str(months).partition("-")
    return int(first), int(last or first)


def _tier_cost(tier: str, gpus: list[str], cols: dict, names: _Names, r: int) -> Any:
    """=(GPUs x price summed over GPU types) x hours of the period, for one tier."""
    terms = [f"{cols[g, tier]}{r}*{names.tier[tier, g]}" for g in gpus if (tier, g) in names.tier]
    return f"=({'+'.join(terms)})*G{r}" if terms else 0


def _period_headers(
    classes: list[str], gpus: list[str]
) -> tuple[list[str], list[str | None], dict[tuple[str, str], str], dict[str, str]]:
    headers = [
        "period",
        "months",
        "first month",
        "months in block",
        "slot",
        "share of hours",
        "hours",
    ]
    fmts: list[str | None] = ["0", None, "0", "0", "0", PERCENT, HOURS_FMT]
    headers += [f"demand {c} req/s" for c in classes]
    fmts += [RATE] * len(classes)
    gpu_cols: dict[tuple[str, str], str] = {}
    for g in gpus:
        for kind in PERIOD_COUNTS:
            gpu_cols[g, kind] = get_column_letter(len(headers) + 1)
            headers.append(f"{g} {kind.replace('_', '-')}")
            fmts.append(COUNT)
    cost_cols: dict[str, str] = {}
    for tier in PERIOD_TIERS:
        cost_cols[tier] = get_column_letter(len(headers) + 1)
        headers.append(f"{TIER_LABELS[tier]} $")
        fmts.append(MONEY)
    headers += ["total $", "planner $"]
    fmts += [MONEY, MONEY]
    return headers, fmts, gpu_cols, cost_cols


def _write_periods(ws: Worksheet, plan: Plan, names: _Names) -> _PeriodRefs:
    """One row per (block of months, demand slot): hours, demand, GPUs per tier, $ per tier."""
    ot = plan.over_time
    table = ot.periods
    gpus = list(ot.solution.gpu_types)
    classes = [c.name for c in plan.classes if f"demand_{c.name}_req_s" in table]
    headers, fmts, gpu_cols, cost_cols = _period_headers(classes, gpus)
    _header(ws, headers)
    first_cost, last_cost = cost_cols[PERIOD_TIERS[0]], cost_cols[PERIOD_TIERS[-1]]
    blocks: dict[int, tuple[int, int]] = {}
    for p, row in enumerate(table.to_dict("records")):
        r = p + 2
        first, last = _block(row["months"])
        months = last - first + 1
        values = [
            p + 1,
            str(row["months"]),
            first,
            months,
            int(row["slot"]),
            float(row["hours"]) / (HOURS_PER_MONTH * months),
            f"=F{r}*{HOURS_NAME}*D{r}",
            *(row[f"demand_{c}_req_s"] for c in classes),
            *(row.get(f"{g}_{kind}", 0) for g in gpus for kind in PERIOD_COUNTS),
            *(_tier_cost(tier, gpus, gpu_cols, names, r) for tier in PERIOD_TIERS),
            f"=SUM({first_cost}{r}:{last_cost}{r})",
            row["cost_usd"],
        ]
        for j, v in enumerate(values):
            _put(ws, r, j + 1, v, fmts[j])
        for m in range(first, last + 1):
            a, b = blocks.get(m, (r, r))
            blocks[m] = (min(a, r), max(b, r))
    ws.freeze_panes = "C2"
    _fit_widths(ws)
    return _PeriodRefs(blocks, "D", cost_cols)


def _monthly_row(r: int, row: dict, names: _Names, refs: _PeriodRefs, held: tuple[int, int]):
    m = int(row["month"])
    periods = quote_sheetname(PERIODS)
    a, b = refs.blocks[m]
    h1, h2 = held

    def block(tier: str) -> str:
        col = refs.cost_cols[tier]
        return f"=SUM({periods}!${col}${a}:${col}${b})/{periods}!${refs.months_col}${a}"

    grow = names.growth is not None and r > 2
    return [
        m,
        f"=$B$2*(1+{names.growth})^(A{r}-1)" if grow else row["avg_requests_per_s"],
        f"=$C$2*(1+{names.growth})^(A{r}-1)" if grow else row["output_tokens"],
        f"=SUMPRODUCT($B${h1}:$B${h2},$C${h1}:$C${h2})*{HOURS_NAME}",
        f"=SUMPRODUCT($D${h1}:$D${h2},$E${h1}:$E${h2})*{HOURS_NAME}",
        block("on_demand"),
        block("spot"),
        f"=SUM(D{r}:G{r})",
        f"=H{r}/C{r}*{TOKENS_PER_1K:.0f}",
        row["total_usd"],
        row["cost_per_1k_output_tokens_usd"],
    ]


def _write_monthly(ws: Worksheet, plan: Plan, names: _Names, refs: _PeriodRefs) -> None:
    """Month by month cost by tier as live formulas, totals, comparisons, held GPUs, chart."""
    ot = plan.over_time
    table = ot.monthly
    gpus = list(ot.solution.gpu_types)
    fmts = [fmt for _, fmt in MONTHLY_COLUMNS]
    n = len(table)
    total = n + 2
    held_header = total + 8
    held = (held_header + 1, held_header + len(gpus))
    _header(ws, [label for label, _ in MONTHLY_COLUMNS])
    for i, row in enumerate(table.to_dict("records")):
        for j, v in enumerate(_monthly_row(i + 2, row, names, refs, held)):
            _put(ws, i + 2, j + 1, v, fmts[j])
    ws.cell(row=total, column=1, value="Total").font = BOLD
    for col in "CDEFGH":
        _put(ws, total, col_index(col), f"=SUM({col}2:{col}{n + 1})", fmts[col_index(col) - 1])
    _put(ws, total, 9, f"=H{total}/C{total}*{TOKENS_PER_1K:.0f}", MONEY_FINE)
    _put(ws, total, 10, float(table["total_usd"].sum()), MONEY)
    _put(ws, total, 11, ot.cost_per_1k_output_tokens_usd, MONEY_FINE)
    for cell in ws[total]:
        cell.font = BOLD
    labels = _monthly_comparisons(ws, ot, total)
    _write_held(ws, ot, names, gpus, held_header)
    ws.freeze_panes = "B2"
    _fit_widths(ws)
    ws.column_dimensions["A"].width = max(10, max((len(g) + 2 for g in gpus), default=0))
    for r, label in labels:  # after the widths: labels run on over the empty cells
        _put(ws, r, 1, label)
    notes = [
        "GPU counts are as planned: editing growth changes demand, output tokens and $ per "
        "1K output tokens, not the GPUs or their cost; rerun planner to re-plan.",
        "Each block of months is sized for its busiest month; a block's on-demand and spot "
        "cost (Periods sheet) is split evenly over its months.",
        *ot.notes,
    ]
    for i, note in enumerate(notes):
        _put(ws, held[1] + 2 + i, 1, note)
    _monthly_chart(ws, n)


def _monthly_comparisons(ws: Worksheet, ot: Any, total: int) -> list[tuple[int, str]]:
    """All on-demand and all reserved (planner figures) beside this plan's live total."""
    od = ot.all_on_demand
    od_cost = _finite(od.total_cost) if od is not None and od.status != "infeasible" else None
    res_cost = _finite(ot.all_reserved_cost)
    held = ", ".join(f"{n}x {g}" for g, n in ot.all_reserved_gpus.items()) or "none"
    mixed = float(ot.solution.total_cost)
    rows = [
        (
            "all on-demand (no reserved, owned or spot), horizon $: planner figure "
            "at the planner's prices",
            od_cost,
        ),
        (
            f"all reserved for the busiest period's peak ({held}), horizon $: planner "
            "figure at the planner's prices",
            res_cost,
        ),
    ]
    labels: list[tuple[int, str]] = []
    for k, (label, cost) in enumerate(rows):
        r = total + 2 + 2 * k
        labels.append((r, label if cost is not None else f"{label} (n/a: no such plan)"))
        _put(ws, r, 8, cost, MONEY)
        labels.append((r + 1, f"saving of this plan vs {label.split(' (')[0]}"))
        if cost is not None:
            _put(ws, r + 1, 8, f"=H{r}-H{total}", MONEY)
            _put(ws, r + 1, 9, f"=H{r + 1}/H{r}" if cost else None, PERCENT)
            _put(ws, r + 1, 10, cost - mixed, MONEY)
    return labels


def _write_held(ws: Worksheet, ot: Any, names: _Names, gpus: list[str], header: int) -> None:
    """GPUs held for the whole horizon (reserved, owned) with their named prices."""
    ws.cell(row=header - 1, column=1, value="held for the whole horizon").font = BOLD
    _header(
        ws,
        ["GPU", "reserved GPUs", "reserved $/GPU-h", "owned GPUs", "owned $/GPU-h"],
        row=header,
    )
    for i, g in enumerate(gpus):
        r = header + 1 + i
        res, own = names.tier.get(("reserved", g)), names.tier.get(("owned", g))
        values = [
            g,
            int(ot.solution.reserved.get(g, 0)),
            f"={res}" if res else None,
            int(ot.solution.owned.get(g, 0)),
            f"={own}" if own else None,
        ]
        for j, (v, fmt) in enumerate(
            zip(values, [None, COUNT, UNIT_PRICE, COUNT, UNIT_PRICE], strict=True)
        ):
            _put(ws, r, j + 1, v, fmt)


def _monthly_chart(ws: Worksheet, n: int) -> None:
    chart = BarChart()
    chart.type, chart.grouping, chart.overlap = "col", "stacked", 100
    chart.title = "Monthly cost by tier"
    chart.y_axis.title, chart.x_axis.title = "$ per month", "month"
    chart.y_axis.numFmt = '"$"#,##0'
    chart.add_data(
        Reference(ws, min_col=4, max_col=7, min_row=1, max_row=n + 1), titles_from_data=True
    )
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n + 1))
    _show_axes(chart)
    chart.width, chart.height = 18, 9
    ws.add_chart(chart, "M2")


def _show_axes(chart: Any) -> None:
    """openpyxl 3.1 writes axes as deleted unless told otherwise."""
    chart.x_axis.delete = False
    chart.y_axis.delete = False


# ---------------------------------------------------------------- Candidates


class _CandidateSheet:
    """The Candidates sheet: header via openpyxl, body streamed as XML into the saved file.

    openpyxl (without lxml) needs ~7 µs per cell; 20,000 rows x 21 columns would take
    several seconds. The body is generated column by column as SpreadsheetML strings with
    the style ids openpyxl registered for each column's number format, then spliced into
    the sheet's <sheetData> after openpyxl has saved the header, autofilter and panes.
    """

    def __init__(self, ws: Worksheet, table: pd.DataFrame) -> None:
        self.sheet = ws
        self.table = table if table is not None else pd.DataFrame()
        _header(ws, [header for _, header, _ in CANDIDATE_COLUMNS])
        self.n_rows = len(self.table)
        last = get_column_letter(len(CANDIDATE_COLUMNS))
        self.ref = f"A1:{last}{self.n_rows + 1}"
        ws.auto_filter.ref = self.ref
        ws.freeze_panes = "A2"
        self.styles: list[str] = []
        for i, (name, header, fmt) in enumerate(CANDIDATE_COLUMNS):
            letter = get_column_letter(i + 1)
            width = len(header) + 3
            if fmt:
                proto = Cell(ws, row=1, column=i + 1)
                proto.number_format = fmt
                self.styles.append(f' s="{proto.style_id}"')
                width = max(width, 12)
            else:
                self.styles.append("")
                width = max(width, self._text_width(name))
            ws.column_dimensions[letter].width = min(width, MAX_WIDTH)

    def _text_width(self, name: str) -> int:
        if name not in self.table or self.n_rows == 0:
            return 0
        return int(self.table[name].astype(str).str.len().max()) + 2

    def _column_cells(self, i: int, name: str, rows: list[str]) -> list[str]:
        letter, style = get_column_letter(i + 1), self.styles[i]
        if name not in self.table:
            return [""] * self.n_rows
        series = self.table[name]
        head = [f'<c r="{letter}{r}"{style}' for r in rows]
        complete = not series.isna().any()
        if complete and pd.api.types.is_bool_dtype(series.dtype):
            return [
                f'{h} t="b"><v>{int(v)}</v></c>' for h, v in zip(head, series.tolist(), strict=True)
            ]
        if complete and pd.api.types.is_integer_dtype(series.dtype):
            return [f"{h}><v>{v}</v></c>" for h, v in zip(head, series.tolist(), strict=True)]
        if pd.api.types.is_float_dtype(series.dtype):
            return [
                f"{h}><v>{v!r}</v></c>" if math.isfinite(v) else ""
                for h, v in zip(head, series.astype(float).tolist(), strict=True)
            ]
        memo: dict[str, str] = {}  # text columns repeat a few values many times
        out = []
        for h, v in zip(head, series.tolist(), strict=True):
            if isinstance(v, str):
                body = memo.get(v)
                if body is None:
                    body = memo[v] = _xml_value(v)
            else:
                body = _xml_value(v)
            out.append(f"{h}{body}" if body else "")
        return out

    def body(self) -> bytes:
        rows = [str(r) for r in range(2, self.n_rows + 2)]
        columns = [
            self._column_cells(i, name, rows) for i, (name, _, _) in enumerate(CANDIDATE_COLUMNS)
        ]
        text = "".join(
            f'<row r="{r}">{"".join(cells)}</row>'
            for r, cells in zip(rows, zip(*columns, strict=True), strict=True)
        )
        return text.encode("utf-8")

    def patch(self, xml: bytes) -> bytes:
        """Splice the body rows and the true dimension into openpyxl's sheet XML."""
        if self.n_rows == 0:
            return xml
        end = xml.rfind(b"</sheetData>")
        if end < 0:
            raise RuntimeError("unexpected worksheet XML from openpyxl: no </sheetData>")
        xml = xml[:end] + self.body() + xml[end:]
        return re.sub(
            rb'<dimension ref="[^"]*"\s*/>', f'<dimension ref="{self.ref}"/>'.encode(), xml, count=1
        )


def _xml_value(value: Any) -> str:
    """The tail of one <c> element (type, value, close) for a Python value; '' if empty."""
    value = _clean(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return f' t="b"><v>{int(value)}</v></c>'
    if isinstance(value, int | float):
        return f"><v>{value!r}</v></c>"
    return f' t="inlineStr"><is><t xml:space="preserve">{escape(value)}</t></is></c>'


# ---------------------------------------------------------------- Charts

MAX_CHART_POINTS = 2000
CHART_TABLE_ROW = 42  # the charts sit above, the tables they plot start here
CHART_POINT_COLUMNS: tuple[tuple[str, str, str | None], ...] = (
    ("class", "class", None),
    ("gpu", "GPU", None),
    ("tp", "TP", "0"),
    ("quant", "quant", None),
    ("batch", "batch", COUNT),
    ("tpot_ms", "TPOT ms", MS),
    ("cost_per_1k_output_tokens_usd", "$ per 1K output tokens", MONEY_FINE),
)


@dataclass(frozen=True)
class _Analysis:
    """What the workbook shows beyond the Plan: break-even volumes and cost curves."""

    comparisons: dict[Any, Any]  # ApiQuote -> buildvsbuy.Comparison
    curves: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    notes: tuple[str, ...] = ()


def _analysis(plan: Plan, comparisons: Sequence[Any] | None, curves: Any) -> _Analysis:
    """Run buildvsbuy.compare and cost_curves unless given (MIP solves: the slow part)."""
    notes: list[str] = []
    solvable = plan.problem is not None and bool(plan.api_quotes)
    if comparisons is None or curves is None:
        import planner.buildvsbuy as buildvsbuy  # imports the MIP solver: only when needed
    if comparisons is None and solvable:
        try:
            comparisons = buildvsbuy.compare(plan, plan.problem, plan.average_demand_factor)
        except SolverError as err:
            comparisons = []
            notes.append(f"break-even volumes not computed: {err.message}")
    if curves is None and solvable and plan.cheapest_api is not None:
        try:
            curves = buildvsbuy.cost_curves(
                plan.problem, plan, plan.cheapest_api, plan.average_demand_factor
            )
        except SolverError as err:
            curves = None
            notes.append(f"self-host vs API chart not drawn: {err.message}")
    curves = tuple(np.asarray(c, float) for c in curves) if curves is not None else ()
    return _Analysis(
        {c.quote: c for c in comparisons or ()},
        curves if len(curves) == 3 and len(curves[0]) else None,
        tuple(notes),
    )


def _feasible_points(plan: Plan) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SLA-feasible candidates with a finite TPOT and cost (sampled along TPOT down to
    MAX_CHART_POINTS, sorted by GPU then TPOT) and each class's cost-vs-TPOT frontier."""
    cols = [name for name, _, _ in CHART_POINT_COLUMNS]
    empty = pd.DataFrame(columns=cols)
    table = plan.candidates
    need = {"sla_ok", "gpu", "tpot_ms", "cost_per_1k_output_tokens_usd"}
    if table is None or table.empty or not need <= set(table.columns):
        return empty, empty
    rows = table.reindex(columns=cols)[table["sla_ok"].eq(True).to_numpy()]
    tpot = pd.to_numeric(rows["tpot_ms"], errors="coerce").to_numpy(float)
    cost = pd.to_numeric(rows["cost_per_1k_output_tokens_usd"], errors="coerce").to_numpy(float)
    rows = rows[np.isfinite(tpot) & np.isfinite(cost)].copy()
    rows["class"] = rows["class"].fillna("").astype(str)
    rows = rows.sort_values(["tpot_ms", "cost_per_1k_output_tokens_usd"], kind="stable")
    frontier = rows[
        rows["cost_per_1k_output_tokens_usd"]
        < rows.groupby("class")["cost_per_1k_output_tokens_usd"]
        .cummin()
        .groupby(rows["class"])
        .shift(fill_value=np.inf)
    ]
    if len(rows) > MAX_CHART_POINTS:
        keep = np.unique(np.linspace(0, len(rows) - 1, MAX_CHART_POINTS).round().astype(int))
        rows = rows.iloc[keep]
    rows = rows.sort_values(["gpu", "tpot_ms"], kind="stable")
    frontier = frontier.sort_values(["class", "tpot_ms"], kind="stable")
    return rows.reset_index(drop=True), frontier.reset_index(drop=True)


def _put_table(
    ws: Worksheet, row: int, column: int, title: str, headers: Sequence[str], data, fmts
) -> tuple[int, int, str]:
    """Header at row+1, then `data` rows (tuples); returns the title's place, for the
    caller to write after the column widths are set (titles run on over empty cells)."""
    _header(ws, headers, row=row + 1, column=column)
    for i, values in enumerate(data):
        for j, (v, fmt) in enumerate(zip(values, fmts, strict=True)):
            _put(ws, row + 2 + i, column + j, v, fmt)
    return row, column, title


PALETTE = (
    "1F77B4", "FF7F0E", "2CA02C", "D62728", "9467BD",
    "8C564B", "E377C2", "7F7F7F", "BCBD22", "17BECF",
)  # fmt: skip


def _scatter(title: str, x_title: str, y_title: str, y_fmt: str) -> ScatterChart:
    chart = ScatterChart()
    chart.title = title
    chart.scatterStyle = "lineMarker"
    chart.x_axis.title, chart.y_axis.title = x_title, y_title
    chart.y_axis.numFmt = y_fmt
    chart.width, chart.height = 22, 10
    _show_axes(chart)
    return chart


def _series(
    ws: Worksheet,
    cols: tuple[int, int],
    rows: tuple[int, int],
    title: str,
    color: str,
    marker: str | None = "circle",
    size: int = 4,
) -> Series:
    """A scatter series of rows r1..r2: (x, y) columns; markers only, or a line if
    `marker` is None."""
    (x_col, y_col), (r1, r2) = cols, rows
    s = Series(
        Reference(ws, min_col=y_col, min_row=r1, max_row=r2),
        Reference(ws, min_col=x_col, min_row=r1, max_row=r2),
        title=title,
    )
    s.smooth = False
    if marker is None:
        s.marker.symbol = "none"
        s.graphicalProperties.line.solidFill = color
        s.graphicalProperties.line.width = 28575  # 2.25 pt
    else:
        s.marker.symbol, s.marker.size = marker, size
        s.marker.graphicalProperties = GraphicalProperties(solidFill=color)
        s.marker.graphicalProperties.line.solidFill = color
        s.graphicalProperties.line.noFill = True
    return s


def _frontier_chart(
    ws: Worksheet, points: pd.DataFrame, frontier: pd.DataFrame
) -> list[tuple[int, int, str]]:
    """Scatter of $ per 1K output tokens vs TPOT, one series per GPU, frontier lines."""
    first = CHART_TABLE_ROW + 2
    titles = [
        _put_table(
            ws,
            CHART_TABLE_ROW,
            1,
            f"SLA-feasible candidates ({len(points)} plotted, sampled along TPOT when more)",
            [h for _, h, _ in CHART_POINT_COLUMNS],
            points.itertuples(index=False, name=None),
            [fmt for _, _, fmt in CHART_POINT_COLUMNS],
        ),
        _put_table(
            ws,
            CHART_TABLE_ROW,
            9,
            "cost vs TPOT frontier",
            ["class", "TPOT ms", "$ per 1K output tokens"],
            frontier[["class", "tpot_ms", "cost_per_1k_output_tokens_usd"]].itertuples(
                index=False, name=None
            ),
            [None, MS, MONEY_FINE],
        ),
    ]
    chart = _scatter(
        "$ per 1K output tokens vs TPOT, SLA-feasible candidates",
        "TPOT ms",
        "$ per 1K output tokens",
        '"$"#,##0.0000',
    )
    chart.y_axis.scaling.logBase = 10
    chart.y_axis.title = "$ per 1K output tokens (log scale)"
    groups = points.groupby("gpu", sort=False).indices.items()
    for k, (gpu, idx) in enumerate(groups):
        rows = (first + idx[0], first + idx[-1])
        chart.series.append(_series(ws, (6, 7), rows, str(gpu), PALETTE[k % len(PALETTE)]))
    several = frontier["class"].nunique() > 1
    for cls, idx in frontier.groupby("class", sort=False).indices.items():
        label = f"frontier {cls}" if several else "frontier"
        rows = (first + idx[0], first + idx[-1])
        chart.series.append(_series(ws, (10, 11), rows, label, "000000", marker=None))
    ws.add_chart(chart, "A2")
    return titles


def _break_even_chart(
    ws: Worksheet, plan: Plan, curves: tuple, anchor: str
) -> list[tuple[int, int, str]]:
    """Self-hosted fleet (re-solved per volume) and the cheapest API, $/month vs peak req/s."""
    volume, own, api = curves
    quote = plan.cheapest_api
    api_label = f"API: {quote.provider} {quote.provider_model_id}"
    first = CHART_TABLE_ROW + 2
    average = " at average demand" if plan.over_time is not None else ""
    titles = [
        _put_table(
            ws,
            CHART_TABLE_ROW,
            13,
            f"self-host vs cheapest API ({api_label}{average})",
            ["peak req/s", "self-hosted $/month", "API $/month"],
            zip(volume.tolist(), own.tolist(), api.tolist(), strict=True),
            [RATE, MONEY, MONEY],
        ),
        _put_table(
            ws,
            CHART_TABLE_ROW,
            17,
            "",
            ["this plan: peak req/s", "fleet $/month"],
            [(plan.total_requests_per_s, plan.fleet.monthly_cost_usd)],
            [RATE, MONEY],
        ),
    ]
    chart = _scatter(
        "Self-hosting vs API, $ per month by peak demand",
        "peak requests/s (log scale)",
        "$ per month (log scale)",
        '"$"#,##0',
    )
    chart.x_axis.scaling.logBase = 10
    chart.y_axis.scaling.logBase = 10
    last = first + len(volume) - 1
    rows = (first, last)
    chart.series.append(
        _series(ws, (13, 14), rows, "self-hosted fleet (re-solved)", PALETTE[0], marker=None)
    )
    chart.series.append(_series(ws, (13, 15), rows, api_label + average, PALETTE[1], marker=None))
    chart.series.append(
        _series(ws, (17, 18), (first, first), "this plan", "000000", marker="diamond", size=9)
    )
    ws.add_chart(chart, anchor)
    return titles


def _write_charts(
    ws: Worksheet, plan: Plan, analysis: _Analysis, points: pd.DataFrame, frontier: pd.DataFrame
) -> None:
    titles = []
    if len(points):
        titles += _frontier_chart(ws, points, frontier)
    if analysis.curves is not None and plan.cheapest_api is not None:
        titles += _break_even_chart(ws, plan, analysis.curves, "A22" if len(points) else "A2")
    _fit_widths(ws)
    for col in "HLP":
        ws.column_dimensions[col].width = 3
    ws["A1"] = (
        f"Charts; the tables they plot start at row {CHART_TABLE_ROW}. Planner figures at "
        "the planner's prices: they do not follow edits on the Assumptions sheet."
    )
    ws["A1"].font = BOLD
    for row, column, title in titles:
        if title:
            ws.cell(row=row, column=column, value=title).font = BOLD


# ---------------------------------------------------------------- workbook


def _build(plan: Plan, analysis: _Analysis) -> tuple[Workbook, _CandidateSheet]:
    wb = Workbook()
    summary = wb.active
    summary.title = SUMMARY
    fleet = wb.create_sheet(FLEET)
    over_time = plan.over_time is not None
    monthly = wb.create_sheet(MONTHLY) if over_time else None
    periods = wb.create_sheet(PERIODS) if over_time else None
    cand_ws = wb.create_sheet(CANDIDATES)
    api = wb.create_sheet(BUILD_VS_API)
    points, frontier = _feasible_points(plan)
    charted = len(points) > 0 or (analysis.curves is not None and plan.cheapest_api is not None)
    charts = wb.create_sheet(CHARTS) if charted else None
    assumptions = wb.create_sheet(ASSUMPTIONS)
    names = _write_assumptions(wb, assumptions, plan)
    totals = _write_fleet(fleet, plan, names.gpu)
    if monthly is not None and periods is not None:
        _write_monthly(monthly, plan, names, _write_periods(periods, plan, names))
    api_rows = _write_build_vs_api(api, plan, totals, names, analysis)
    _write_summary(summary, plan, totals, names.gpu, api_rows)
    if charts is not None:
        _write_charts(charts, plan, analysis, points, frontier)
    cand = _CandidateSheet(cand_ws, plan.candidates)
    return wb, cand


# ---------------------------------------------------------------- read_back evaluator

_REF = re.compile(
    r"^(?:(?P<sheet>'(?:[^']|'')+'|[^'!]+)!)?"
    r"\$?(?P<c1>[A-Z]{1,3})\$?(?P<r1>\d+)(?::\$?(?P<c2>[A-Z]{1,3})\$?(?P<r2>\d+))?$"
)
_FUNCS = {"SUM(": "_sum(", "SUMPRODUCT(": "_sumproduct(", "MIN(": "_min(", "MAX(": "_max("}


def _numbers(args: Iterable[Any]) -> list[float]:
    out: list[float] = []
    for a in args:
        items = a if isinstance(a, list) else [a]
        out += [float(x) for x in items if isinstance(x, int | float) and not isinstance(x, bool)]
    return out


def _num(value: Any) -> Any:
    if value is None:
        return 0
    return int(value) if isinstance(value, bool) else value


def _sumproduct(*arrays: list[Any]) -> float:
    total = 0.0
    for items in zip(*arrays, strict=True):
        prod = 1.0
        for x in items:
            prod *= x if isinstance(x, int | float) and not isinstance(x, bool) else 0.0
        total += prod
    return total


_BUILTINS = {
    "_sum": lambda *a: sum(_numbers(a)),
    "_min": lambda *a: min(_numbers(a), default=0.0),
    "_max": lambda *a: max(_numbers(a), default=0.0),
    "_sumproduct": _sumproduct,
}


class _Evaluator:
    """Evaluate the small formula language the exporter writes, cell by cell, memoised."""

    def __init__(self, cells: dict[str, dict[str, Any]], names: dict[str, str]) -> None:
        self.cells, self.names = cells, names
        self.done: dict[str, Any] = {}
        self.active: set[str] = set()

    def cell(self, sheet: str, coord: str) -> Any:
        key = f"{sheet}!{coord}"
        if key in self.done:
            return self.done[key]
        if key in self.active:
            raise ValueError(f"circular reference at {key}")
        raw = self.cells.get(sheet, {}).get(coord)
        if isinstance(raw, str) and raw.startswith("="):
            self.active.add(key)
            try:
                raw = self.formula(sheet, raw)
            finally:
                self.active.discard(key)
        self.done[key] = raw
        return raw

    def reference(self, sheet: str, text: str) -> Any:
        text = self.names.get(text.lower(), text)
        m = _REF.match(text)
        if not m:
            raise ValueError(f"cannot evaluate reference {text!r}")
        if m["sheet"]:
            sheet = m["sheet"].strip("'").replace("''", "'")
        if not m["c2"]:
            return _num(self.cell(sheet, f"{m['c1']}{m['r1']}"))
        c1, c2 = sorted((col_index(m["c1"]), col_index(m["c2"])))
        r1, r2 = sorted((int(m["r1"]), int(m["r2"])))
        return [
            self.cell(sheet, f"{get_column_letter(c)}{r}")
            for r in range(r1, r2 + 1)
            for c in range(c1, c2 + 1)
        ]

    def formula(self, sheet: str, text: str) -> Any:
        parts: list[str] = []
        scope: dict[str, Any] = dict(_BUILTINS)
        for tok in Tokenizer(text).items:
            if tok.type == Token.OPERAND and tok.subtype == Token.RANGE:
                var = f"_v{len(scope)}"
                scope[var] = self.reference(sheet, tok.value)
                parts.append(var)
            elif tok.type == Token.OPERAND and tok.subtype == Token.NUMBER:
                parts.append(tok.value)
            elif tok.type == Token.FUNC and tok.subtype == Token.OPEN:
                if tok.value.upper() not in _FUNCS:
                    raise ValueError(f"unsupported function {tok.value!r} in {text!r}")
                parts.append(_FUNCS[tok.value.upper()])
            elif tok.type in (Token.FUNC, Token.PAREN) or tok.type == Token.SEP:
                parts.append(tok.value)
            elif tok.type in (Token.OP_IN, Token.OP_PRE) and tok.value in "+-*/^":
                parts.append("**" if tok.value == "^" else tok.value)
            elif tok.type == Token.WSPACE:
                continue
            else:
                raise ValueError(f"unsupported token {tok.value!r} in {text!r}")
        try:
            return eval("".join(parts), {"__builtins__": {}}, scope)
        except ZeroDivisionError:
            return None
