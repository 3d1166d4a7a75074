"""price_job(scenario, catalog): the cheapest fleet that finishes a batch job by its deadline.

An offline job keeps its replicas saturated (the backlog never empties), so a replica's rate
is its full serving rate R = B / (O TPOT + B t_pf), not R at the planned utilisation, and the
queue wait is the job's own backlog: a TTFT bound, if given, is held on the unloaded TTFT. A
TPOT bound applies as given. Replicas are billed for the hours they run (released when done,
per-second billing assumed). Pure: no files, no printing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from planner.errors import InfeasibleError, InputError
from planner.fleet.capacity import JobProblem, JobSolution, ScaleProblem, cheapest_job, max_scale
from planner.fleet.selection import Offered, offered_capacity, prune_dominated, sla_verdicts
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem
from planner.inputs.catalog import Catalog
from planner.money.pricing import api_bill_usd, gpu_price
from planner.perf.candidates import Price
from planner.perf.table import Table, values
from planner.planning.accuracy import gpu_notes
from planner.planning.disagg import aggregated_only, pools_left_out
from planner.planning.estimate import check_context
from planner.planning.lines import chosen, key_fields, layout_fields
from planner.planning.pipeline import (
    allowed_gpus,
    engine_left_out,
    evaluate_classes,
    quants_left_out,
    request_classes,
)
from planner.schema.scenario import Job, Scenario
from planner.units import SECONDS_PER_HOUR, TOKENS_PER_1M


@dataclass(frozen=True)
class JobLine:
    """One deployment of the job: replicas of a candidate, the hours each runs, its share."""

    gpu: str
    tp: int
    quant: str
    kv_dtype: str
    batch: int
    replicas: int
    gpus: int
    pp: int  # the layout (issue #11): GPUs per replica are tp x pp x dp_attention
    ep: int
    dp_attention: int
    speculative: str
    spec_tokens: int
    role: str
    hours_each: float
    requests: float
    requests_per_s_per_replica: float
    price_usd_per_gpu_hour: float
    price_tier: str
    cost_usd: float


@dataclass(frozen=True)
class ApiJobQuote:
    """What an API would charge for the same tokens: list price, and batch price if listed."""

    provider: str
    provider_model_id: str
    list_cost_usd: float
    batch_cost_usd: float | None  # None: the catalog lists no batch price for this offering
    source: str
    as_of: str


@dataclass(frozen=True)
class JobPlan:
    """The cheapest way to finish the job: cost, GPU-hours, finishing time, and the lines."""

    scenario_name: str
    model_id: str
    status: str
    requests: float
    input_tokens: int
    output_tokens: int
    deadline_hours: float
    finish_hours: float
    cost_usd: float
    lower_bound_usd: float
    gpu_hours: float
    cost_per_1m_tokens_usd: float
    lines: tuple[JobLine, ...]
    api: tuple[ApiJobQuote, ...]
    pricing_tier: str
    spot_allowed: bool
    notes: tuple[str, ...]
    prediction_margin: str = "none"  # issue #10: p90: every figure at the record's p90 margin


def _job(scenario: Scenario) -> Job:
    job = scenario.workload.job
    if job is None:
        raise InputError(
            "workload.job: planner job needs a batch job, e.g. workload: {job: {requests: "
            "2000000, input_tokens: 2000, output_tokens: 300, deadline_hours: 72}}"
        )
    return job


def check_constraints(scenario: Scenario) -> None:
    """Exit 2 on the constraints a batch job cannot honour, rather than ignore them: it has a
    total cost, not a monthly one, and no live traffic to keep serving through a loss."""
    c = scenario.constraints
    why = {
        "max_monthly_budget_usd": (
            c.max_monthly_budget_usd is not None,
            "a batch job has a total cost (reported), not a monthly one",
        ),
        "min_replicas": (
            c.min_replicas > 1,
            "a job's replicas run only the hours their share needs and serve no live "
            "traffic, so a replica floor buys nothing (0 or 1 always holds)",
        ),
        "redundancy": (
            c.redundancy_k > 0,
            "a job has no live traffic to fail over; a lost replica's share is re-run "
            "(keep slack in job.deadline_hours instead)",
        ),
        "same_vendor": (
            c.same_vendor,
            "planner job does not pick vendors; list one vendor's GPUs in hardware.gpus",
        ),
    }
    for key, (asked, reason) in why.items():
        if asked:
            raise InputError(
                f"constraints.{key}: does not apply to planner job: {reason}; remove it"
            )


def job_prices(scenario: Scenario, catalog: Catalog, job: Job) -> dict[str, Price]:
    """Each allowed GPU's price in the scenario's tier; with allow_spot, the spot price where
    it is cheaper (the provider then reads '<provider> (spot)')."""
    pricing = scenario.hardware.pricing
    spot = pricing.model_copy(update={"tier": "spot"})
    out = {}
    for gpu in allowed_gpus(scenario, catalog):
        best = gpu_price(gpu, pricing)
        cheap = gpu_price(gpu, spot) if job.allow_spot and pricing.tier != "spot" else None
        if cheap is not None and (best is None or cheap.usd_per_gpu_hour < best.usd_per_gpu_hour):
            best = Price(
                cheap.usd_per_gpu_hour, f"{cheap.provider} (spot)", cheap.source, cheap.as_of
            )
        if best is not None:
            out[gpu.id] = best
    return out


def saturated(rows: Table, tpot_ms: float | None, ttft_ms: float | None) -> Table:
    """Rows as a batch job runs them: capacity is the full serving rate, TTFT the unloaded
    one (the wait is the job's own backlog); the verdict is redone on those figures."""
    out = rows.assign(
        capacity_requests_per_s=values(rows, "requests_per_s"),
        ttft_ms=values(rows, "ttft_unloaded_ms"),
    )
    why = sla_verdicts(out, tpot_ms, ttft_ms)
    return out.assign(why_not=why, sla_ok=why == "")


def one_request_ms(rows: Table, output_tokens: int) -> np.ndarray:
    """Each row's time for one request: its (unloaded) TTFT, then O - 1 decode steps at the
    row's batch TPOT. No replica finishes a request sooner, whatever its share of the job."""
    tpot = np.nan_to_num(values(rows, "tpot_ms", float), nan=0.0)
    return values(rows, "ttft_ms", float) + (output_tokens - 1) * tpot


def _in_time(rows: Table, job: Job) -> Table:
    """The SLA-feasible rows that finish one request by the deadline, their ttft_ms column
    holding that one request's time (offered as the candidates' `ttft_ms`, read back by
    `job_problem`); exit 1 when rows meet the SLA but none finishes a request in time."""
    ok = values(rows, "sla_ok", bool)
    if rows.empty or not ok.any():
        return rows[ok]
    took = one_request_ms(rows, job.output_tokens)
    fits = ok & (took <= job.deadline_hours * SECONDS_PER_HOUR * 1000.0)
    if not fits.any():
        raise InfeasibleError(_one_request_too_long(rows, took, ok, job), {"binding": "deadline"})
    return rows[fits].assign(ttft_ms=took[fits])


def _one_request_too_long(rows: Table, took: np.ndarray, ok: np.ndarray, job: Job) -> str:
    """The deadline message: the fastest single request of any candidate, and its parts."""
    i = int(np.flatnonzero(ok)[np.argmin(took[ok])])
    row = rows.row(i)
    return (
        f"job.deadline_hours: {job.deadline_hours:g} h ({job.deadline_hours * 3600:,.3g} s) "
        f"is shorter than one request takes: at best {took[i] / 1000:,.3g} s on {row['gpu']} "
        f"tp {int(row['tp'])} {row['quant']} batch {int(row['batch'])} (TTFT "
        f"{float(row['ttft_ms']):,.0f} ms + {job.output_tokens - 1} x TPOT "
        f"{float(row['tpot_ms']):.2f} ms); extend the deadline"
    )


def job_problem(scenario: Scenario, offered: Offered, job: Job) -> JobProblem:
    """The batch-job MIP's data from the offered candidates."""
    keys = offered.keys
    gpus = set(keys["gpu"])
    return JobProblem(
        gpu=tuple(str(g) for g in keys["gpu"]),
        tp=tuple(int(t) for t in keys["gpus_per_replica"]),  # GPUs a replica uses
        cost_per_hour=values(keys, "cost_per_hour_usd", float),
        rate=offered.capacity[:, 0].astype(float),
        requests=job.total_requests(),
        deadline_hours=job.deadline_hours,
        inventory={g: n for g, n in scenario.hardware.available().items() if g in gpus},
        max_gpus=scenario.constraints.max_gpus,
        one_request_hours=_one_request_hours(offered),
    )


def _one_request_hours(offered: Offered) -> np.ndarray | None:
    """Each candidate's one-request time in hours (`_in_time` put it in ttft_ms)."""
    if offered.ttft_ms is None:
        return None
    return np.nan_to_num(offered.ttft_ms[:, 0], posinf=0.0) / (SECONDS_PER_HOUR * 1000.0)


def price_job(scenario: Scenario, catalog: Catalog) -> JobPlan:
    """The cheapest replicas and hours that finish the scenario's job by its deadline."""
    job = _job(scenario)
    check_constraints(scenario)
    pools = pools_left_out(scenario, request_classes(scenario), "job")
    scenario = aggregated_only(scenario)
    model = catalog.model(scenario.model)
    (cls,) = request_classes(scenario)
    check_context(model, cls.input_tokens, cls.output_tokens, "workload.job: ")
    prices = job_prices(scenario, catalog, job)
    # Tables, not DataFrames (issue 16: no pandas unless no candidate serves the job)
    rows = evaluate_classes(scenario, catalog, model, (cls,), prices)
    rows = saturated(rows, cls.tpot_ms, cls.ttft_ms) if not rows.empty else rows
    offered = prune_dominated(offered_capacity(_in_time(rows, job), [cls.name]))
    if len(offered) == 0:
        from planner.planning.diagnose import explain_infeasible

        empty = FleetProblem((), (), np.zeros(0), np.zeros((0, 1)), np.zeros(0))
        gpus = allowed_gpus(scenario, catalog)
        explain_infeasible(scenario, model, (cls,), rows, empty, gpus, prices)
    problem = job_problem(scenario, offered, job)
    options = SolverOptions.of(scenario.solver)
    solution = cheapest_job(problem, options)
    if solution.status == "infeasible":
        message = _too_slow(problem, options, scenario.hardware.count_keys())
        raise InfeasibleError(message, {"binding": "inventory"})
    plan = _job_plan(scenario, catalog, model.id, job, offered, problem, solution, prices)
    return replace(plan, notes=(*plan.notes, pools)) if pools else plan


def _too_slow(problem: JobProblem, options: SolverOptions, counts: str) -> str:
    """Infeasible only through the GPU limits: the whole allowed fleet's fastest finish;
    `counts` names the keys the GPU counts came from (hardware.inventory and/or fleet)."""
    fastest = max_scale(
        ScaleProblem(
            problem.gpu, problem.tp, problem.rate[:, None], np.ones(1),
            problem.inventory, problem.max_gpus,
        ),
        options,
    )  # fmt: skip
    hours = problem.requests / (fastest.scale * SECONDS_PER_HOUR) if fastest.scale else math.inf
    limits = ", ".join(f"{g} {n}" for g, n in sorted(problem.inventory.items()))
    cap = f"max_gpus {problem.max_gpus}" if problem.max_gpus is not None else ""
    return (
        f"deadline: the allowed GPUs ({'; '.join(x for x in (limits, cap) if x)}) finish "
        f"{problem.requests:,.0f} requests in {hours:,.1f} h at best, against "
        f"job.deadline_hours {problem.deadline_hours:g}; extend the deadline or raise "
        f"{counts} / constraints.max_gpus"
    )


def _lines(offered: Offered, problem: JobProblem, solution: JobSolution, prices):
    for i, key, n in chosen(solution.replicas, offered.keys):
        hours = float(solution.replica_hours[i])
        if hours <= 0:
            continue
        price = prices[str(key["gpu"])]
        yield JobLine(
            **key_fields(key, n),
            **layout_fields(key),
            hours_each=hours / n,
            requests=hours * SECONDS_PER_HOUR * float(problem.rate[i]),
            requests_per_s_per_replica=float(problem.rate[i]),
            price_usd_per_gpu_hour=price.usd_per_gpu_hour,
            price_tier=price.provider,
            cost_usd=hours * float(problem.cost_per_hour[i]),
        )


def api_job_quotes(catalog: Catalog, model_id: str, job: Job) -> tuple[ApiJobQuote, ...]:
    """Every API offering of the model priced for the job's tokens, cheapest first."""
    n = job.total_requests()
    tok_in, tok_out = n * job.input_tokens / TOKENS_PER_1M, n * job.output_tokens / TOKENS_PER_1M
    out = []
    for provider, offer in catalog.api_offerings(model_id):
        batch = None
        if offer.batch_input_usd_per_1m is not None and offer.batch_output_usd_per_1m is not None:
            batch = tok_in * offer.batch_input_usd_per_1m + tok_out * offer.batch_output_usd_per_1m
        out.append(
            ApiJobQuote(
                provider=provider.name,
                provider_model_id=offer.provider_model_id,
                # a job states no cached prefix: every prompt token at the input price
                list_cost_usd=api_bill_usd(offer, n * job.input_tokens, 0.0, n * job.output_tokens),
                batch_cost_usd=batch,
                source=offer.source,
                as_of=offer.as_of,
            )
        )
    return tuple(sorted(out, key=lambda q: (q.list_cost_usd, q.provider)))


def _job_plan(scenario, catalog, model_id, job, offered, problem, solution, prices) -> JobPlan:
    lines = tuple(_lines(offered, problem, solution, prices))
    n = job.total_requests()
    tokens = n * (job.input_tokens + job.output_tokens)
    api = api_job_quotes(catalog, model_id, job)
    notes = [
        "each replica is billed for the hours it runs and released when its share is done "
        "(per-second billing assumed; hourly billing rounds each replica up)"
    ]
    notes += engine_left_out(scenario, catalog)  # GPUs the engine does not run on
    notes += quants_left_out(scenario, catalog)  # quants it does not load
    gpus = (x.gpu for x in lines)
    notes += gpu_notes(catalog, scenario.engine, model_id, gpus, scenario.search.prediction_margin)
    if api and all(q.batch_cost_usd is None for q in api):
        notes.append(
            "no API batch price is listed for this model in catalogs/apis (the reference "
            "prices do not tabulate batch discounts), so API costs are at list prices"
        )
    return JobPlan(
        scenario_name=scenario.name or "scenario",
        model_id=model_id,
        status=solution.status,
        requests=n,
        input_tokens=job.input_tokens,
        output_tokens=job.output_tokens,
        deadline_hours=job.deadline_hours,
        finish_hours=max((x.hours_each for x in lines), default=0.0),
        cost_usd=solution.cost_usd,
        lower_bound_usd=solution.bound_usd,
        gpu_hours=sum(x.hours_each * x.gpus for x in lines),
        cost_per_1m_tokens_usd=solution.cost_usd / tokens * TOKENS_PER_1M,
        lines=lines,
        api=api,
        pricing_tier=scenario.hardware.pricing.tier,
        spot_allowed=job.allow_spot,
        notes=tuple(notes),
        prediction_margin=scenario.search.prediction_margin,
    )
