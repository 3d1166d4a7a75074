"""The Assumptions sheet: every input as a row, the prices and conventions as named cells."""

from __future__ import annotations

import math
from typing import Any

from openpyxl import Workbook
from openpyxl.worksheet.worksheet import Worksheet

from planner.planning.plan import Plan, TimePlan
from planner.render.xlsx.cells import clean, finite, header
from planner.render.xlsx.names import (
    ASSUMPTION_COLUMNS,
    ASSUMPTIONS,
    ASSUMPTIONS_HEADER_ROW,
    DISCOUNT_NAME,
    FACTOR_NAME,
    GRID_NAME,
    GROWTH_NAME,
    HOURS_NAME,
    PUE_NAME,
    UTILISATION_NAME,
    WORKLOAD_FIELDS,
    Names,
    add_name,
    defined_name,
)
from planner.render.xlsx.stream import StreamedCells
from planner.render.xlsx.styles import (
    ASSUMPTION_FILL,
    COUNT,
    PERCENT,
    RATE,
    UNIT_PRICE,
    fit_widths,
)
from planner.units import HOURS_PER_MONTH


def _fleet_prices(plan: Plan) -> dict[str, tuple[float, str]]:
    """GPU id -> (price per GPU-hour, provider) for the fleet and the single-GPU plan."""
    out: dict[str, tuple[float, str]] = {}
    fleets = [plan.fleet] + ([plan.single_gpu_best] if plan.single_gpu_best else [])
    for fleet in fleets:
        for d in fleet.deployments:
            out.setdefault(d.gpu, (float(d.price_usd_per_gpu_hour), d.price_provider))
    return out


