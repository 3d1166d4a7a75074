"""The Summary sheet: the headline figures as live formulas, notes and the class table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openpyxl.worksheet.worksheet import Worksheet

from planner.planning.plan import Plan
from planner.render.xlsx.cells import finite, header, put
from planner.render.xlsx.names import (
    BUILD_VS_API,
    CLASS_TABLE_COLUMN,
    FACTOR_NAME,
    FLEET,
    HOURS_NAME,
    OVER_CAPACITY,
    SUMMARY_NOTES_ROW,
    SUMMARY_ROWS,
    SUMMARY_SOLVES_ROW,
    UTILISATION_NAME,
    Names,
    ref,
)
from planner.render.xlsx.styles import (
    BOLD,
    COUNT,
    MONEY,
    MONEY_FINE,
    MS,
    PERCENT,
    RATE,
    fit_widths,
)
from planner.schema.plan import FleetSummary
from planner.units import HOURS_PER_MONTH, SECONDS_PER_HOUR, TOKENS_PER_1K, TOKENS_PER_1M

# key -> (label, value or formula, planner value, number format, unit / note)
SummaryRow = tuple[str, Any, Any, str | None, str]


def _status(fleet: FleetSummary) -> str:
    if fleet.status == "optimal":
        return fleet.status
    gap = finite(fleet.gap)
    return f"{fleet.status} (gap {gap:.1%})" if gap is not None else fleet.status


def _single_gpu_formula(plan: Plan, price_names: dict[str, str]) -> str | None:
    single, gpu = plan.single_gpu_best, plan.single_gpu_best_gpu
    if single is None or gpu not in price_names:
        return None
    prices = {float(d.price_usd_per_gpu_hour) for d in single.deployments if d.gpu == gpu}
    if len(prices) != 1 or any(d.gpu != gpu for d in single.deployments):
        return None
    return f"={single.total_gpus}*{price_names[gpu]}"


@dataclass(frozen=True)
class _Refs:
    """The cell ranges and figures the Summary rows refer to, worked out once."""

    price_names: dict[str, str]
    rps: str
    inp: str
    out: str
    tok_in: float
    tok_out: float
    single_h: float | None
    single_m: float | None
    f_ref: dict[str, str]
    api_range: str
    api_names: tuple[str, str]  # the Build vs API provider and model id columns
    self_hosted: str


def _refs(plan: Plan, totals: dict[str, str], names: Names, api_rows: tuple[int, int]) -> _Refs:
    """Ranges of the Fleet and Build vs API sheets and the plan's figures, for the formulas."""
    last = 1 + len(plan.classes)
    rps, inp, out = (f"{c}2:{c}{last}" for c in "GHI")
    single = plan.single_gpu_best
    return _Refs(
        price_names=names.gpu,
        rps=rps,
        inp=inp,
        out=out,
        tok_in=plan.input_tokens_per_s,
        tok_out=plan.output_tokens_per_s,
        single_h=single.total_cost_per_hour_usd if single else None,
        single_m=single.monthly_cost_usd if single else None,
        f_ref={k: ref(FLEET, v) for k, v in totals.items()},
        api_range=f"{ref(BUILD_VS_API, f'F{api_rows[0]}')}:$F${api_rows[1]}",
        api_names=(
            f"{ref(BUILD_VS_API, f'A{api_rows[0]}')}:$A${api_rows[1]}",
            f"{ref(BUILD_VS_API, f'B{api_rows[0]}')}:$B${api_rows[1]}",
        ),
        self_hosted=ref(BUILD_VS_API, "F2"),
    )


def _summary_rows(
    plan: Plan,
    totals: dict[str, str],
    names: Names,
    api_rows: tuple[int, int],
) -> dict[str, SummaryRow]:
    """Every Summary row in sheet order: label, formula or value, planner value, format, note."""
    r = _refs(plan, totals, names, api_rows)
    return {
        **_identity_rows(plan),
        **_demand_rows(plan, r),
        **_cost_rows(plan, r),
        **_single_gpu_rows(plan, r),
        **_api_rows(plan, r, names),
    }


