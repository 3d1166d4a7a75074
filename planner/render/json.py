"""JSON for plans, estimates and comparisons: one stable object each. Formats; computes nothing."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from planner.planning.accuracy import METRICS as ERROR_METRICS
from planner.planning.accuracy import ExpectedError, MarginBounds
from planner.planning.plan import EnergyPlan, PeriodPlan, Plan, SolveFact, TimePlan
from planner.render.labels import months_label
from planner.schema.plan import ApiQuote, Deployment, FleetSummary

SIGNIFICANT_DIGITS = 10


def stable(value: Any) -> Any:
    """Plain, deterministic JSON values: floats to 10 significant digits, NaN/inf to None."""
    if isinstance(value, dict):
        return {str(k): stable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [stable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return value


def to_json(obj: dict) -> str:
    """Sorted keys, stable floats: the same input gives the same bytes."""
    return json.dumps(stable(obj), sort_keys=True, indent=2) + "\n"


ESTIMATE_KEYS = [
    "model",
    "gpu",
    "tp",
    "pp",
    "ep",
    "dp_attention",
    "gpus_per_replica",
    "nodes_per_replica",
    "quant",
    "kv_dtype",
    "compute_dtype",
    "batch",
    "input_len",
    "output_len",
    "engine",
    "fits",
    "memory_per_gpu_gb",
    "memory_usable_gb",
    "memory_shortfall_gb",
    "max_batch",
    "weights_per_gpu_gb",
    "kv_cache_per_gpu_gb",
    "activations_per_gpu_gb",
    "tpot_ms",
    "tpot_step_ms",
    "t_alltoall_ms",
    "t_p2p_ms",
    "pipeline_bubble",
    "ttft_ms",
    "ttft_unloaded_ms",
    "prefill_ms",
    "cost_per_hour_usd",
    "bound",
    "prefill_bound",
    "intensity_flop_per_byte",
    "ridge_flop_per_byte",
    "price_usd_per_gpu_hour",
    "price_provider",
]
# the estimate's own figures, not the grid's columns of the same name (planning.estimate
# `_at_load`, `memory_fit`): what the replica serves at the load, what the cost is at,
# beside its capacity (the most it serves, load.capacity_batch in flight)
ESTIMATE_OWN_KEYS = [
    "requests_per_s",
    "throughput_tok_s",
    "capacity_requests_per_s",
    "capacity_tok_s",
    "cost_per_request_usd",
    "cost_per_1k_output_tokens_usd",
    "runtime_reserve_per_gpu_gb",
]
BREAKDOWN_KEYS = {
    "weights_ms": "t_weights_ms",
    "kv_cache_ms": "t_kv_ms",
    "memory_ms": "t_memory_ms",
    "compute_ms": "t_compute_ms",
    "communication_ms": "t_comm_ms",
    "overhead_ms": "t_overhead_ms",
    "step_ms": "tpot_step_ms",
    "prefill_interference_ms": None,
    "first_round_ms": None,
}


TTFT_BREAKDOWN_KEYS = {  # they sum to ttft_ms
    "prefill_ms": "ttft_prefill_ms",
    "step_in_flight_ms": "ttft_step_align_ms",
    "launched_step_ms": "ttft_scheduler_lag_ms",
    "request_latency_ms": "ttft_request_ms",
    "fused_decode_ms": "ttft_fused_ms",
    "prefill_queue_ms": "ttft_prefill_wait_ms",
    "slot_wait_ms": "ttft_slot_wait_ms",
    "first_round_ms": "ttft_first_round_ms",
}


def estimate_dict(
    row: Mapping[str, Any],
    expected: ExpectedError | None = None,
    bounds: MarginBounds | None = None,
) -> dict:
    """The estimate as one JSON object with a `breakdown` of the TPOT terms and a
    `ttft_breakdown` of the TTFT's, in ms, and the profile's measured `expected_error` (with
    the answer at its p90 margin, `at_p90_margin`, when `bounds` are given)."""
    out = {k: row[k] for k in (*ESTIMATE_KEYS, *ESTIMATE_OWN_KEYS)}
    out["fits"] = bool(row["fits"])
    out["gpus"] = int(row["gpus"])
    kind = row["load_kind"]
    out["load"] = {
        "kind": kind,
        kind: row["load_value"],
        "batch_in_flight": int(row["batch_in_flight"]),
        "max_num_seqs": int(row["max_num_seqs"]),
        "capacity_batch": int(row["capacity_batch"]),
    }
    if kind == "concurrency":  # a benchmark's prompts (--num-prompts), null: the steady state
        out["load"]["num_prompts"] = int(row["num_prompts"]) or None
        out["load"]["first_round_share"] = float(row["first_round_share"])
    breakdown = {k: row[v] for k, v in BREAKDOWN_KEYS.items() if v}
    # the estimate's own terms, beside the grid's declared columns (planning.estimate)
    breakdown["first_round_ms"] = row["tpot_first_round_ms"]
    breakdown["prefill_interference_ms"] = (
        row["tpot_ms"] - row["tpot_step_ms"] - row["tpot_first_round_ms"]
    )
    out["breakdown"] = breakdown
    out["ttft_breakdown"] = {k: row[v] for k, v in TTFT_BREAKDOWN_KEYS.items()}
    out.update(speculation_dict(row))
    out["expected_error"] = None if expected is None else error_dict(expected)
    if out["expected_error"] is not None and bounds is not None:
        out["expected_error"]["at_p90_margin"] = dataclasses.asdict(bounds)
    return out


def error_dict(err: ExpectedError) -> dict:
    """The error as JSON: which evaluation, why it applies, and each metric's stats."""
    out: dict = {
        "engine": err.engine,
        "model": err.model,
        "gpu": err.gpu,
        "evaluation": err.evaluation,
        "model_in_fit": err.model_in_fit,
        "gpu_in_fit": err.gpu_in_fit,
        "family_in_fit": err.family_in_fit,
        "missing_folds": list(err.missing),
        "as_of": err.as_of,
        "source": err.source,
    }
    for metric in ERROR_METRICS:
        stat = getattr(err, metric)
        out[metric] = None if stat is None else stat.model_dump()
    return out


