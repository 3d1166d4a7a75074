"""Terminal tables for plans, estimates and comparisons. Formats; computes nothing new."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from planner.planning.plan import PeriodPlan, Plan, TimePlan
from planner.render.labels import months_label
from planner.schema.plan import FleetSummary
from planner.units import HOURS_PER_MONTH


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A plain aligned table: text left, numbers right."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [align[i] == "r" if i < len(align) else _is_num(rows, i) for i in range(len(headers))]
    lines = []
    for j, r in enumerate(cells):
        parts = [
            c.rjust(w) if numeric[i] else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        lines.append("  ".join(parts).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _is_num(rows: Sequence[Sequence[Any]], i: int) -> bool:
    return bool(rows) and all(
        isinstance(r[i], int | float | np.number)
        or str(r[i]).lstrip("$-").replace(",", "").replace(".", "").replace("%", "").isdigit()
        for r in rows
    )


def _cell(v: Any) -> str:
    if isinstance(v, float | np.floating):
        if float(v).is_integer():
            return f"{int(v):,}"
        return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


# a smaller saving of the GPU mix is rounding: the optimum is the single-GPU-type plan
NO_SAVING_USD_PER_MONTH = 1e-3


def money(v: float, digits: int = 2) -> str:
    return f"${v:,.{digits}f}" if math.isfinite(v) else "n/a"


def render_estimate(row: pd.Series) -> str:
    """A readable breakdown of one deployment."""
    head = (
        f"{row['model']} on {row['tp']} x {row['gpu']}  {row['quant']} weights "
        f"({row['compute_dtype']} math), KV {row['kv_dtype']}, batch {row['batch']}, "
        f"{row['input_len']} in / {row['output_len']} out  [{row['engine']}]"
    )
    fit = "fits" if row["fits"] else f"DOES NOT FIT: short by {row['memory_shortfall_gb']:.1f} GB"
    mem = (
        f"Memory per GPU: {row['memory_per_gpu_gb']:.1f} GB of {row['memory_usable_gb']:.1f}"
        f" usable ({fit}); weights {row['weights_per_gpu_gb']:.1f} GB, KV cache "
        f"{row['kv_cache_per_gpu_gb']:.1f} GB, activations {row['activations_per_gpu_gb']:.2f}"
        f" GB; largest batch that fits: {row['max_batch']}"
    )
    terms = [
        ("read weights", row["t_weights_ms"], f"{row['bytes_weights_per_step_gb']:.2f} GB/GPU"),
        ("read KV cache", row["t_kv_ms"], f"{row['bytes_kv_per_step_gb']:.2f} GB/GPU"),
        ("compute", row["t_compute_ms"], f"{row['flops_per_step_tflop']:.3f} TFLOP/GPU"),
        ("all-reduce", row["t_comm_ms"], f"tp {row['tp']}"),
        ("fixed overhead", row["t_overhead_ms"], "launch, scheduling, sampling"),
        ("decode step", row["tpot_step_ms"], "max(memory, compute) + comm + overhead"),
        ("prefill interference", row["tpot_ms"] - row["tpot_step_ms"], "B x prefill share / O"),
        ("TPOT", row["tpot_ms"], "what a user sees"),
    ]
    bound = (
        f"Bound: {row['bound']} (intensity {row['intensity_flop_per_byte']:.1f} FLOP/B vs "
        f"ridge {row['ridge_flop_per_byte']:.0f} FLOP/B)"
    )
    serve = (
        f"Prefill {row['prefill_ms']:.1f} ms ({row['prefill_bound']}-bound); TTFT "
        f"{row['ttft_ms']:.1f} ms at planned load, {row['ttft_unloaded_ms']:.1f} ms idle\n"
        f"Throughput {row['throughput_tok_s']:,.0f} output tok/s, "
        f"{row['requests_per_s']:.2f} req/s per replica"
    )
    price = row["price_usd_per_gpu_hour"]
    cost = (
        "Cost: no price in the catalog for this GPU (pass --price)"
        if not math.isfinite(price)
        else f"Cost {money(row['cost_per_hour_usd'])}/h ({row['tp']} x {money(price)} "
        f"{row['price_provider']}), {money(row['cost_per_1k_output_tokens_usd'], 4)} "
        f"per 1K output tokens, {money(row['cost_per_request_usd'], 5)} per request"
    )
    tbl = table(["TPOT term", "ms", "detail"], [(n, float(v), d) for n, v, d in terms], "lrl")
    return "\n".join([head, mem, "", tbl, "", bound, serve, cost])


def _fleet_rows(f: FleetSummary) -> list[tuple]:
    rows = []
    for d in f.deployments:
        rows.append(
            (
                d.gpu,
                d.gpus,
                d.tp,
                d.quant,
                d.kv_dtype,
                d.batch,
                d.replicas,
                f"{d.requests_per_s:.2f}",
                f"{d.tpot_ms:.1f}",
                f"{d.ttft_ms:.0f}",
                money(d.cost_per_hour_usd),
                money(d.cost_per_hour_usd * HOURS_PER_MONTH, 0),
            )
        )
    return rows


def render_plan(plan: Plan) -> str:
    """The terminal summary of a plan."""
    f = plan.fleet
    status = f.status if f.status == "optimal" else f"{f.status} (gap {f.gap:.1%} to LP bound)"
    lines = [
        f"Plan for {plan.scenario_name}: {plan.model_id} on {plan.engine}, "
        f"{plan.total_requests_per_s:g} req/s peak, utilisation target "
        f"{plan.utilisation:.0%}  [solver: {status}]",
        "",
    ]
    lines.append(
        table(
            ["class", "req/s", "in", "out", "SLA TPOT ms", "SLA TTFT ms", "stat"],
            [
                (
                    c.name,
                    f"{c.requests_per_second:g}",
                    c.input_tokens,
                    c.output_tokens,
                    c.tpot_ms or "-",
                    c.ttft_ms or "-",
                    c.statistic,
                )
                for c in plan.classes
            ],
        )
    )
    lines += [
        "",
        table(
            [
                "GPU",
                "GPUs",
                "tp",
                "quant",
                "kv",
                "batch",
                "replicas",
                "req/s",
                "TPOT ms",
                "TTFT ms",
                "$/h",
                "$/month",
            ],
            _fleet_rows(f),
        ),
    ]
    lines += [
        "",
        f"Total: {f.total_gpus} GPUs, {money(f.total_cost_per_hour_usd)}/h, "
        f"{money(f.monthly_cost_usd, 0)}/month; {money(f.cost_per_1k_output_tokens_usd, 4)}"
        f" per 1K output tokens, {money(f.cost_per_1m_tokens_usd, 3)} per 1M tokens "
        f"(input + output)",
    ]
    lines += _comparison_lines(plan)
    lines += [f"Note: {n}" for n in plan.notes]
    if plan.over_time is not None:
        lines.append(render_time_plan(plan.over_time))
    lines += ["", solves_line(plan)]
    return "\n".join(lines)


def solves_line(plan: Plan) -> str:
    """Every solve behind the figures with its status, gap and time."""
    opt = plan.solver
    parts = [f"{f.name} {f.label} in {f.seconds:.1f} s" for f in plan.solves]
    return f"Solves ({opt.backend}, limit {opt.time_limit_s:g} s each): " + "; ".join(parts)


def _comparison_lines(plan: Plan) -> list[str]:
    """The plan against the best single-GPU-type plan and the cheapest API."""
    out = [""]
    if plan.single_gpu_best is not None:
        out.append(_single_gpu_line(plan))
    out.append(_api_line(plan))
    return out


def _single_gpu_line(plan: Plan) -> str:
    """The best single-GPU-type plan and what the GPU mix saves against it."""
    s, saving, share = plan.single_gpu_best, plan.mix_saving_monthly_usd, plan.mix_saving_fraction
    assert s is not None
    head = (
        f"Best single-GPU-type plan: {s.total_gpus} x {plan.single_gpu_best_gpu}, "
        f"{money(s.monthly_cost_usd, 0)}/month"
    )
    if saving is not None and share is not None and saving > NO_SAVING_USD_PER_MONTH:
        return head + f"; the mix saves {money(saving, 0)}/month ({share:.1%})"
    return head + " (the optimum uses one GPU type)"


def _api_line(plan: Plan) -> str:
    """The cheapest API at the average demand against the fleet sized for the peak."""
    api, monthly, saving = (
        plan.cheapest_api,
        plan.cheapest_api_monthly_usd,
        plan.api_saving_monthly_usd,
    )
    if api is None or monthly is None or saving is None:
        return f"No API in the catalog serves {plan.model_id}."
    verdict = (
        f"self-hosting saves {money(saving, 0)}/month"
        if saving > 0
        else f"the API is cheaper by {money(-saving, 0)}/month"
    )
    factor = plan.average_demand_factor
    basis = (
        "at this demand around the clock"
        if factor == 1.0
        else f"at the profile's average demand ({factor:.0%} of the peak)"
    )
    return (
        f"Cheapest API: {api.provider} {api.provider_model_id} "
        f"(${api.input_usd_per_1m:g}/${api.output_usd_per_1m:g} per 1M in/out, "
        f"as of {api.as_of}): {money(monthly, 0)}/month {basis}; {verdict} against the "
        "fleet sized for the peak"
    )


def render_time_plan(tp: TimePlan) -> str:
    """Terminal summary of the plan over time."""
    lines = ["", _time_headline(tp), _period_table(tp), "", _month_table(tp), ""]
    lines += _time_totals(tp)
    lines += [f"Note: {n}" for n in tp.notes]
    return "\n".join(lines)


def _time_headline(tp: TimePlan) -> str:
    """The horizon, the solver's status and the GPUs held for the whole horizon."""
    sol = tp.solution
    status = sol.status if sol.status == "optimal" else f"{sol.status}, gap {sol.gap:.1%}"
    held = ", ".join(f"{n} x {g} reserved" for g, n in sol.reserved.items() if n)
    held += "".join(f", {n} x {g} owned" for g, n in sol.owned.items() if n)
    return (
        f"Plan over {tp.horizon_months} months [{status}]: "
        f"{held or 'nothing reserved'}; the rest rented per period."
    )


