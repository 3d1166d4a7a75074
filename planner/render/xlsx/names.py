"""The cell map: sheet names, where each figure sits, and the workbook's defined names."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from openpyxl import Workbook
from openpyxl.utils import quote_sheetname
from openpyxl.workbook.defined_name import DefinedName

from planner.render.xlsx.styles import (
    COUNT,
    GB,
    MONEY,
    MONEY_1M,
    MONEY_FINE,
    MS,
    PERCENT,
    RATE,
    UNIT_PRICE,
)

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

HOURS_NAME = "hours_per_month"
UTILISATION_NAME = "utilisation"
GROWTH_NAME = "growth"
FACTOR_NAME = "average_demand_factor"
DISCOUNT_NAME = "reserved_discount"
PUE_NAME = "pue"
GRID_NAME = "grid_g_co2_per_kwh"
WORKLOAD_FIELDS = {
    "demand": "demand",
    "input tokens": "input_tokens",
    "output tokens": "output_tokens",
}

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
    "capacity_requests_per_s": 24,
    "capacity_check": 25,
    "energy_wh_per_1k_output_tokens": 26,
    "co2_g_per_1k_output_tokens": 27,
}
SUMMARY_CELLS: dict[str, str] = {key: f"B{row}" for key, row in SUMMARY_ROWS.items()}
SUMMARY_SOLVES_ROW = 30  # "Solves" title; header below, one row per Plan.solves (at most 4)
SUMMARY_NOTES_ROW = 37
CLASS_TABLE_COLUMN = 6  # F: the per-class table on the Summary sheet
OVER_CAPACITY = "OVER CAPACITY: rerun planner"

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
    ("speculative decoding", None),  # issue #11
    ("role", None),  # aggregated, or a disaggregated prefill/decode pool (issue #11)
)

# plan.candidates column -> (header, number format)
CANDIDATE_COLUMNS: tuple[tuple[str, str, str | None], ...] = (
    ("class", "class", None),
    ("gpu", "GPU", None),
    ("tp", "TP", None),
    # multi-node replicas, expert parallel, DP attention (issue #11 parts 1-2)
    ("pp", "PP", None),
    ("ep", "EP", None),
    ("dp_attention", "DP attention", None),
    ("gpus_per_replica", "GPUs/replica", COUNT),
    ("nodes_per_replica", "nodes/replica", COUNT),
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
    ("peak req/s", RATE),
    ("input tokens", COUNT),
    ("fleet capacity req/s (busiest slot)", RATE),
    ("capacity check", None),
    ("$ per 1M output tokens", MONEY_1M),
)

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


@dataclass
class Names:
    """The workbook's defined names for prices and plan-over-time assumptions."""

    gpu: dict[str, str] = field(default_factory=dict)  # fleet GPU -> its price name
    tier: dict[tuple[str, str], str] = field(default_factory=dict)  # (tier, gpu) -> name
    growth: str | None = None
    factor: str | None = None
    owned: bool = False  # an owned-GPU hourly cost is among the prices
    # (field, class) -> name of the scenario's demand, input tokens, output tokens cell
    workload: dict[tuple[str, str], str] = field(default_factory=dict)
    discount: str | None = None  # the reserved discount vs on-demand, when prices follow it
    tdp: dict[str, str] = field(default_factory=dict)  # GPU -> name of its TDP cell
    pue: str | None = None
    grid: str | None = None


def defined_name(prefix: str, ident: str, taken: set[str]) -> str:
    """An Excel-safe workbook name: letters, digits, underscore; never a cell reference."""
    base = f"{prefix}_{re.sub(r'[^A-Za-z0-9_]', '_', ident).strip('_').lower() or 'x'}"
    name, n = base[:250], 2
    while name.lower() in taken:
        name, n = f"{base[:245]}_{n}", n + 1
    taken.add(name.lower())
    return name


def add_name(wb: Workbook, name: str, sheet: str, coord: str) -> None:
    """Define `name` as the absolute reference to one cell."""
    wb.defined_names[name] = DefinedName(name, attr_text=ref(sheet, coord))


def ref(sheet: str, coord: str) -> str:
    """The absolute reference to one cell, e.g. 'Summary'!$B$2."""
    found = re.match(r"([A-Z]+)(\d+)$", coord)
    if found is None:
        raise ValueError(f"not a cell coordinate: {coord!r}")
    col, row = found.groups()
    return f"{quote_sheetname(sheet)}!${col}${row}"
