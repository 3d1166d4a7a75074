"""Terminal tables for plans, estimates and comparisons. Formats; computes nothing new."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from planner.planning.plan import Plan
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


def money(v: float, digits: int = 2) -> str:
    return f"${v:,.{digits}f}" if math.isfinite(v) else "n/a"


def render_estimate(row: pd.Series) -> str:
    """A readable breakdown of one deployment."""
    head = (
        f"{row['model']} on {row['tp']} x {row['gpu']}  {row['quant']} weights "
        f"({row['compute_dtype']} math), KV {row['kv_dtype']}, batch {row['batch']}, "
        f"{row['input_len']} in / {row['output_len']} out  [{row['engine']}]"
    )
    head += (
        f"\nLoad: {row['load_kind']} {row['load_value']:g}; {row['batch_in_flight']} sequences "
        f"in flight (max_num_seqs {row['max_num_seqs']}); {row['gpus']} GPUs"
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
        (
            "prefill interference",
            row["tpot_ms"] - row["tpot_step_ms"],
            "(B-1) x prefill share / (O-1)",
        ),
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
    return "\n".join(lines)


def _comparison_lines(plan: Plan) -> list[str]:
    f, out = plan.fleet, [""]
    if plan.single_gpu_best is not None:
        s = plan.single_gpu_best
        saving = s.total_cost_per_hour_usd - f.total_cost_per_hour_usd
        out.append(
            f"Best single-GPU-type plan: {s.total_gpus} x {plan.single_gpu_best_gpu}, "
            f"{money(s.monthly_cost_usd, 0)}/month"
            + (
                f"; the mix saves {money(saving * HOURS_PER_MONTH, 0)}/month "
                f"({saving / s.total_cost_per_hour_usd:.1%})"
                if saving > 1e-6
                else " (the optimum uses one GPU type)"
            )
        )
    api = plan.cheapest_api
    if api is None:
        out.append(f"No API in the catalog serves {plan.model_id}.")
    else:
        factor = plan.average_demand_factor
        monthly = api.monthly_cost_usd * factor
        diff = monthly - f.monthly_cost_usd
        verdict = (
            f"self-hosting saves {money(diff, 0)}/month"
            if diff > 0
            else f"the API is cheaper by {money(-diff, 0)}/month"
        )
        basis = (
            "at this demand around the clock"
            if factor == 1.0
            else f"at the profile's average demand ({factor:.0%} of the peak)"
        )
        out.append(
            f"Cheapest API: {api.provider} {api.provider_model_id} "
            f"(${api.input_usd_per_1m:g}/${api.output_usd_per_1m:g} per 1M in/out, "
            f"as of {api.as_of}): {money(monthly, 0)}/month {basis}; {verdict} against the "
            "fleet sized for the peak"
        )
    return out


def render_time_plan(tp) -> str:
    """Terminal summary of the plan over time."""
    sol = tp.solution
    status = sol.status if sol.status == "optimal" else f"{sol.status}, gap {sol.gap:.1%}"
    held = ", ".join(f"{n} x {g} reserved" for g, n in sol.reserved.items() if n)
    held += "".join(f", {n} x {g} owned" for g, n in sol.owned.items() if n)
    lines = [
        "",
        f"Plan over {tp.horizon_months} months [{status}]: "
        f"{held or 'nothing reserved'}; the rest rented per period.",
    ]
    gpu_cols = [c[: -len("_in_use")] for c in tp.periods.columns if c.endswith("_in_use")]
    rows = []
    for _, r in tp.periods.iterrows():
        mix = "; ".join(
            f"{g}: {r[f'{g}_reserved'] + r[f'{g}_owned']}R+{r[f'{g}_on_demand']}OD"
            f"+{r[f'{g}_spot']}S"
            for g in gpu_cols
            if r[f"{g}_in_use"] or r[f"{g}_reserved"]
        )
        demand = sum(r[c] for c in tp.periods.columns if c.startswith("demand_"))
        rows.append(
            (
                r["months"],
                int(r["slot"]),
                f"{r['hours']:,.0f}",
                f"{demand:.1f}",
                mix,
                money(r["cost_usd"], 0),
            )
        )
    lines.append(
        table(
            ["months", "slot", "hours", "req/s", "GPUs (R reserved/owned, OD, S spot)", "cost"],
            rows,
            "lrrrlr",
        )
    )
    m = tp.monthly
    lines += [
        "",
        table(
            ["month", "avg req/s", "reserved", "on-demand", "spot", "total", "$/1K out"],
            [
                (
                    int(r.month),
                    f"{r.avg_requests_per_s:.1f}",
                    money(r.reserved_usd, 0),
                    money(r.on_demand_usd, 0),
                    money(r.spot_usd, 0),
                    money(r.total_usd, 0),
                    money(r.cost_per_1k_output_tokens_usd, 5),
                )
                for r in m.itertuples()
            ],
        ),
    ]
    lines.append("")
    lines.append(
        f"Horizon total {money(sol.total_cost, 0)} "
        f"({money(tp.cost_per_1k_output_tokens_usd, 5)} per 1K output tokens)"
    )
    if tp.all_on_demand is not None and tp.all_on_demand.status != "infeasible":
        od = tp.all_on_demand.total_cost
        lines.append(
            f"All on-demand: {money(od, 0)}; the mixed plan saves "
            f"{money(od - sol.total_cost, 0)} ({(od - sol.total_cost) / od:.1%})"
        )
    if tp.all_reserved_cost is not None:
        res = tp.all_reserved_cost
        gpus = ", ".join(f"{n} x {g}" for g, n in tp.all_reserved_gpus.items())
        lines.append(f"All reserved for the peak ({gpus}): {money(res, 0)}")
    lines += [f"Note: {n}" for n in tp.notes]
    return "\n".join(lines)


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
                "API cheaper" if r.api_monthly_usd < own else "self cheaper",
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