def _gpu_mix(period: PeriodPlan) -> str:
    """GPUs of a period per type: held (R), on demand (OD) and spot (S)."""
    return "; ".join(
        f"{g}: {n.held}R+{n.on_demand}OD+{n.spot}S"
        for g, n in period.gpus.items()
        if n.in_use or n.reserved
    )


def _period_table(tp: TimePlan) -> str:
    """One row per (block of months, demand slot)."""
    rows = [
        (
            months_label(p.months),
            p.slot,
            f"{p.hours:,.0f}",
            f"{p.demand_requests_per_s:.1f}",
            _gpu_mix(p),
            money(p.cost_usd, 0),
        )
        for p in tp.periods
    ]
    headers = ["months", "slot", "hours", "req/s", "GPUs (R reserved/owned, OD, S spot)", "cost"]
    return table(headers, rows, "lrrrlr")


def _month_table(tp: TimePlan) -> str:
    """One row per month: demand, cost by tier, total and $ per 1K output tokens."""
    return table(
        ["month", "avg req/s", "reserved", "on-demand", "spot", "total", "$/1K out"],
        [
            (
                m.month,
                f"{m.avg_requests_per_s:.1f}",
                money(m.reserved_usd, 0),
                money(m.on_demand_usd, 0),
                money(m.spot_usd, 0),
                money(m.total_usd, 0),
                money(m.cost_per_1k_output_tokens_usd, 5),
            )
            for m in tp.monthly
        ],
    )