def _identity_rows(plan: Plan) -> dict[str, SummaryRow]:
    """The scenario, and the peak plan's solver status and gap."""
    fleet = plan.fleet
    return {
        "scenario": ("scenario", plan.scenario_name, None, None, ""),
        "model": ("model", plan.model_id, None, None, ""),
        "engine": (
            "engine",
            plan.engine,
            None,
            None,
            "TPOT, TTFT and capacity planned at the p90 prediction margin (its factors: "
            "Assumptions sheet, category 'prediction margin')"
            if plan.prediction_margins
            else "",
        ),
        "status": (
            "peak plan solver status",
            _status(fleet),
            None,
            None,
            "every solve's status and gap: Solves table below",
        ),
        "gap": (
            "optimality gap",
            fleet.gap,
            None,
            PERCENT,
            f"lower bound ${fleet.lower_bound_per_hour_usd:,.2f}/h"
            if finite(fleet.lower_bound_per_hour_usd) is not None
            else "",
        ),
    }


def _demand_rows(plan: Plan, r: _Refs) -> dict[str, SummaryRow]:
    """Utilisation and the demand in requests and tokens per second."""
    return {
        "utilisation": (
            "target utilisation",
            f"={UTILISATION_NAME}",
            plan.utilisation,
            PERCENT,
            "replicas are sized to run at this load",
        ),
        "demand_requests_per_s": (
            "total demand",
            f"=SUM({r.rps})",
            plan.total_requests_per_s,
            RATE,
            "req/s",
        ),
        "input_tokens_per_s": (
            "input tokens/s",
            f"=SUMPRODUCT({r.rps},{r.inp})",
            r.tok_in,
            COUNT,
            "tokens/s",
        ),
        "output_tokens_per_s": (
            "output tokens/s",
            f"=SUMPRODUCT({r.rps},{r.out})",
            r.tok_out,
            COUNT,
            "tokens/s",
        ),
    }


def _cost_rows(plan: Plan, r: _Refs) -> dict[str, SummaryRow]:
    """The fleet's cost per hour, month and token, and its GPUs."""
    fleet = plan.fleet
    return {
        "total_cost_per_hour_usd": (
            "self-hosted fleet $/h",
            f"={r.f_ref['cost_per_hour']}",
            fleet.total_cost_per_hour_usd,
            MONEY,
            "$/h",
        ),
        "monthly_cost_usd": (
            "self-hosted fleet $/month",
            f"={r.f_ref['cost_per_month']}",
            fleet.monthly_cost_usd,
            MONEY,
            f"$/month of {HOURS_PER_MONTH:g} h",
        ),
        "cost_per_1k_output_tokens_usd": (
            "$ per 1K output tokens",
            f"=B11/({SECONDS_PER_HOUR:.0f}*B10)*{TOKENS_PER_1K:.0f}" if r.tok_out > 0 else None,
            fleet.cost_per_1k_output_tokens_usd,
            MONEY_FINE,
            "$",
        ),
        "cost_per_1m_tokens_usd": (
            "$ per 1M tokens (input + output)",
            f"=B11/({SECONDS_PER_HOUR:.0f}*(B9+B10))*{TOKENS_PER_1M:.0f}"
            if r.tok_in + r.tok_out > 0
            else None,
            fleet.cost_per_1m_tokens_usd,
            MONEY_FINE,
            "$",
        ),
        "total_gpus": ("total GPUs", f"={r.f_ref['gpus']}", fleet.total_gpus, COUNT, "GPUs"),
    }


