"""Terminal text and JSON for `planner capacity` (a fixed fleet) and `planner job` (a batch
job). Formats; computes nothing."""

from __future__ import annotations

from typing import Any

from planner.planning.batch_job import JobPlan
from planner.planning.capacity import Capacity
from planner.render.tables import Col, Layout, human, money, table, wrap


def _fleet_text(fleet: dict[str, int], usable: dict | None, keys: dict | None) -> str:
    """'16 x h100-sxm (8 usable: hardware.inventory), 4 x h200': the fleet and, where a key
    caps a type, how many of it the answer may use."""
    usable, keys = usable or {}, keys or {}
    return ", ".join(
        f"{n} x {g}" + (f" ({usable[g]} usable: {keys[g]})" if g in keys else "")
        for g, n in sorted(fleet.items())
    )


def layout_text(pp: int, ep: int, dp_attention: int, gpus: int, replicas: int) -> str:
    """'pp 2, ep 8, dp 2 (16 GPUs each)' for a layout beyond plain tp, else '-': the GPUs a
    replica takes are tp x pp x dp, so a line's GPUs and cost read from the table."""
    parts = [f"{k} {v}" for k, v in (("pp", pp), ("ep", ep), ("dp", dp_attention)) if v > 1]
    return f"{', '.join(parts)} ({gpus // max(replicas, 1)} GPUs each)" if parts else "-"


def _with_layout(cols: list[Col], rows: list[list], texts: list[str], at: int):
    """The table with a 'layout' column after column `at`, only when some line has one."""
    if all(t == "-" for t in texts):
        return cols, rows
    cols = [*cols[: at + 1], Col("layout"), *cols[at + 1 :]]
    return cols, [[*r[: at + 1], t, *r[at + 1 :]] for r, t in zip(rows, texts, strict=True)]


def capacity_dict(result: Capacity) -> dict[str, Any]:
    """One stable JSON object: the largest rate, tokens/s, deployments, binding, latencies."""
    return {
        "scenario": result.scenario_name,
        "model": result.model_id,
        "fleet": result.fleet,
        "usable_gpus": result.usable,
        "status": result.status,
        "max_requests_per_second": result.max_requests_per_second,
        "upper_bound_requests_per_second": result.upper_bound_requests_per_second,
        "relative_gap": result.relative_gap,
        "max_output_tokens_per_s": result.max_output_tokens_per_s,
        "max_total_tokens_per_s": result.max_total_tokens_per_s,
        "planned_utilisation": result.utilisation,
        "prediction_margin": result.prediction_margin,  # issue #10
        "class_mix": result.mix,
        "gpus_used": result.gpus_used,
        "fleet_cost_per_hour_usd": result.fleet_cost_per_hour_usd,
        "deployments": [
            {
                "gpu": d.gpu,
                "tp": d.tp,
                "quant": d.quant,
                "kv_dtype": d.kv_dtype,
                "batch": d.batch,
                "pp": d.pp,
                "ep": d.ep,
                "dp_attention": d.dp_attention,
                "replicas": d.replicas,
                "gpus": d.gpus,
                "gpus_per_replica": d.gpus // max(d.replicas, 1),
                "requests_per_s": sum(d.load_by_class.values()),
                "load_by_class": d.load_by_class,
                "share_of_capacity": d.utilisation,
                "tpot_ms_by_class": d.tpot_ms_by_class,
                "ttft_ms_by_class": d.ttft_ms_by_class,
                "batch_limit": d.batch_limit,
            }
            for d in result.deployments
        ],
        "binding": list(result.binding),
        "at_rate": None if result.at_rate is None else _at_rate_dict(result),
        "notes": list(result.notes),
    }


def _at_rate_dict(result: Capacity) -> dict[str, Any]:
    assert result.at_rate is not None
    return {
        "requests_per_second": result.rate_requests_per_second,
        "classes": [
            {
                "class": c.name,
                "requests_per_second": c.requests_per_second,
                "tpot_ms": c.tpot_ms,
                "ttft_ms": c.ttft_ms,
                "statistic": c.statistic,
                "sla_tpot_ms": c.tpot_sla_ms,
                "sla_ttft_ms": c.ttft_sla_ms,
            }
            for c in result.at_rate
        ],
    }


def _margin_clause(margin: str) -> str:
    """', predictions at the p90 margin' when the answer is planned to it (issue #10)."""
    return "" if margin == "none" else f", predictions at the {margin} margin"


