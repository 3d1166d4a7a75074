"""Terminal output for plans, estimates and comparisons. Formats; computes nothing new.

Everything fits 100 columns (tables drop their least important columns, prose wraps) unless
the layout is wide (`--wide`); tables are laid out by `render.tables`, the door to rich.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from planner.errors import plain
from planner.planning.accuracy import ExpectedError, MarginBounds, describe
from planner.planning.plan import PeriodPlan, Plan, TimePlan
from planner.render.labels import months_label
from planner.render.tables import Col, Layout, human, money, per_token_money, table, usd, wrap
from planner.schema.plan import ApiQuote, Deployment, FleetSummary
from planner.units import HOURS_PER_MONTH

# a smaller saving of the GPU mix is rounding: the optimum is the single-GPU-type plan
NO_SAVING_USD_PER_MONTH = 1e-3


def _layout_of(row: Mapping[str, Any]) -> str:
    """' (tp 8, pp 2 over 2 nodes)' for a layout beyond plain tp, else ''."""
    parts = [f"{k} {int(row[c])}" for k, c in (("pp", "pp"), ("ep", "ep"), ("dp", "dp_attention"))]
    extra = [p for p in parts if not p.endswith(" 1")]
    if not extra:
        return ""
    nodes = int(row["nodes_per_replica"])
    return f" (tp {int(row['tp'])}, {', '.join(extra)} over {nodes} node{'s' * (nodes > 1)})"


def _comm_detail(row: Mapping[str, Any]) -> str:
    """What the collectives line holds: tp all-reduces, EP all-to-all, stage sends."""
    detail = f"tp {row['tp']} all-reduce"
    if row["t_alltoall_ms"] > 0:
        detail += f"; all-to-all {row['t_alltoall_ms']:.3f}"
    if row["t_p2p_ms"] > 0:
        detail += f"; stage sends {row['t_p2p_ms']:.3f}"
    return detail


def render_estimate(
    row: Mapping[str, Any],
    layout: Layout = Layout(),
    expected: ExpectedError | None = None,
    bounds: MarginBounds | None = None,
) -> str:
    """A readable breakdown of one deployment, the error its prediction likely carries and,
    with `bounds`, the answer at the p90 margin."""
    head = (
        f"{row['model']} on {row['gpus_per_replica']} x {row['gpu']}{_layout_of(row)}  "
        f"{row['quant']} weights "
        f"({row['compute_dtype']} math), KV {row['kv_dtype']}, batch {row['batch']}, "
        f"{row['input_len']} in / {row['output_len']} out  [{row['engine']}]"
    )
    prompts = f" over {row['num_prompts']:,} prompts" if row["num_prompts"] else ""
    head += (
        f"\nLoad: {_load_text(row)}{prompts}; {row['batch_in_flight']} "
        f"sequence{'' if row['batch_in_flight'] == 1 else 's'} in flight (max_num_seqs "
        f"{row['max_num_seqs']}); {row['gpus']} "
        f"GPU{'' if row['gpus'] == 1 else 's'}"
    )
    mem = _memory_text(row)
    terms = [
        ("read weights", row["t_weights_ms"], f"{row['bytes_weights_per_step_gb']:.2f} GB/GPU"),
        ("read KV cache", row["t_kv_ms"], f"{row['bytes_kv_per_step_gb']:.2f} GB/GPU"),
        ("compute", row["t_compute_ms"], f"{row['flops_per_step_tflop']:.3f} TFLOP/GPU"),
        ("collectives", row["t_comm_ms"], _comm_detail(row)),
        ("fixed overhead", row["t_overhead_ms"], "launch, scheduling, sampling"),
        ("decode step", row["tpot_step_ms"], _step_detail(row)),
        (
            "prefill interference",
            row["tpot_ms"] - row["tpot_step_ms"] - row["tpot_first_round_ms"],
            "(B-1) x prefill share / (O-1)",
        ),
        *_first_round_term(row, "tpot_first_round_ms", "decodes through the wave's prefills"),
        ("TPOT", row["tpot_ms"], _tpot_detail(row)),
    ]
    bound = (
        f"Bound: {row['bound']} (intensity {row['intensity_flop_per_byte']:.1f} FLOP/B vs "
        f"ridge {row['ridge_flop_per_byte']:.0f} FLOP/B)"
    )
    serve = (
        f"Prefill {ms(row['prefill_ms'])} ms ({row['prefill_bound']}-bound); TTFT "
        f"{ms(row['ttft_ms'])} ms at this load, {ms(row['ttft_unloaded_ms'])} ms idle\n"
        f"{_throughput_text(row)}"
    )
    rows = [(n, ms(v, 3), d) for n, v, d in terms]
    tbl = table([Col("TPOT term"), Col("ms", "r"), Col("detail", priority=1)], rows, layout)
    ttft_rows = [(n, ms(v), d) for n, v, d in _ttft_terms(row)]
    ttft_tbl = table(
        [Col("TTFT term"), Col("ms", "r"), Col("detail", priority=1)], ttft_rows, layout
    )
    extra = speculation_lines(row)
    error = describe(expected, str(row["engine"])) + _bounds_text(bounds)
    tail = (*extra, _cost_text(row), error)
    prose = [wrap(x, layout) for x in (head, mem, "", "", bound, serve, *tail)]
    return "\n".join([*prose[:3], tbl, *prose[3:6], "", ttft_tbl, *prose[6:]])


def _bounds_text(bounds: MarginBounds | None) -> str:
    """'. At the p90 margin: TPOT 47.6 ms, ...' for the figures the record bounds, or ''."""
    if bounds is None:
        return ""
    parts = [
        f"{label} {ms(v)} {unit}"
        for label, v, unit in (
            ("TPOT", bounds.tpot_ms, "ms"),
            ("TTFT", bounds.ttft_ms, "ms"),
            ("throughput", bounds.throughput_tok_s, "tok/s"),
        )
        if v is not None
    ]
    if not parts:
        return ""
    return (
        ". At the p90 margin (what 90% of the measured rows came within, on the slow side): "
        + ", ".join(parts)
    )


def _tpot_detail(row: Mapping[str, Any]) -> str:
    """What the TPOT is: what a user sees between tokens; nothing with one output token."""
    if math.isfinite(row["tpot_ms"]):
        return "what a user sees"
    return "none: one output token, no time between tokens"


def ms(value: float, places: int = 1) -> str:
    """Milliseconds as the tables print them: `places` decimals, thousands separated and no
    decimal at or above 1,000 (`human`'s rule: TTFT 439,160, not 439160.0); n/a when
    undefined (the TPOT of one output token)."""
    v = float(value)
    if not math.isfinite(v):
        return "n/a"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{places}f}"


def _memory_text(row: Mapping[str, Any]) -> str:
    """Memory per GPU against the usable memory, one accounting (`planning.estimate.
    memory_fit`): the total and its parts are what the fit test counts, so it is over the
    usable memory exactly when it does not fit, short by the difference."""
    short = row["memory_shortfall_gb"]
    fit = "fits" if row["fits"] else f"DOES NOT FIT: short by {_gb(short)} GB"
    parts = [
        ("weights", row["weights_per_gpu_gb"], ""),
        ("KV cache", row["kv_cache_per_gpu_gb"], ""),
        ("activations", row["activations_per_gpu_gb"], " (a full prefill chunk's, and logits)"),
        ("runtime reserve", row["runtime_reserve_per_gpu_gb"], ""),
        ("drafter", row["draft_per_gpu_gb"], ""),
        ("shared prefix", row["prefix_cache_per_gpu_gb"], ""),
    ]
    shown = ", ".join(
        f"{n} {_gb(v)} GB{why}" for n, v, why in parts[:3] + [p for p in parts[3:] if p[1] > 0]
    )
    return (
        f"Memory per GPU: {row['memory_per_gpu_gb']:.1f} GB of {row['memory_usable_gb']:.1f}"
        f" usable ({fit}); {shown}; largest batch that fits: {row['max_batch']}"
    )


def _gb(v: float) -> str:
    """GB to one decimal, or two below 0.1 so a part or a shortfall never reads 0.0."""
    return f"{v:.1f}" if v >= 0.095 or v == 0 else f"{v:.2f}"


def _throughput_text(row: Mapping[str, Any]) -> str:
    """The load served (what the cost is at) beside the replica's capacity."""
    kind = row["load_kind"]
    how = {
        "concurrency": f"what {row['load_value']:g} clients send",
        "rate": "the rate offered",
        "utilization": f"{100 * row['load_value']:g}% of capacity, as solve plans",
    }[kind]
    n = row["capacity_batch"]
    return (
        f"Throughput {plain(row['throughput_tok_s'])} output tok/s, "
        f"{plain(row['requests_per_s'])} req/s served per replica ({how}); capacity "
        f"{plain(row['capacity_tok_s'])} output tok/s, {plain(row['capacity_requests_per_s'])}"
        f" req/s ({n} sequence{'s' * (n != 1)} in flight)"
    )


def _cost_text(row: Mapping[str, Any]) -> str:
    """The cost per hour, and per 1K output tokens and per request at the load served."""
    price = row["price_usd_per_gpu_hour"]
    if not math.isfinite(price):
        return "Cost: no price in the catalog for this GPU (pass --price)"
    per_1k = row["cost_per_1k_output_tokens_usd"]
    return (
        f"Cost {money(row['cost_per_hour_usd'])}/h ({row['gpus_per_replica']} x "
        f"{money(price)} {row['price_provider']}); at the load served "
        f"{usd(per_1k)} per 1K output tokens ({money(per_1k * 1e3)} per 1M), "
        f"{usd(row['cost_per_request_usd'])} per request"
    )


def _ttft_terms(row: Mapping[str, Any]) -> list[tuple[str, float, str]]:
    """The TTFT's terms of an estimate (planning.estimate._ttft_terms), those that round to
    0.0 ms left out (the prefill and the per-request latency always shown)."""
    terms = [
        ("prefill", row["ttft_prefill_ms"], f"the prompt's own, {row['prefill_bound']}-bound"),
        ("step in flight", row["ttft_step_align_ms"], "half a decode step, on arrival"),
        ("launched step", row["ttft_scheduler_lag_ms"], "one the overlap scheduler sent ahead"),
        (
            "per-request latency",
            row["ttft_request_ms"],
            "none: the roofline alone"
            if row["engine"] == "ideal"
            else "host work, fitted per engine (planner calibrate)",
        ),
        ("fused decode work", row["ttft_fused_ms"], "other sequences' decode in its passes"),
        ("behind prefills", row["ttft_prefill_wait_ms"], "other prompts' prefills first"),
        ("for a free slot", row["ttft_slot_wait_ms"], "clients beyond those in flight"),
    ]
    kept = [t for t in terms if t[0] in ("prefill", "per-request latency") or t[1] >= 0.05]
    kept += _first_round_term(row, "ttft_first_round_ms", "arrive at once on an idle replica")
    return [*kept, ("TTFT", row["ttft_ms"], f"at this load ({row['load_kind']})")]


def _first_round_term(row: Mapping[str, Any], key: str, how: str) -> list[tuple[str, float, str]]:
    """The benchmark's first round (`estimate --num-prompts`), the `key` column of `row`, as
    one more term; none without it."""
    if not row["num_prompts"]:
        return []
    share = f"{row['load_value']:g} of {row['num_prompts']:,} prompts"
    return [("first round", row[key], f"{share} ({row['first_round_share']:.0%}): {how}")]


def _load_text(row: Mapping[str, Any]) -> str:
    """The load in the words of `estimate --disaggregated`: a closed loop of C clients, an
    open loop at R req/s, or solve's planning load (a share of the replica's capacity)."""
    kind, value = row["load_kind"], row["load_value"]
    if kind == "concurrency":
        return f"concurrency {value:g} (closed loop)"
    if kind == "rate":
        return f"{plain(value)} req/s (open loop, Poisson)"
    return f"{100 * value:g}% of capacity (max_num_seqs kept full, as solve plans)"


def _step_detail(row: Mapping[str, Any]) -> str:
    """How the decode step follows from the terms above it: their sum, or with speculative
    decoding the verify pass and the draft steps shared over the tokens a step accepts (the
    terms above are the verify pass's; their sum is not the step)."""
    if row["speculative"] != "off":
        return f"(verify + {row['spec_tokens']} draft steps) / E, per token (below)"
    return "max(memory, compute) + comm + overhead"


def speculation_lines(row: Mapping[str, Any]) -> list[str]:
    """Speculative decoding and the prefix cache of an estimate, when used (issue #11)."""
    out = []
    if row["speculative"] != "off":
        k, a, e = row["spec_tokens"], row["spec_acceptance"], row["tokens_per_step"]
        out.append(
            f"Speculative decoding: {row['speculative']}, k {k} draft tokens, acceptance "
            f"{a:.2f} -> E = (1 - a^(k+1)) / (1 - a) = {e:.2f} tokens per step; the read and "
            f"compute terms are the verify pass over k + 1 tokens ({row['t_verify_ms']:.2f} "
            f"ms); decode step = (that + {k} draft steps, {row['t_draft_ms']:.2f} ms) / E; "
            f"drafter {row['draft_per_gpu_gb']:.2f} GB/GPU (weights + its KV)"
        )
    if row["prefix_cached_tokens"] > 0:
        out.append(
            f"Prefix cache: {row['prefix_cached_tokens']} of {row['input_len']} prompt tokens "
            f"served from cache (prefill computes {row['input_len'] - row['prefix_cached_tokens']}"
            f"); the shared prefix's KV, {row['prefix_cache_per_gpu_gb']:.2f} GB/GPU, is held "
            "once per replica"
        )
    return out


def serves(d: Deployment) -> str:
    """The request classes a fleet line carries load for, as the fleet table names them; a
    disaggregated pool says which (issue #11)."""
    found = [n for n, load in d.load_by_class.items() if load > 1e-9]
    named = ", ".join(found or list(d.tpot_ms_by_class)) or "-"
    if d.role == "aggregated":
        return named
    return f"{named} ({d.role} pool" + (", KV within one node)" if d.kv_link == "scale-up" else ")")


FLEET_COLUMNS = (
    Col("GPU"),
    Col("serves"),
    Col("GPUs", "r"),
    Col("tp", "r", 3),
    Col("quant", "l", 5),
    Col("kv", "l", 7),
    Col("batch", "r", 6),
    Col("replicas", "r"),
    Col("req/s", "r", 4),
    Col("TPOT ms", "r", 2),
    Col("TTFT ms", "r", 2),
    Col("$/h", "r", 8),
    Col("$/month", "r"),
)


def layout_text(d: Deployment) -> str:
    """'pp 2, ep 16, dp 16 over 2 nodes' for a multi-GPU layout beyond tp; '-' for plain tp."""
    parts = [f"{k} {v}" for k, v in (("pp", d.pp), ("ep", d.ep), ("dp", d.dp_attention)) if v > 1]
    if d.nodes_per_replica > 1:
        parts.append(f"{d.nodes_per_replica} nodes")
    return ", ".join(parts) or "-"


def _fleet_table(f: FleetSummary, layout: Layout) -> str:
    """The fleet table; a 'layout' column (pp, ep, dp attention, nodes) only when a line
    uses more than plain tensor parallelism, so single-node plans read as before."""
    rows = _fleet_rows(f)
    if all(layout_text(d) == "-" for d in f.deployments):
        return table(FLEET_COLUMNS, rows, layout)
    cols = (*FLEET_COLUMNS[:4], Col("layout"), *FLEET_COLUMNS[4:])
    rows = [(*r[:4], layout_text(d), *r[4:]) for r, d in zip(rows, f.deployments, strict=True)]
    return table(cols, rows, layout)


def _fleet_rows(f: FleetSummary) -> list[tuple]:
    return [
        (
            d.gpu,
            serves(d),
            d.gpus,
            d.tp,
            d.quant if d.speculative == "off" else f"{d.quant} {d.speculative}{d.spec_tokens}",
            d.kv_dtype,
            d.batch,
            d.replicas,
            f"{d.requests_per_s:,.2f}",
            "-" if d.role == "prefill" else f"{d.tpot_ms:.1f}",
            f"{d.ttft_ms:,.0f}",
            money(d.cost_per_hour_usd),
            money(d.cost_per_hour_usd * HOURS_PER_MONTH, 0),
        )
        for d in f.deployments
    ]


def _class_table(plan: Plan, layout: Layout) -> str:
    cols = [
        Col("class"),
        Col("req/s", "r"),
        Col("in tokens", "r"),
        Col("out tokens", "r"),
        Col("SLA TPOT ms", "r"),
        Col("SLA TTFT ms", "r"),
        Col("statistic", "l", 1),
    ]
    rows = [
        (
            c.name,
            human(c.requests_per_second),
            c.input_tokens,
            c.output_tokens,
            c.tpot_ms or "-",
            c.ttft_ms or "-",
            c.statistic,
        )
        for c in plan.classes
    ]
    return table(cols, rows, layout)


def _gap_text(gap: float) -> str:
    """'gap 2.0% to LP bound', or that none is proven (one model's share of a platform
    solve stopped at its limit: only the platform's gap is known)."""
    if math.isfinite(gap):
        return f"gap {gap:.1%} to LP bound"
    return "gap not proven for this model: see the platform's"


def _margin_title(plan: Plan) -> str:
    """', TPOT, TTFT and capacity at the p90 prediction margin' when planned to it (#10)."""
    return (
        ", TPOT, TTFT and capacity at the p90 prediction margin" if plan.prediction_margins else ""
    )


def render_plan(plan: Plan, layout: Layout = Layout()) -> str:
    """The terminal summary of a plan."""
    f = plan.fleet
    status = f.status if f.status == "optimal" else f"{f.status} ({_gap_text(f.gap)})"
    lines = [
        wrap(
            f"Plan for {plan.scenario_name}: {plan.model_id} on {plan.engine}, "
            f"{human(plan.total_requests_per_s)} req/s peak, utilisation target "
            f"{plan.utilisation:.0%}{_margin_title(plan)}  [solver: {status}]",
            layout,
        ),
        "",
        _class_table(plan, layout),
        "",
        _fleet_table(f, layout),
        "",
        wrap(
            f"Total: {f.total_gpus} GPUs, {money(f.total_cost_per_hour_usd)}/h, "
            f"{money(f.monthly_cost_usd, 0)}/month; "
            f"{per_token_money(f.cost_per_1k_output_tokens_usd)} per 1K output tokens "
            f"({money(f.cost_per_1k_output_tokens_usd * 1e3)} per 1M), "
            f"{money(f.cost_per_1m_tokens_usd, 3)} per 1M tokens (input + output)",
            layout,
        ),
    ]
    lines += [wrap(x, layout) for x in _comparison_lines(plan)]
    if plan.energy is not None:
        lines.append(wrap(energy_line(plan), layout, "  "))
    lines += [wrap(f"Note: {n}", layout, "  ") for n in plan.notes]
    if plan.over_time is not None:
        lines.append(render_time_plan(plan.over_time, layout))
    lines += ["", wrap(solves_line(plan), layout, "  ")]
    return "\n".join(lines)


def energy_line(plan: Plan) -> str:
    """Power and energy (and CO2 when the grid is given) per 1K output tokens."""
    e = plan.energy
    assert e is not None
    line = (
        f"Energy: {e.power_kw:,.2f} kW at {e.utilisation:.0%} of TDP x PUE {e.pue:g}, "
        f"{e.wh_per_1k_output_tokens:.3g} Wh per 1K output tokens at the peak"
    )
    if e.over_time_wh_per_1k_output_tokens is not None:
        line += f", {e.over_time_wh_per_1k_output_tokens:.3g} Wh over the plan over time"
    co2, co2_t = e.g_co2_per_1k_output_tokens, e.over_time_g_co2_per_1k_output_tokens
    if co2 is not None:
        line += f"; CO2 {co2:.3g} g per 1K output tokens at {e.grid_g_co2_per_kwh:g} g/kWh"
        line += f" ({co2_t:.3g} g over time)" if co2_t is not None else ""
    if e.missing_tdp:
        line += f" (no TDP in the catalog for {', '.join(e.missing_tdp)}: left out)"
    return line


def solves_line(plan: Plan) -> str:
    """Every solve behind the figures with its status, gap and time."""
    opt = plan.solver
    parts = [f"{f.name} {f.label} in {f.seconds:.2f} s" for f in plan.solves]
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
    if saving is not None and saving < -NO_SAVING_USD_PER_MONTH:
        # only a plan the solver did not prove optimal can cost more than a subset's
        return head + (
            f", {money(-saving, 0)}/month less than the plan above, which the solver stopped "
            f"before proving optimal ({plan.fleet.status}): raise solver.time_limit_s or "
            "solver.max_nodes"
        )
    if plan.fleet.status != "optimal":
        return head + " (the plan above uses one GPU type)"
    return head + " (the optimum uses one GPU type)"


def _cached_note(plan: Plan, api: ApiQuote) -> str:
    """How the API bills prefix-cached prompt tokens, when the plan has any (issue #11)."""
    if not any(c.prefix_cached_tokens for c in plan.classes):
        return ""
    if api.cached_input_usd_per_1m is None:
        return "; lists no cached-input price, so cached prompt tokens are billed in full"
    return f"; cached prompt tokens at ${per_1m(api.cached_input_usd_per_1m)} per 1M"


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
    if plan.over_time is not None:
        basis += f", averaged over {plan.over_time.horizon_months} months of growth"
    return (
        f"Cheapest API: {api.provider} {api.provider_model_id} "
        f"(${per_1m(api.input_usd_per_1m)}/${per_1m(api.output_usd_per_1m)} per 1M in/out"
        f"{_cached_note(plan, api)}, "
        f"as of {api.as_of}): {money(monthly, 0)}/month {basis}; {verdict} against the "
        f"{plan.self_hosted_basis}, {money(plan.self_hosted_monthly_usd, 0)}/month"
    )


def render_time_plan(tp: TimePlan, layout: Layout = Layout()) -> str:
    """Terminal summary of the plan over time."""
    lines = [
        "",
        wrap(_time_headline(tp), layout),
        _period_table(tp, layout),
        "",
        _month_table(tp, layout),
        "",
    ]
    lines += [wrap(x, layout) for x in _time_totals(tp)]
    lines += [wrap(f"Note: {n}", layout, "  ") for n in tp.notes]
    return "\n".join(lines)


def _time_headline(tp: TimePlan) -> str:
    """The horizon, the solver's status and the GPUs held for the whole horizon."""
    sol = tp.solution
    status = sol.status if sol.status == "optimal" else f"{sol.status}, gap {sol.gap:.1%}"
    held = tp.held_gpus()
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


def _period_table(tp: TimePlan, layout: Layout) -> str:
    """One row per (block of months, demand slot)."""
    rows = [
        (
            months_label(p.months),
            p.slot,
            f"{p.hours:,.0f}",
            f"{p.demand_requests_per_s:,.1f}",
            _gpu_mix(p),
            money(p.cost_usd, 0),
        )
        for p in tp.periods
    ]
    cols = [
        Col("months"),
        Col("slot", "r"),
        Col("hours", "r", 2),
        Col("req/s", "r"),
        Col("GPUs (R reserved/owned, OD on demand, S spot)"),
        Col("cost", "r"),
    ]
    return table(cols, rows, layout)


def _month_table(tp: TimePlan, layout: Layout) -> str:
    """One row per month: demand, cost by tier, total and $ per 1K output tokens."""
    owned = any(m.owned_usd for m in tp.monthly)
    cols = [
        Col("month", "r"),
        Col("peak req/s", "r", 2),
        Col("avg req/s", "r"),
        Col("reserved", "r", 3),
        *([Col("owned", "r", 3)] if owned else []),
        Col("on-demand", "r", 3),
        Col("spot", "r", 3),
        Col("total", "r"),
        Col("$/1K out", "r"),
        Col("$/1M out", "r", 1),
    ]
    rows = [
        (
            m.month,
            f"{m.peak_requests_per_s:,.1f}",
            f"{m.avg_requests_per_s:,.1f}",
            money(m.reserved_usd, 0),
            *([money(m.owned_usd, 0)] if owned else []),
            money(m.on_demand_usd, 0),
            money(m.spot_usd, 0),
            money(m.total_usd, 0),
            per_token_money(m.cost_per_1k_output_tokens_usd),
            money(m.cost_per_1k_output_tokens_usd * 1e3),
        )
        for m in tp.monthly
    ]
    return table(cols, rows, layout)


def _time_totals(tp: TimePlan) -> list[str]:
    """The horizon total beside all on-demand and all reserved for the peak."""
    sol = tp.solution
    lines = [
        f"Horizon total {money(sol.total_cost, 0)} "
        f"({per_token_money(tp.cost_per_1k_output_tokens_usd)} per 1K output tokens, "
        f"{money(tp.cost_per_1k_output_tokens_usd * 1e3)} per 1M)"
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


COMPARE_COLUMNS = (
    Col("provider", max_width=16),
    Col("endpoint", max_width=24),
    Col("$/1M\nin", "r", 3),
    Col("$/1M\nout", "r", 3),
    Col("$/1M\ncached", "r", 3),
    Col("$/request", "r", 4),
    Col("API\n$/month", "r"),
    Col("cheaper"),
    Col("break-even\npeak req/s", "r"),
    Col("break-even\ntokens/month", "r", 1),
)


def per_1m(usd: float) -> str:
    """An API's list price per 1M tokens in cents at least (0.10, not 0.1 beside 0.05), with
    any further digits it has (0.035)."""
    return f"{usd:.2f}" if round(usd, 2) == usd else f"{usd:g}"


def _compare_row(r, cached: bool) -> tuple:
    """One API's row; with prefix-cached prompt tokens, the cached-input price it bills them
    at ('-': none listed, billed at the input price) beside its other prices."""
    be, tokens = r.break_even_peak_requests_per_s, r.break_even_tokens_per_month
    price = r.quote.cached_input_usd_per_1m
    return (
        r.quote.provider,
        r.quote.provider_model_id,
        per_1m(r.quote.input_usd_per_1m),
        per_1m(r.quote.output_usd_per_1m),
        *((("-" if price is None else per_1m(price)),) if cached else ()),
        per_token_money(r.api_cost_per_request_usd),
        money(r.api_monthly_usd, 0),
        "API" if r.api_is_cheaper else "self",
        "never" if be is None else f"{be:,.2f}",
        "-" if tokens is None else human(tokens),
    )


def render_compare(plan: Plan, rows, layout: Layout = Layout(), notes: tuple[str, ...] = ()) -> str:
    """A table of every API offering against the self-hosted plan, a bar chart, and the
    analysis's notes (break-even plans stopped at the time limit, what was not computed)."""
    own = plan.self_hosted_monthly_usd
    apis = "; APIs bill each month's tokens, averaged the same way" if plan.over_time else ""
    head = wrap(
        f"Build vs buy for {plan.model_id}: {human(plan.total_requests_per_s)} req/s peak, "
        f"average {plan.average_demand_factor:.0%} of peak; self-hosted "
        f"{money(own, 0)}/month ({plan.self_hosted_basis}{apis})",
        layout,
    )
    if not rows:
        return head + f"\nNo API in the catalog serves {plan.model_id}."
    cached = any(c.prefix_cached_tokens for c in plan.classes)
    cols = (
        COMPARE_COLUMNS if cached else tuple(c for c in COMPARE_COLUMNS if "cached" not in c.header)
    )
    body = table(cols, [_compare_row(r, cached) for r in rows], layout)
    legend = wrap(
        (
            "cached: the price of prefix-cached prompt tokens (-: none listed, billed as input); "
            if cached
            else ""
        )
        + "cheaper: which costs less a month at this demand; break-even: the least peak demand "
        "at which self-hosting (re-planned at that volume) costs no more than the API, never: "
        "not up to 1000x this demand",
        layout,
    )
    tail = [wrap(f"Note: {n}", layout, "  ") for n in notes]
    return "\n".join([head, "", body, legend, "", _bars(own, rows[:8]), *tail])


def _bars(own: float, rows) -> str:
    """A small horizontal bar chart of monthly cost: self-hosted and the cheapest APIs."""
    items = [("self-hosted", own)] + [(f"{r.quote.provider}", r.api_monthly_usd) for r in rows]
    top = max(v for _, v in items) or 1.0
    width = max(len(n) for n, _ in items)
    return "\n".join(
        f"{n.ljust(width)}  {'#' * max(1, round(40 * v / top))} {money(v, 0)}" for n, v in items
    )