def _single_gpu_rows(plan: Plan, r: _Refs) -> dict[str, SummaryRow]:
    """The best single-GPU-type plan and what the mix saves against it."""
    single = plan.single_gpu_best
    return {
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
            _single_gpu_formula(plan, r.price_names) or r.single_h,
            r.single_h,
            MONEY,
            "$/h",
        ),
        "single_gpu_monthly_cost_usd": (
            "best single-GPU-type plan $/month",
            f"=B17*{HOURS_NAME}" if single else None,
            r.single_m,
            MONEY,
            "$/month",
        ),
        "mix_saving_monthly_usd": (
            "saving of the GPU mix",
            "=B18-B12" if single else None,
            plan.mix_saving_monthly_usd,
            MONEY,
            "$/month vs the single-GPU-type plan",
        ),
        "mix_saving_fraction": (
            "saving of the GPU mix, %",
            "=B19/B18" if r.single_m else None,
            plan.mix_saving_fraction,
            PERCENT,
            "",
        ),
    }


def _cheapest_name(r: _Refs) -> str:
    """'provider / model id' of the Build vs API row whose $/month is B22 (the least), live:
    an edited API price moves it with B22 (the first row of equal cost, as sorted)."""
    row = f"MATCH(B22,{r.api_range},0)"
    provider, model = r.api_names
    return f'=INDEX({provider},{row})&" / "&INDEX({model},{row})'


def _api_rows(plan: Plan, r: _Refs, names: Names) -> dict[str, SummaryRow]:
    """The cheapest API, the saving against it, capacity, energy and the capacity check."""
    api = plan.cheapest_api
    return {
        "cheapest_api": (
            "cheapest API",
            _cheapest_name(r) if api else "none: no API offers this model",
            f"{api.provider} / {api.provider_model_id}" if api else None,
            None,
            "the API of the lowest $/month on the Build vs API sheet (follows edited prices)"
            if api
            else "",
        ),
        "cheapest_api_monthly_cost_usd": (
            "cheapest API $/month",
            f"=MIN({r.api_range})" if api else None,
            plan.cheapest_api_monthly_usd,
            MONEY,
            "lowest $/month on the Build vs API sheet"
            + (" (API at average demand)" if plan.over_time is not None else ""),
        ),
        "api_saving_monthly_usd": (
            "self-host saving vs cheapest API",
            f"=B22-{r.self_hosted}" if api else None,
            plan.api_saving_monthly_usd,
            MONEY,
            f"$/month against the {plan.self_hosted_basis} (Build vs API row 2); negative "
            "means the API is cheaper",
        ),
        "capacity_requests_per_s": (
            "peak fleet capacity",
            f"={r.f_ref['capacity']}",
            plan.capacity_requests_per_s,
            RATE,
            "req/s at the utilisation above (Fleet sheet); GPU counts are the planner's",
        ),
        **_energy_rows(plan, names),
        "capacity_check": (
            "capacity check (peak)",
            f'=IF(B8>B24,"{OVER_CAPACITY}","ok")',
            None,
            None,
            "demand above the planned fleet's capacity is flagged (capacity at the planned "
            "token lengths and class mix: rerun planner after editing those)",
        ),
    }


def _energy_rows(plan: Plan, names: Names) -> dict[str, SummaryRow]:
    """Energy and CO2 per 1K output tokens of the peak fleet: live on the fleet's GPUs, the
    catalog TDPs, utilisation, PUE, grid intensity and output tokens/s."""
    e = plan.energy
    if e is None or names.pue is None:
        return {}
    lines = plan.fleet.deployments
    terms = [
        f"{ref(FLEET, f'G{i + 2}')}*{names.tdp[d.gpu]}"
        for i, d in enumerate(lines)
        if d.gpu in names.tdp
    ]
    power = f"({'+'.join(terms) or '0'})*{UTILISATION_NAME}*{names.pue}"
    out: dict[str, SummaryRow] = {
        "energy_wh_per_1k_output_tokens": (
            "energy per 1K output tokens",
            f"={power}/B10*{TOKENS_PER_1K:.0f}/{SECONDS_PER_HOUR:.0f}"
            if plan.output_tokens_per_s > 0
            else None,
            e.wh_per_1k_output_tokens,
            "0.000",
            "Wh: GPUs x TDP x utilisation x PUE / output tokens per s (peak fleet at peak)"
            + (
                f"; plan over time {e.over_time_wh_per_1k_output_tokens:.3g} Wh"
                if e.over_time_wh_per_1k_output_tokens is not None
                else ""
            ),
        )
    }
    if names.grid is not None:
        out["co2_g_per_1k_output_tokens"] = (
            "CO2 per 1K output tokens",
            f"=B26/1000*{names.grid}",
            e.g_co2_per_1k_output_tokens,
            "0.0000",
            "g: energy x grid intensity",
        )
    return out


