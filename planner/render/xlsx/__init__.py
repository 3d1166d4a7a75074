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
    B5  peak plan status                 text; "status (gap x%)" when not optimal
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
    B21 cheapest API                     =INDEX(provider)&" / "&INDEX(model id) of the Build
                                         vs API row whose $/month is B22 (MATCH); C21 text
    B22 cheapest API, $/month            =MIN('Build vs API' API $/month column) (the
                                         average month of the horizon with a plan over time)
    B23 self-host saving vs API, $/month =B22-'Build vs API'!F2 (the plan over time's
                                         average month when there is one, else the fleet)
    B24 peak fleet capacity, req/s       =Fleet capacity total (follows utilisation)
    B25 capacity check                   =IF(B8>B24,"OVER CAPACITY: rerun planner","ok")
    B26 energy, Wh per 1K output tokens  =(GPUs x tdp_<gpu>)*utilisation*pue/B10*1000/3600
    B27 CO2, g per 1K output tokens      =B26/1000*grid_g_co2_per_kwh (when the grid is given)
    A30 "Solves": solve, status, gap, seconds (limit) for each of `Plan.solves`
    A37 "Notes", then one planner note per row from A38 (text in B)
    ==  ===============================  ==================================================

    The per-class table sits at F1:L(1+n) (M: average / peak with a plan over time): name,
    req/s, input tokens, output tokens (each =demand_<class>, input_tokens_<class>,
    output_tokens_<class> on the Assumptions sheet), SLA TPOT ms, SLA TTFT ms, statistic.