def _time_totals(tp: TimePlan) -> list[str]:
    """The horizon total beside all on-demand and all reserved for the peak."""
    sol = tp.solution
    lines = [
        f"Horizon total {money(sol.total_cost, 0)} "
        f"({money(tp.cost_per_1k_output_tokens_usd, 5)} per 1K output tokens)"
    ]
    od, saving, share = (
        tp.all_on_demand_cost_usd,
        tp.saving_vs_all_on_demand_usd,
        tp.saving_vs_all_on_demand_fraction,
    )
    if od is not None and saving is not None and share is not None:
        lines.append(
            f"All on-demand: {money(od, 0)}; the mixed plan saves {money(saving, 0)} ({share:.1%})"
        )
    if tp.all_reserved_cost is not None:
        gpus = ", ".join(f"{n} x {g}" for g, n in tp.all_reserved_gpus.items())
        lines.append(f"All reserved for the peak ({gpus}): {money(tp.all_reserved_cost, 0)}")
    return lines


def render_compare(plan: Plan, rows) -> str:
    """A table of every API offering against the self-hosted plan, and a bar chart."""
    own = plan.fleet.monthly_cost_usd
    head = (
        f"Build vs buy for {plan.model_id}: {plan.total_requests_per_s:g} req/s peak, "
        f"average {plan.average_demand_factor:.0%} of peak; self-hosted fleet "
        f"{money(own, 0)}/month ({plan.fleet.total_gpus} GPUs, sized for the peak, 24/7)"
    )
    if not rows:
        return head + f"\nNo API in the catalog serves {plan.model_id}."
    body = table(
        [
            "provider",
            "endpoint",
            "$/1M in",
            "$/1M out",
            "$/request",
            "API $/month",
            "vs self",
            "break-even peak req/s",
            "break-even tokens/month",
        ],
        [
            (
                r.quote.provider,
                r.quote.provider_model_id[:40],
                f"{r.quote.input_usd_per_1m:g}",
                f"{r.quote.output_usd_per_1m:g}",
                f"{r.api_cost_per_request_usd:.6f}",
                money(r.api_monthly_usd, 0),
                "API cheaper" if r.api_is_cheaper else "self cheaper",
                "never in range"
                if r.break_even_peak_requests_per_s is None
                else f"{r.break_even_peak_requests_per_s:,.2f}",
                ""
                if r.break_even_tokens_per_month is None
                else f"{r.break_even_tokens_per_month:,.3g}",
            )
            for r in rows
        ],
        "llrrrrlrr",
    )
    return "\n".join([head, "", body, "", _bars(own, rows[:8])])


def _bars(own: float, rows) -> str:
    """A small horizontal bar chart of monthly cost: self-hosted and the cheapest APIs."""
    items = [("self-hosted", own)] + [(f"{r.quote.provider}", r.api_monthly_usd) for r in rows]
    top = max(v for _, v in items) or 1.0
    width = max(len(n) for n, _ in items)
    return "\n".join(
        f"{n.ljust(width)}  {'#' * max(1, round(40 * v / top))} {money(v, 0)}" for n, v in items
    )