def _workload(names: Names | None, key: str, cls: str, value: Any) -> Any:
    """A class's demand or token count: the Assumptions sheet's cell when it is named."""
    name = names.workload.get((key, cls)) if names is not None else None
    return f"={name}" if name else value


def _mean_level(plan: Plan, cls: str) -> Any:
    """A class's average demand as a fraction of its peak: the shared, editable factor when
    every class follows the one profile, else the class's own profile mean."""
    ot = plan.over_time
    if ot is None:
        return None
    return f"={FACTOR_NAME}" if ot.shared_profile else ot.class_mean_level.get(cls)


def _write_class_table(ws: Worksheet, plan: Plan, names: Names | None) -> None:
    col = CLASS_TABLE_COLUMN
    labels = ["class", "req/s", "input tokens", "output tokens", "SLA TPOT ms", "SLA TTFT ms"]
    labels += ["statistic"] + (["average / peak"] if plan.over_time is not None else [])
    header(ws, labels, column=col)
    fmts = [None, RATE, COUNT, COUNT, MS, MS, None, PERCENT]
    for i, c in enumerate(plan.classes):
        values = [
            c.name,
            _workload(names, "demand", c.name, c.requests_per_second),
            _workload(names, "input_tokens", c.name, c.input_tokens),
            _workload(names, "output_tokens", c.name, c.output_tokens),
            c.tpot_ms,
            c.ttft_ms,
            c.statistic,
        ]
        if plan.over_time is not None:
            values.append(_mean_level(plan, c.name))
        for j, v in enumerate(values):
            put(ws, 2 + i, col + j, v, fmts[j])


def _write_solves(ws: Worksheet, plan: Plan) -> None:
    """Every solve behind the figures with its status, gap and time: a time-limited solve
    never reads as optimal."""
    ws.cell(row=SUMMARY_SOLVES_ROW, column=1, value="Solves").font = BOLD
    header(ws, ["solve", "status", "gap", "seconds (limit)"], row=SUMMARY_SOLVES_ROW + 1)
    for i, fact in enumerate(plan.solves):
        r = SUMMARY_SOLVES_ROW + 2 + i
        put(ws, r, 1, fact.name)
        put(ws, r, 2, fact.label)
        put(ws, r, 3, fact.gap, PERCENT)
        put(ws, r, 4, f"{fact.seconds:.1f} s ({fact.backend}, limit {fact.time_limit_s:g} s)")


def write_summary(
    ws: Worksheet,
    plan: Plan,
    totals: dict[str, str],
    names: Names,
    api_rows: tuple[int, int],
) -> None:
    header(ws, ["item", "value", "planner value", "unit / note"])
    rows = _summary_rows(plan, totals, names, api_rows)
    for key, (label, value, planner, fmt, unit) in rows.items():
        r = SUMMARY_ROWS[key]
        ws.cell(row=r, column=1, value=label)
        put(ws, r, 2, value, fmt)
        put(ws, r, 3, planner, fmt)
        put(ws, r, 4, unit)
    _write_solves(ws, plan)
    ws.cell(row=SUMMARY_NOTES_ROW, column=1, value="Notes").font = BOLD
    notes = list(plan.notes) or ["(none)"]
    for i, note in enumerate(notes):
        ws.cell(row=SUMMARY_NOTES_ROW + 1 + i, column=1, value="note")
        put(ws, SUMMARY_NOTES_ROW + 1 + i, 2, note)
    _write_class_table(ws, plan, names)
    ws.freeze_panes = "A2"
    fit_widths(ws)
    ws.column_dimensions["B"].width = 24
    ws.column_dimensions["E"].width = 3