Fleet
    Row 1 header, one row per deployment from row 2, then a "Total" row (row n+2).
    Columns (`FLEET_COLUMNS`): A GPU, B TP, C quant, D KV dtype, E batch, F replicas,
    G GPUs (=F*B), H $/GPU-h (=price_<gpu>, a defined name on the Assumptions sheet),
    I $/h (=F*B*H), J $/month (=I*hours_per_month), K planner $/h (number), L requests/s,
    M capacity req/s (=planned capacity*utilisation/planned utilisation), N load share
    (=L/L_total), O capacity used (=L/M), P TPOT ms and Q TTFT ms (predicted, worst served
    class), R SLA TPOT ms and S SLA TTFT ms (tightest served class), T per-class detail,
    U price provider, V speculative decoding, W role (aggregated, prefill or decode pool;
    issue #11).
    The Total row sums F, G, I, J, K, L, M, N.

Monthly (plan over time)
    Row 1 header, one row per month from row 2 (`MONTHLY_COLUMNS`): A month, B avg req/s
    (=SUMPRODUCT(class req/s, average/peak)*(1+growth)^(A-1)), C output tokens
    (=SUMPRODUCT(req/s, output tokens, average/peak)*3600*hours_per_month*growth), D reserved
    $ and E owned $
    (=SUMPRODUCT(held GPUs, held $/GPU-h)*hours_per_month over the held table below),
    F on-demand $ and G spot $ (=SUM of the month's block on Periods / months in block),
    H total $ (=SUM(D:G)), I $ per 1K output tokens (=H/C*1000), J planner total $ and
    K planner $ per 1K (numbers), L peak req/s, M input tokens (live like B and C), N the
    capacity of the month's block in its busiest slot (follows utilisation), O capacity
    check (=IF(L>N,"OVER CAPACITY: rerun planner","ok")), P $ per 1M output tokens.
    Row n+2 "Total": C..H and M summed, I =H/C*1000, J, K, O any month over capacity.
    Rows n+4..n+7: all on-demand and all reserved for the busiest period's peak as
    horizon totals in H (planner numbers at the planner's prices), each followed by the
    saving of this plan (=that - H<total>, % in I, planner figure in J). Row n+9 the
    "held for the whole horizon" title, row n+10 its header, then one row per GPU type:
    A GPU, B reserved GPUs, C =price_reserved_<gpu>, D owned GPUs, E =price_owned_<gpu>.
    Notes below (GPU counts stay as planned: they cannot be live), then a stacked column
    chart of D:G by month on its own page; frozen at B2.

Periods (plan over time)
    Row 1 header, one row per `PeriodPlan` of `TimePlan.periods` (block of months, slot):
    A period, B months ("4-6"), C first month, D months in block, E slot, F share of the
    hours, G hours (=F*hours_per_month*D), then demand per class req/s, then per GPU type
    its reserved, owned, on-demand, spot and in-use GPUs, then reserved $, owned $,
    on-demand $, spot $ (each =(GPUs x named tier price summed over GPU types)*G), total $
    (=SUM of the four) and planner $ (number). Frozen at C2.

Candidates
    Row 1 header, one row per `plan.sheet_candidates` row (`CANDIDATE_COLUMNS`): every
    evaluated candidate but the batches above the first its configuration's memory cannot
    hold; autofilter over the whole table, header frozen. NaN/inf cells are left empty.

Build vs API
    Row 1 header; row 2 what APIs are compared with: the plan over time's average month
    (=Monthly total / months) when there is one, else the fleet (Fleet totals); from row 3
    one row per API quote: A provider, B model id, C $/1M input, D $/1M output,
    E $/h (=(Summary!B9*C+Summary!B10*D)*3600/1e6), F $/month (=E*hours_per_month; with a
    plan over time the horizon's Monthly input and output tokens x C, D / 1e6 / months),
    G $ per 1K output tokens, H planner $/month (number), I self-host saving $/month
    (=F-$F$2), J source, K as of, L break-even peak req/s and M break-even tokens/month
    (numbers from `buildvsbuy.compare`; empty where self-hosting never wins). Notes
    below the table.

Charts (no formulas: planner figures at the planner's prices)
    A scatter of $ per 1K output tokens vs TPOT of the SLA-feasible candidates (one
    series per GPU, log y, the cost-vs-TPOT frontier per class as a line) at A2, and
    self-hosted fleet vs every API $/month against peak req/s (log-log,
    `buildvsbuy.cost_curves` and `BuildVsBuy.api_curves`, titled by whether the lines cross,
    the plan itself as a point) below it. Their tables start at row `CHART_TABLE_ROW`:
    candidates A:G (at most `MAX_CHART_POINTS`, sampled evenly along TPOT, grouped by GPU),
    frontier I:K, curves from M (volume, self-hosted, one column per API), then this plan.

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
    purchase, amortisation, power and hosting inputs), plus `growth` (the scenario's
    growth per month, when the horizon has more than one month) and
    `average_demand_factor` (mean of the demand profile).
    Also named: demand_<class>, input_tokens_<class>, output_tokens_<class>, tdp_<gpu>,
    pue and grid_g_co2_per_kwh (energy), reserved_discount (a reserved price derived from it
    is the formula =price_<gpu>*(1-reserved_discount)). Every shaded input drives the
    figures that depend on it (costs, tokens, $ per 1K, API bills, capacity at the edited
    utilisation with capacity checks, energy); nothing re-plans: replica and GPU counts and
    latencies are the planner's.

Print setup (`printing`): every sheet landscape, one page wide, its header row repeated,
a print area over its cells and charts, a page break before every chart.

openpyxl stores formulas without computed values, so every formula cell that carries a
planner figure has that figure beside it as a number (Summary column C, Fleet column K,
Build vs API column H, Monthly columns J:K, Periods' last column), and `read_back(path)`
re-evaluates the workbook's formulas in Python (from the workbook's own, possibly edited,
input cells) for tests and checks; tests/test_workbook_recalc.py checks them against
LibreOffice.

The break-even volumes and cost curves re-solve the fleet MIP at many volumes (0.02-3 s
for the shipped scenarios); `write_workbook` runs them unless the caller passes
`comparisons=` and `curves=`. The write is atomic: a temporary file in the target's
folder, then `os.replace`.

The package, one module per responsibility (only these modules import openpyxl):
`names` the cell map (sheet names, rows and columns, defined names), `styles` number
formats, fonts, fills and widths, `cells` cell-safe values and writing them, `analysis`
break-even volumes and cost curves, one module per sheet (`summary`, `fleet`,
`monthly` for Periods and Monthly, `candidates`, `build_vs_api`, `charts`,
`assumptions`), `workbook` the orchestration and the atomic write, `readback` the
formula evaluator.
"""

from __future__ import annotations

# `os` and `tempfile` as the atomic write uses them (tests patch `export.os.replace` and
# `export.tempfile.NamedTemporaryFile`)
import os  # noqa: F401
import tempfile  # noqa: F401

from planner.render.colours import PALETTE
from planner.render.xlsx.charts import MAX_CHART_POINTS
from planner.render.xlsx.monthly import PERIOD_COUNTS, PERIOD_TIERS, TIER_LABELS
from planner.render.xlsx.names import (
    API_COLUMNS,
    ASSUMPTION_COLUMNS,
    ASSUMPTIONS,
    ASSUMPTIONS_HEADER_ROW,
    BASE_SHEETS,
    BUILD_VS_API,
    CANDIDATE_COLUMNS,
    CANDIDATES,
    CHART_POINT_COLUMNS,
    CHART_TABLE_ROW,
    CHARTS,
    CLASS_TABLE_COLUMN,
    FACTOR_NAME,
    FLEET,
    FLEET_COLUMNS,
    GROWTH_NAME,
    HOURS_NAME,
    MONTHLY,
    MONTHLY_COLUMNS,
    PERIODS,
    SHEETS,
    SUMMARY,
    SUMMARY_CELLS,
    SUMMARY_NOTES_ROW,
    SUMMARY_ROWS,
    UTILISATION_NAME,
)
from planner.render.xlsx.readback import read_back
from planner.render.xlsx.styles import (
    ASSUMPTION_FILL,
    BOLD,
    COUNT,
    GB,
    HOURS_FMT,
    MAX_WIDTH,
    MONEY,
    MONEY_FINE,
    MS,
    PERCENT,
    RATE,
    UNIT_PRICE,
)
from planner.render.xlsx.workbook import write_workbook

__all__ = [
    "API_COLUMNS",
    "ASSUMPTIONS",
    "ASSUMPTIONS_HEADER_ROW",
    "ASSUMPTION_COLUMNS",
    "ASSUMPTION_FILL",
    "BASE_SHEETS",
    "BOLD",
    "BUILD_VS_API",
    "CANDIDATES",
    "CANDIDATE_COLUMNS",
    "CHARTS",
    "CHART_POINT_COLUMNS",
    "CHART_TABLE_ROW",
    "CLASS_TABLE_COLUMN",
    "COUNT",
    "FACTOR_NAME",
    "FLEET",
    "FLEET_COLUMNS",
    "GB",
    "GROWTH_NAME",
    "HOURS_FMT",
    "HOURS_NAME",
    "MAX_CHART_POINTS",
    "MAX_WIDTH",
    "MONEY",
    "MONEY_FINE",
    "MONTHLY",
    "MONTHLY_COLUMNS",
    "MS",
    "PALETTE",
    "PERCENT",
    "PERIODS",
    "PERIOD_COUNTS",
    "PERIOD_TIERS",
    "RATE",
    "SHEETS",
    "SUMMARY",
    "SUMMARY_CELLS",
    "SUMMARY_NOTES_ROW",
    "SUMMARY_ROWS",
    "TIER_LABELS",
    "UNIT_PRICE",
    "UTILISATION_NAME",
    "read_back",
    "write_workbook",
]