def speculation_dict(row: Mapping[str, Any]) -> dict:
    """Speculative decoding and the prefix cache of one evaluated row (issue #11)."""
    return {
        "speculative": {
            "mode": str(row["speculative"]),
            "spec_tokens": int(row["spec_tokens"]),
            "acceptance": float(row["spec_acceptance"]),
            "tokens_per_step": float(row["tokens_per_step"]),
            "verify_step_ms": float(row["t_verify_ms"]),
            "draft_ms": float(row["t_draft_ms"]),
            "draft_per_gpu_gb": float(row["draft_per_gpu_gb"]),
        },
        "prefix_cached_tokens": int(row["prefix_cached_tokens"]),
        "prefix_cache_per_gpu_gb": float(row["prefix_cache_per_gpu_gb"]),
    }


def _deployment_dict(d: Deployment) -> dict:
    return dataclasses.asdict(d)


def fleet_dict(f: FleetSummary) -> dict:
    return {
        "status": f.status,
        "total_cost_per_hour_usd": f.total_cost_per_hour_usd,
        "monthly_cost_usd": f.monthly_cost_usd,
        "total_gpus": f.total_gpus,
        "cost_per_1k_output_tokens_usd": f.cost_per_1k_output_tokens_usd,
        "cost_per_1m_tokens_usd": f.cost_per_1m_tokens_usd,
        "gap": f.gap,
        "fleet": [_deployment_dict(d) for d in f.deployments],
    }


def _quote_dict(q: ApiQuote) -> dict:
    return dataclasses.asdict(q)


def offered_records(plan: Plan) -> list[dict]:
    """Every SLA-feasible candidate offered to the solver, one record per (candidate, class)."""
    names = [c.name for c in plan.classes]
    keys, capacity = plan.offered.keys, plan.offered.capacity
    layout = ("pp", "ep", "dp_attention", "gpus_per_replica", "nodes_per_replica")
    extra = ("speculative", "spec_tokens", "role", "kv_link")  # issue #11
    fields = ("gpu", "tp", "quant", "kv_dtype", "batch", *layout, *extra)
    key = {k: keys[k].tolist() for k in fields}
    cost = keys["cost_per_hour_usd"].tolist()
    return [
        {
            "class": names[j],
            "gpu": key["gpu"][i],
            "tp": int(key["tp"][i]),
            **{k: int(key[k][i]) for k in layout},
            "quant": key["quant"][i],
            "kv_dtype": key["kv_dtype"][i],
            "batch": int(key["batch"][i]),
            "speculative": str(key["speculative"][i]),  # issue #11
            "spec_tokens": int(key["spec_tokens"][i]),
            "role": str(key["role"][i]),  # aggregated, prefill or decode pool (issue #11)
            "kv_link": str(key["kv_link"][i]),  # a pool's KV link (issue #11)
            "capacity_requests_per_s": float(capacity[i, j]),
            "cost_per_hour_usd": float(cost[i]),
        }
        for i, j in zip(*np.nonzero(capacity > 0), strict=True)
    ]