def render_capacity(result: Capacity, layout: Layout = Layout()) -> str:
    """The answer in a sentence, the deployments, what binds, and latencies at --rate."""
    fleet = _fleet_text(result.fleet, result.usable, result.usable_key)
    head = (
        f"{result.scenario_name}: {fleet} serves at most "
        f"{human(result.max_requests_per_second)} requests/s of {result.model_id} "
        f"({human(result.max_output_tokens_per_s)} output tokens/s, "
        f"{human(result.max_total_tokens_per_s)} tokens/s in all) with every class within its "
        f"SLA, replicas planned at {result.utilisation:.0%} load"
        f"{_margin_clause(result.prediction_margin)}; solver {result.status}, "
        f"bound {human(result.upper_bound_requests_per_second)} requests/s."
    )
    cols = [
        Col("gpu"), Col("tp", "r"), Col("quant"), Col("kv", priority=2), Col("batch", "r"),
        Col("replicas", "r"), Col("gpus", "r"), Col("req/s", "r"), Col("TPOT ms", "r"),
        Col("TTFT ms", "r", priority=1),
    ]  # fmt: skip
    rows = [
        [
            d.gpu, d.tp, d.quant, d.kv_dtype, d.batch, d.replicas, d.gpus,
            sum(d.load_by_class.values()), max(d.tpot_ms_by_class.values()),
            max(d.ttft_ms_by_class.values()),
        ]
        for d in result.deployments
    ]  # fmt: skip
    texts = [
        layout_text(d.pp, d.ep, d.dp_attention, d.gpus, d.replicas) for d in result.deployments
    ]
    cols, rows = _with_layout(cols, rows, texts, 2)
    parts = [wrap(head, layout), "", table(cols, rows, layout), "", "Binding:"]
    parts += [wrap(f"- {b}", layout, indent="  ") for b in result.binding]
    if result.at_rate is not None:
        parts += ["", _at_rate_text(result, layout)]
    if result.notes:
        parts += [""] + [wrap(f"Note: {n}", layout, indent="  ") for n in result.notes]
    return "\n".join(parts)


def _at_rate_text(result: Capacity, layout: Layout) -> str:
    assert result.at_rate is not None
    cols = [
        Col("class"), Col("req/s", "r"), Col("TPOT ms", "r"), Col("SLA", "r"),
        Col("TTFT ms", "r"), Col("stat"), Col("SLA", "r"),
    ]  # fmt: skip
    rows = [
        [c.name, c.requests_per_second, c.tpot_ms, c.tpot_sla_ms, c.ttft_ms, c.statistic,
         c.ttft_sla_ms]
        for c in result.at_rate
    ]  # fmt: skip
    head = (
        f"At {human(result.rate_requests_per_second or 0.0)} requests/s on the same deployments "
        "(TTFT re-queued at the lower load; TPOT at the configured batch, an upper bound):"
    )
    return wrap(head, layout) + "\n" + table(cols, rows, layout)


def job_dict(result: JobPlan) -> dict[str, Any]:
    """One stable JSON object: job cost, GPU-hours, finishing time, lines, API prices."""
    return {
        "scenario": result.scenario_name,
        "model": result.model_id,
        "status": result.status,
        "requests": result.requests,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "deadline_hours": result.deadline_hours,
        "finish_hours": result.finish_hours,
        "job_cost_usd": result.cost_usd,
        "prediction_margin": result.prediction_margin,  # issue #10
        "lower_bound_usd": result.lower_bound_usd,
        "gpu_hours": result.gpu_hours,
        "cost_per_1m_tokens_usd": result.cost_per_1m_tokens_usd,
        "pricing_tier": result.pricing_tier,
        "spot_allowed": result.spot_allowed,
        "deployments": [vars(x) for x in result.lines],
        "api": [vars(q) for q in result.api],
        "notes": list(result.notes),
    }


def render_job(result: JobPlan, layout: Layout = Layout()) -> str:
    """The job's cost and timing in a sentence, the deployments, the API prices, notes."""
    head = (
        f"{result.scenario_name}: {human(result.requests)} "
        f"{'request' if result.requests == 1 else 'requests'} of {result.model_id} "
        f"({result.input_tokens:,} in / {result.output_tokens:,} out) "
        f"{'finishes' if result.requests == 1 else 'finish'} in "
        f"{human(result.finish_hours)} h (deadline {human(result.deadline_hours)} h) for "
        f"{money(result.cost_usd)} ({human(result.gpu_hours)} GPU-hours, "
        f"{money(result.cost_per_1m_tokens_usd, 4)} per 1M tokens)"
        f"{_margin_clause(result.prediction_margin)}; solver {result.status}."
    )
    cols = [
        Col("gpu"), Col("tp", "r"), Col("quant"), Col("batch", "r"), Col("replicas", "r"),
        Col("gpus", "r"), Col("hours each", "r"), Col("$/GPU-h", "r"), Col("price", priority=1),
        Col("cost", "r"),
    ]  # fmt: skip
    rows = [
        [x.gpu, x.tp, x.quant, x.batch, x.replicas, x.gpus, x.hours_each,
         money(x.price_usd_per_gpu_hour), x.price_tier, money(x.cost_usd)]
        for x in result.lines
    ]  # fmt: skip
    texts = [layout_text(x.pp, x.ep, x.dp_attention, x.gpus, x.replicas) for x in result.lines]
    cols, rows = _with_layout(cols, rows, texts, 2)
    parts = [wrap(head, layout), "", table(cols, rows, layout)]
    if result.api:
        # the endpoint tells apart one provider's offerings (DeepInfra's 8B and 8B Turbo)
        api_rows = [
            [q.provider, q.provider_model_id, money(q.list_cost_usd),
             "not listed" if q.batch_cost_usd is None else money(q.batch_cost_usd)]
            for q in result.api
        ]  # fmt: skip
        parts += ["", "The same tokens through an API:"]
        api_cols = [
            Col("provider"), Col("endpoint", priority=1), Col("list price", "r"),
            Col("batch price", "r"),
        ]  # fmt: skip
        parts.append(table(api_cols, api_rows, layout))
    parts += ["", *[wrap(f"Note: {n}", layout) for n in result.notes]]
    return "\n".join(parts)