def _price_row(rows: list[list[Any]], gpu: str, price: float) -> int | None:
    """The index of an existing price row of `gpu` at exactly `price`, if any."""
    return next(
        (
            i
            for i, r in enumerate(rows)
            if r[0] == "price"
            and r[1] == gpu
            and finite(r[3]) is not None
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
            and finite(r[3]) is not None
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


def _assumption_rows(plan: Plan) -> tuple[list[list[Any]], dict[str, int], Names]:
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
    rows += [list(r) for r in plan.assumption_rows]  # planning.assumptions.COLUMNS order
    named = {HOURS_NAME: 0, UTILISATION_NAME: _utilisation_row(rows, plan)}
    taken = {HOURS_NAME, UTILISATION_NAME, GROWTH_NAME, FACTOR_NAME, DISCOUNT_NAME}
    taken |= {PUE_NAME, GRID_NAME}
    names = Names()
    _workload_names(plan, rows, named, names, taken)
    _energy_rows(plan, rows, named, names, taken)
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
        name = defined_name("price", gpu, taken)
        named[name] = idx
        names.gpu[gpu] = name
    if plan.over_time is not None:
        _time_price_rows(plan.over_time, _fleet_prices(plan), rows, named, names, taken)
        _time_rows(plan, rows, named, names)
    return rows, named, names


def _workload_names(
    plan: Plan, rows: list[list[Any]], named: dict[str, int], names: Names, taken: set[str]
) -> None:
    """Name each class's demand, input and output tokens row: the Summary's class table
    reads them, so editing one moves every figure that depends on it."""
    classes = {c.name for c in plan.classes}
    for i, r in enumerate(rows):
        if r[0] == "scenario" and r[1] in classes and r[2] in WORKLOAD_FIELDS:
            key = (WORKLOAD_FIELDS[r[2]], str(r[1]))
            if key not in names.workload:
                name = defined_name(key[0], key[1], taken)
                named[name] = i
                names.workload[key] = name


def _energy_rows(
    plan: Plan, rows: list[list[Any]], named: dict[str, int], names: Names, taken: set[str]
) -> None:
    """Name each fleet GPU's catalog TDP and add the scenario's PUE and grid intensity as
    shaded inputs: the Summary's energy and CO2 per 1K output tokens read them."""
    e = plan.energy
    if e is None:
        return
    for i, r in enumerate(rows):
        if r[0] == "gpu" and r[2] == "TDP" and r[1] in e.tdp_w and r[1] not in names.tdp:
            name = defined_name("tdp", str(r[1]), taken)
            named[name] = i
            names.tdp[str(r[1])] = name
    inputs = [(PUE_NAME, "PUE (facility / IT power)", e.pue, "ratio", "pue")]
    if e.grid_g_co2_per_kwh is not None:
        inputs.append(
            (GRID_NAME, "grid carbon intensity", e.grid_g_co2_per_kwh, "g CO2/kWh", "grid")
        )
    for name, label, value, unit, attr in inputs:
        source = f"scenario energy.{name}" if attr == "grid" else "scenario energy.pue"
        rows.append(["scenario", "energy", label, value, unit, source, "scenario", True])
        named[name] = len(rows) - 1
        setattr(names, attr, name)


def _time_price_rows(
    ot: TimePlan,
    fleet: dict[str, tuple[float, str]],
    rows: list[list[Any]],
    named: dict[str, int],
    names: Names,
    taken: set[str],
) -> None:
    """One named row per tier price of the plan over time (`TimePlan.prices`); an on-demand
    price the fleet also pays at shares the fleet's named cell."""
    for fact in ot.prices:
        tier, gpu, price = fact.plan_tier, fact.gpu, float(fact.usd_per_gpu_hour)
        idx, prefix = None, f"price_{tier}"
        if tier == "on_demand":
            own = names.gpu.get(gpu)
            if own is not None and math.isclose(fleet[gpu][0], price, rel_tol=1e-12, abs_tol=0.0):
                names.tier[tier, gpu] = own  # the very cell the Fleet sheet prices from
                continue
            idx = _price_row(rows, gpu, price)
            prefix = "price_on_demand" if own is not None else "price"
        names.owned |= tier == "owned"
        if fact.discount_vs_on_demand is not None and ("on_demand", gpu) in names.tier:
            _discount_row(fact.discount_vs_on_demand, rows, named, names)
            od = names.tier["on_demand", gpu]
            rows.append(
                [
                    "price",
                    gpu,
                    f"{fact.tier.replace('_', ' ')} $/GPU-hour",
                    f"={od}*(1-{DISCOUNT_NAME})" + _times(fact.term_factor),
                    "$/GPU-h",
                    f"{fact.source} (a formula: follows the on-demand price and the discount)",
                    "",
                    False,
                ]
            )
            name = defined_name(prefix, gpu, taken)
            named[name] = len(rows) - 1
            names.tier[tier, gpu] = name
            continue
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
        name = defined_name(prefix, gpu, taken)
        named[name] = idx
        names.tier[tier, gpu] = name


def _times(factor: float) -> str:
    """A formula's factor for a reserved term paid beyond the horizon ('' when 1)."""
    return "" if factor == 1.0 else f"*{factor!r}"


def _discount_row(
    discount: float, rows: list[list[Any]], named: dict[str, int], names: Names
) -> None:
    """The scenario's reserved discount vs on-demand as one named, shaded input (once)."""
    if names.discount is not None:
        return
    rows.append(
        [
            "scenario",
            "finance.reserved",
            "reserved discount vs on-demand",
            discount,
            "fraction",
            "scenario finance.reserved.discount_vs_on_demand",
            "scenario",
            True,
        ]
    )
    named[DISCOUNT_NAME] = len(rows) - 1
    names.discount = DISCOUNT_NAME


def _time_rows(plan: Plan, rows: list[list[Any]], named: dict[str, int], names: Names) -> None:
    """Named rows for growth (when a later month can grow) and the average demand factor."""
    ot = plan.over_time
    assert ot is not None
    if len(ot.monthly) > 1:
        rows.append(
            [
                "scenario",
                "finance",
                "growth per month",
                ot.growth_per_month,
                "fraction",
                "scenario finance.growth_per_month",
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


def _how_to_edit(plan: Plan, names: Names) -> str:
    how = (
        "Change a shaded named cell (hours_per_month, price_<gpu>, demand_<class>, "
        "input_tokens_<class>, output_tokens_<class>, utilisation) and every figure that "
        "depends on it recomputes: costs, tokens/s, $ per 1K, API bills, and the fleet's "
        "capacity at that utilisation with a capacity check. Nothing re-plans: replica and "
        "GPU counts and latencies are the planner's (rerun planner for new ones). The "
        "capacity is the planned replicas' req/s at the planned token lengths and class mix: "
        "it follows the utilisation only, so after editing input or output tokens, or moving "
        "demand between classes, the check compares against the old capacity (longer outputs "
        "need more replicas): rerun planner."
    )
    if plan.over_time is not None:
        how += (
            " Plan over time: price_reserved_<gpu>, price_spot_<gpu>, price_owned_<gpu>, "
            "price_<gpu> (on demand), reserved_discount, growth and average_demand_factor "
            "drive the Monthly, Periods and Build vs API sheets (a reserved price derived from "
            "the discount is a formula on the on-demand price); demand, input and output "
            "tokens drive the volumes, tokens, $ per 1K and API bills, and a capacity check "
            "flags months whose demand exceeds the planned fleet. The GPU counts stay as "
            "planned: they cannot be live (rerun planner to re-plan)."
        )
    if names.owned:
        how += (
            " An owned GPU's $/GPU-hour is one figure combining purchase price, "
            "amortisation, power (TDP x utilisation x PUE x electricity) and hosting from "
            "the scenario's finance.owned; those inputs are summarised, not listed here."
        )
    return how


def write_assumptions(wb: Workbook, ws: Worksheet, plan: Plan) -> tuple[Names, StreamedCells]:
    """The Assumptions sheet: the legend and header by openpyxl, the rows streamed
    (`render/xlsx/stream.py`, issue 16: 2,300 cells on the chatbot), returned for
    `write_workbook` to splice in."""
    rows, named, names = _assumption_rows(plan)
    cells = StreamedCells(ws)
    ws["A1"] = "assumption"
    ws["A1"].fill = ASSUMPTION_FILL
    ws["B1"] = (
        "Shaded rows are assumptions (scenario inputs and planner conventions), "
        "not sourced catalog facts."
    )
    ws["A2"] = "how to edit"
    ws["B2"] = _how_to_edit(plan, names)
    header(ws, ASSUMPTION_COLUMNS, row=ASSUMPTIONS_HEADER_ROW)
    name_of = {idx: name for name, idx in named.items()}
    first = ASSUMPTIONS_HEADER_ROW + 1
    for i, values in enumerate(rows):
        r = first + i
        unit = values[4] if isinstance(values[4], str) else ""
        fmt = {"$/GPU-h": UNIT_PRICE, "fraction": PERCENT}.get(unit)
        value = clean(values[3])
        if fmt is None and isinstance(value, int | float) and abs(value) >= 1000:
            fmt = COUNT if float(value).is_integer() else RATE
        row = [*values[:8], name_of.get(i)]
        fill = ASSUMPTION_FILL if clean(values[7]) is True else None
        cells.put_row(r, 1, row, [None, None, None, fmt, *[None] * 5], fill)
    for name, idx in named.items():
        add_name(wb, name, ASSUMPTIONS, f"D{first + idx}")
    ws.freeze_panes = f"A{first}"
    fit_widths(ws, {**cells.widths, 2: max(14, cells.widths.get(2, 0))})
    ws.column_dimensions["B"].width = min(ws.column_dimensions["B"].width, 30)
    return names, cells