def plan_dict(plan: Plan) -> dict:
    """The plan as one JSON object (timings left out so reruns are byte-identical)."""
    out = fleet_dict(plan.fleet)
    out.update(
        scenario=plan.scenario_name,
        model=plan.model_id,
        engine=plan.engine,
        target_utilization=plan.utilisation,
        average_demand_factor=plan.average_demand_factor,
        demand_requests_per_s=plan.total_requests_per_s,
        classes=[c.__dict__ for c in plan.classes],
        candidates=offered_records(plan),
        candidates_evaluated=len(plan.candidate_table),
        single_gpu_best=(
            {"gpu": plan.single_gpu_best_gpu, **fleet_dict(plan.single_gpu_best)}
            if plan.single_gpu_best
            else None
        ),
        api=[_quote_dict(q) for q in plan.api_quotes],
        cheapest_api=_quote_dict(plan.cheapest_api) if plan.cheapest_api else None,
        # #13: the comparison the terminal and the workbook print; `cheapest_api`'s own
        # monthly_cost_usd is the API at the peak around the clock, not this bill
        cheapest_api_monthly_usd=plan.cheapest_api_monthly_usd,
        self_hosted_monthly_usd=plan.self_hosted_monthly_usd,
        self_hosted_basis=plan.self_hosted_basis,
        notes=list(plan.notes),
        prediction_error=[error_dict(e) for e in plan.prediction_errors],
        # issue #10: the factors each GPU's predictions were planned at (empty: at the
        # predictions; search.prediction_margin: p90)
        prediction_margin=[
            {"gpu": m.error.gpu, "tpot": m.tpot, "ttft": m.ttft, "throughput": m.throughput}
            for m in plan.prediction_margins
        ],
        solves=[solve_record(f) for f in plan.solves],
        energy_wh_per_1k_output_tokens=plan.energy.wh_per_1k_output_tokens if plan.energy else None,
        energy=energy_dict(plan.energy) if plan.energy else None,
    )
    out["lower_bound_per_hour_usd"] = plan.fleet.lower_bound_per_hour_usd
    out["over_time"] = time_plan_dict(plan.over_time) if plan.over_time is not None else None
    if plan.failover:  # redundancy that holds (issue 12): only when n+k is asked
        out["failover"] = [f.__dict__ for f in plan.failover]
    return out


def energy_dict(e: EnergyPlan) -> dict:
    """Power, energy and CO2 per 1K output tokens, with the inputs they come from."""
    return {
        "tdp_w": e.tdp_w,
        "utilisation": e.utilisation,
        "pue": e.pue,
        "grid_g_co2_per_kwh": e.grid_g_co2_per_kwh,
        "power_kw": e.power_kw,
        "energy_wh_per_1k_output_tokens": e.wh_per_1k_output_tokens,
        "co2_g_per_1k_output_tokens": e.g_co2_per_1k_output_tokens,
        "over_time_energy_wh_per_1k_output_tokens": e.over_time_wh_per_1k_output_tokens,
        "over_time_co2_g_per_1k_output_tokens": e.over_time_g_co2_per_1k_output_tokens,
        "missing_tdp": list(e.missing_tdp),
    }


def solve_record(fact: SolveFact) -> dict:
    """One solve's name, status and gap (its seconds and limit left out: reruns stay
    byte-identical and a plan does not depend on the limit it was solved under)."""
    return {"name": fact.name, "status": fact.status, "gap": fact.gap}


def period_record(period: PeriodPlan) -> dict:
    """One period as a flat record: months "4-6", demand_<class>_req_s, <gpu>_<tier>."""
    out: dict[str, Any] = {
        "months": months_label(period.months),
        "slot": period.slot,
        "hours": period.hours,
    }
    out.update({f"demand_{n}_req_s": v for n, v in period.demand.items()})
    for g, gpus in period.gpus.items():
        out.update({f"{g}_{tier}": n for tier, n in dataclasses.asdict(gpus).items()})
    out["cost_usd"] = period.cost_usd
    return out


def time_plan_dict(tp: TimePlan) -> dict:
    """The plan over time as JSON: held GPUs, per-period fleet, months, comparisons."""
    sol = tp.solution
    return {
        "status": sol.status,
        "gap": sol.gap,
        "total_cost_usd": sol.total_cost,
        "cost_by_tier_usd": sol.cost_by_tier,
        "reserved_gpus": sol.reserved,
        "owned_gpus": sol.owned,
        "cost_per_1k_output_tokens_usd": tp.cost_per_1k_output_tokens_usd,
        "all_on_demand_cost_usd": tp.all_on_demand_cost_usd,
        "all_reserved_for_peak_cost_usd": tp.all_reserved_cost,
        "all_reserved_for_peak_gpus": tp.all_reserved_gpus,
        "periods": [period_record(p) for p in tp.periods],
        "monthly": [dataclasses.asdict(m) for m in tp.monthly],
        "prices": [dataclasses.asdict(p) for p in tp.prices],
        "notes": list(tp.notes),
    }


def compare_dict(plan: Plan, rows, notes: tuple[str, ...] = ()) -> dict:
    """The comparison as JSON, with the analysis's notes (what the text prints under it)."""
    return {
        "scenario": plan.scenario_name,
        "model": plan.model_id,
        "demand_requests_per_s": plan.total_requests_per_s,
        "average_demand_factor": plan.average_demand_factor,
        "self_hosted_monthly_usd": plan.self_hosted_monthly_usd,
        "self_hosted_basis": plan.self_hosted_basis,
        "peak_fleet_monthly_usd": plan.fleet.monthly_cost_usd,
        "apis": [
            {
                **_quote_dict(r.quote),
                "api_cost_per_request_usd": r.api_cost_per_request_usd,
                "api_monthly_usd": r.api_monthly_usd,
                "break_even_peak_requests_per_s": r.break_even_peak_requests_per_s,
                "break_even_tokens_per_month": r.break_even_tokens_per_month,
            }
            for r in rows
        ],
        "notes": list(notes),
    }
