"""capacity(scenario, catalog): the most demand a fixed fleet serves within every class's SLA.

The scenario names the fleet (`hardware.fleet: {gpu: count}`); its class mix is kept and the
total rate is the unknown. Candidates are evaluated and held to each class's SLA (TPOT, TTFT
at its statistic, queueing at the planned utilisation) exactly as `plan` does, then one MIP
maximises the rate (planner.fleet.capacity). Pure: no files, no printing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from planner.errors import InfeasibleError, InputError, unknown_name_message
from planner.fleet.capacity import ScaleProblem, max_scale
from planner.fleet.selection import (
    CANDIDATE_KEY,
    Offered,
    offered_capacity,
    prune_dominated,
)
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem
from planner.inputs.catalog import Catalog
from planner.money.pricing import gpu_price
from planner.perf.candidates import Price
from planner.perf.evaluate import ttft_ms_at
from planner.perf.table import Table, values
from planner.planning.accuracy import gpu_notes
from planner.planning.disagg import aggregated_only, pools_left_out
from planner.planning.estimate import check_context
from planner.planning.lines import candidate_rows, chosen, key_fields, layout_fields
from planner.planning.pipeline import (
    engine_left_out,
    evaluate_classes,
    quants_left_out,
    request_classes,
)
from planner.schema.model import Model
from planner.schema.plan import RequestClassPlan
from planner.schema.scenario import Scenario

NO_PRICE = Price(0.0, "owned fleet (no catalog price)")  # capacity needs no price


@dataclass(frozen=True)
class CapacityLine:
    """One deployment of the fleet at its largest demand: a candidate, replicas and load."""

    gpu: str
    tp: int
    quant: str
    kv_dtype: str
    batch: int
    pp: int
    ep: int
    dp_attention: int
    speculative: str
    spec_tokens: int
    role: str
    replicas: int
    gpus: int
    load_by_class: dict[str, float]  # requests/s these replicas carry at the largest demand
    utilisation: float  # of each replica's capacity at the planned utilisation (<= 1)
    tpot_ms_by_class: dict[str, float]
    ttft_ms_by_class: dict[str, float]
    batch_limit: str  # why a larger batch does not serve more: TPOT, TTFT, memory or grid
    kv_link: str = "none"  # issue #11: capacity sizes aggregated replicas only (no pools)


@dataclass(frozen=True)
class ClassLatency:
    """What one class sees at a given rate: the worst TPOT and TTFT over its deployments."""

    name: str
    requests_per_second: float
    tpot_ms: float
    ttft_ms: float
    statistic: str
    tpot_sla_ms: float | None
    ttft_sla_ms: float | None


@dataclass(frozen=True)
class Capacity:
    """The answer: the largest rate, the configuration carrying it, and what binds."""

    scenario_name: str
    model_id: str
    fleet: dict[str, int]
    status: str
    max_requests_per_second: float
    upper_bound_requests_per_second: float  # the solver's bound: no configuration does more
    max_output_tokens_per_s: float
    max_total_tokens_per_s: float
    classes: tuple[RequestClassPlan, ...]
    mix: dict[str, float]
    deployments: tuple[CapacityLine, ...]
    binding: tuple[str, ...]
    gpus_used: dict[str, int]
    utilisation: float  # planned utilisation of a replica (search.target_utilization)
    relative_gap: float
    fleet_cost_per_hour_usd: float | None  # the fleet at catalog prices, where all are listed
    at_rate: tuple[ClassLatency, ...] | None = None
    rate_requests_per_second: float | None = None
    notes: tuple[str, ...] = ()  # what the answer leaves out (quants, prefill/decode pools)
    usable: dict[str, int] | None = None  # per fleet GPU: min(fleet, hardware.inventory)
    usable_key: dict[str, str] | None = None  # the key that caps a GPU type below the fleet
    prediction_margin: str = "none"  # issue #10: p90: every figure at the record's p90 margin


def _fleet_gpus(scenario: Scenario, catalog: Catalog) -> dict[str, int]:
    """The scenario's fleet, its GPU ids checked against the catalog (with a close match)."""
    fleet = dict(scenario.hardware.fleet)
    if not fleet:
        raise InputError(
            "hardware.fleet: planner capacity needs a fixed fleet, e.g. "
            "hardware: {fleet: {h100-sxm: 16}}"
        )
    for gpu_id in fleet:
        if gpu_id not in catalog.gpus:
            raise InputError("hardware.fleet: " + unknown_name_message("GPU", gpu_id, catalog.gpus))
    outside = scenario.hardware.outside_fleet()
    if outside is not None:
        raise InputError(outside)
    return fleet


def _listed(scenario: Scenario) -> list[str]:
    """The fleet GPUs a capacity answer may plan: hardware.gpus (a subset of the fleet, as
    for solve), else the whole fleet."""
    hw = scenario.hardware
    return sorted(hw.gpus) if hw.gpus is not None else sorted(hw.fleet)


def evaluated(
    scenario: Scenario, catalog: Catalog
) -> tuple[Model, tuple[RequestClassPlan, ...], Table, dict[str, Price]]:
    """The model, classes, every fleet candidate judged per class (memory and SLA only: every
    fleet GPU gets a stub price, as an owned fleet needs none), catalog prices; the Table as
    `evaluate_classes` gives it (no pandas: issue 16, pandas was 0.3 of 0.8 CPU s of
    `planner capacity`)."""
    fleet = _fleet_gpus(scenario, catalog)
    model = catalog.model(scenario.model)
    classes = request_classes(scenario)
    for cl in classes:
        check_context(model, cl.input_tokens, cl.output_tokens, f"workload class '{cl.name}': ")
    own = aggregated_only(scenario).model_copy(
        update={"hardware": scenario.hardware.model_copy(update={"gpus": _listed(scenario)})}
    )
    listed = {g: p for g in fleet if (p := gpu_price(catalog.gpus[g], scenario.hardware.pricing))}
    stub = {g: NO_PRICE for g in fleet}
    rows = evaluate_classes(own, catalog, model, classes, stub)
    return model, classes, rows, listed


def scale_problem(
    scenario: Scenario, offered: Offered, classes: tuple[RequestClassPlan, ...]
) -> ScaleProblem:
    """The largest-demand MIP's data: the offered candidates, the class mix, the fleet."""
    rates = np.array([c.requests_per_second for c in classes], dtype=float)
    c = scenario.constraints
    return ScaleProblem(
        gpu=tuple(str(g) for g in offered.keys["gpu"]),
        tp=tuple(int(t) for t in offered.keys["gpus_per_replica"]),  # GPUs a replica uses
        capacity=offered.capacity.astype(float),
        mix=rates / rates.sum(),
        fleet=scenario.hardware.available(),
        max_gpus=c.max_gpus,
        min_replicas=c.min_replicas,
    )


def _no_candidate(scenario, model, classes, rows, gpus) -> None:
    """Raise the planner's own diagnosis (memory, then each class's SLA) when no candidate
    carries some class (written in pandas: loaded on this path only)."""
    from planner.planning.diagnose import explain_infeasible

    stub_problem = FleetProblem((), (), np.zeros(0), np.zeros((0, len(classes))), np.zeros(0))
    explain_infeasible(scenario, model, classes, rows, stub_problem, gpus, {"-": NO_PRICE})


def fleet_capacity(scenario: Scenario, catalog: Catalog, rate: float | None = None) -> Capacity:
    """The largest request rate the fleet serves at the scenario's class mix, every class
    within its SLA; with `rate`, also the latency each class sees at that rate."""
    c = scenario.constraints
    if c.redundancy_k or c.same_vendor:
        raise InputError(
            "constraints.redundancy / same_vendor: planner capacity does not model failover "
            "yet; remove them (or lower search.target_utilization for headroom)"
        )
    pools = pools_left_out(scenario, request_classes(scenario), "capacity")
    model, classes, rows, listed = evaluated(scenario, catalog)
    names = [c.name for c in classes]
    offered = prune_dominated(offered_capacity(rows[values(rows, "sla_ok", bool)], names))
    gpus = [catalog.gpus[g] for g in scenario.hardware.fleet]
    if len(offered) == 0 or not (offered.capacity > 0).any(axis=0).all():
        _no_candidate(scenario, model, classes, rows, gpus)
    problem = scale_problem(scenario, offered, classes)
    options = SolverOptions.of(scenario.solver)
    solution = max_scale(problem, options)
    if solution.status == "infeasible" or solution.scale <= 0:
        raise InfeasibleError(_fleet_limits_message(scenario, problem), {"binding": "fleet"})
    result = _capacity(scenario, model, classes, rows, offered, problem, solution, listed)
    fleet = [catalog.gpus[g] for g in sorted(scenario.hardware.fleet)]
    idle = engine_left_out(scenario, catalog, fleet)  # GPUs of the fleet the engine cannot use
    if idle:
        result = replace(result, binding=(*result.binding, *idle))
    notes = quants_left_out(scenario, catalog) + ([pools] if pools else [])
    # issue #10: how far off the predictions behind the capacity may be, per GPU used
    notes += gpu_notes(
        catalog,
        scenario.engine,
        model.id,
        (d.gpu for d in result.deployments),
        scenario.search.prediction_margin,
    )
    if notes:  # what the answer leaves out (quants the engine does not load, pools), and error
        result = replace(result, notes=tuple(notes))
    if rate is not None:
        result = at_rate(result, rows, rate)
    return result


def _fleet_limits_message(scenario: Scenario, problem: ScaleProblem) -> str:
    """Why no replica set fits the fleet: too small for one replica, or the constraints
    (only those the scenario sets are named)."""
    listed = set(problem.gpu)  # the types with a candidate (hardware.gpus, the engine's)
    fleet = ", ".join(f"{n} x {g}" for g, n in sorted(problem.fleet.items()) if g in listed)
    if scenario.hardware.gpus is not None:
        fleet += " (the fleet's GPUs hardware.gpus lists)"
    smallest = min(problem.tp)
    fits = any(t <= problem.fleet.get(g, 0) for g, t in zip(problem.gpu, problem.tp, strict=True))
    if not fits:
        return (
            f"hardware.fleet: {fleet} cannot hold one replica: the smallest that meets the "
            f"SLA needs {smallest} GPUs of one type; add GPUs to hardware.fleet"
        )
    c = scenario.constraints
    asks = [f"min_replicas {c.min_replicas}"]
    if c.max_gpus is not None:
        asks.append(f"max_gpus {c.max_gpus}")
    return (
        f"hardware.fleet: {fleet} cannot hold the replicas the constraints ask for "
        f"({', '.join(asks)}; the smallest replica needs {smallest} GPUs); add GPUs to "
        f"hardware.fleet or relax {' / '.join('constraints.' + a.split()[0] for a in asks)}"
    )


def _capacity(scenario, model, classes, rows, offered, problem, solution, listed) -> Capacity:
    """Assemble the answer from the solved MIP."""
    lines = tuple(_lines(rows, offered, problem, solution, classes))
    used: dict[str, int] = {}
    for line in lines:
        used[line.gpu] = used.get(line.gpu, 0) + line.gpus
    s = solution.scale
    mix = dict(zip([c.name for c in classes], problem.mix.tolist(), strict=True))
    out_tok = s * sum(mix[c.name] * c.output_tokens for c in classes)
    all_tok = s * sum(mix[c.name] * (c.input_tokens + c.output_tokens) for c in classes)
    fleet = dict(scenario.hardware.fleet)
    usable, usable_key = _usable(scenario, problem)
    cost = None
    if all(g in listed for g in fleet):
        cost = sum(listed[g].usd_per_gpu_hour * n for g, n in fleet.items())
    return Capacity(
        scenario_name=scenario.name or "scenario",
        model_id=model.id,
        fleet=fleet,
        usable=usable,
        usable_key=usable_key,
        status=solution.status,
        max_requests_per_second=s,
        upper_bound_requests_per_second=solution.bound,
        max_output_tokens_per_s=out_tok,
        max_total_tokens_per_s=all_tok,
        classes=classes,
        mix=mix,
        deployments=lines,
        binding=tuple(_binding(problem, lines, used, fleet)),
        gpus_used=used,
        utilisation=scenario.search.target_utilization,
        relative_gap=scenario.solver.relative_gap,
        fleet_cost_per_hour_usd=cost,
        prediction_margin=scenario.search.prediction_margin,
    )


def _usable(scenario: Scenario, problem: ScaleProblem) -> tuple[dict[str, int], dict[str, str]]:
    """Per fleet GPU, how many the answer may use, and the key that caps it below the fleet:
    hardware.gpus or hardware.exclude leave a type out, hardware.inventory lowers its count."""
    hw = scenario.hardware
    usable: dict[str, int] = {}
    key: dict[str, str] = {}
    for g, n in hw.fleet.items():
        usable[g] = min(n, problem.fleet.get(g, n))
        if hw.gpus is not None and g not in hw.gpus:
            usable[g], key[g] = 0, "hardware.gpus"
        elif g in hw.exclude:
            usable[g], key[g] = 0, "hardware.exclude"
        elif usable[g] < n:
            key[g] = "hardware.inventory"
    return usable, key


def _lines(rows, offered, problem, solution, classes):
    names = [c.name for c in classes]
    for i, key, n in chosen(solution.replicas, offered.keys):
        own = candidate_rows(rows, key)
        row_of = {str(w): j for j, w in enumerate(values(own, "class").tolist())}
        tpot, ttft = values(own, "tpot_ms", float), values(own, "ttft_ms", float)
        load = {w: float(solution.load[i, j]) for j, w in enumerate(names)}
        caps = problem.capacity[i]
        busy = sum(load[w] / caps[j] for j, w in enumerate(names) if caps[j] > 0) / n
        served = [w for w in names if load[w] > 1e-12] or [w for w in names if w in row_of]
        yield CapacityLine(
            **key_fields(key, n),
            **layout_fields(key),
            load_by_class=load,
            utilisation=min(busy, 1.0),
            tpot_ms_by_class={w: float(tpot[row_of[w]]) for w in served},
            ttft_ms_by_class={w: float(ttft[row_of[w]]) for w in served},
            batch_limit=_batch_limit(rows, key, served),
        )


def _batch_limit(rows: Table, key: dict[str, Any], served: list[str]) -> str:
    """Why the next larger batch of the same deployment (its whole candidate key but the
    batch: layout, speculation, role, KV link too) is not used: the reason it fails a served
    class (TPOT, TTFT, memory), or the end of the batch grid. Matching on gpu/tp/quant/kv
    alone gave another layout's reason (deepseek-r1: pp 1's memory for a pp 2 line)."""
    same = np.ones(len(rows), dtype=bool)
    for k in CANDIDATE_KEY:
        if k != "batch":
            same &= values(rows, k) == key[k]
    batch = values(rows, "batch")
    bigger = same & (batch > key["batch"])
    if not bigger.any():
        return f"batch {int(key['batch'])} is the largest searched (search.batch_max)"
    step = int(batch[bigger].min())
    nxt = bigger & (batch == step)
    cls, why = values(rows, "class"), values(rows, "why_not")
    for w in served:
        found = why[nxt & (cls == w)]
        if len(found) and found[0]:
            return f"batch {step} fails class '{w}': {found[0]}"
    return f"batch {step} meets the SLA but carries no more at this mix"


def _binding(
    problem: ScaleProblem, lines: tuple[CapacityLine, ...], used: dict[str, int], fleet: dict
) -> list[str]:
    """What stops more demand: the GPU counts (no further replica fits, or max_gpus forbids
    one), then what caps each deployment's batch."""
    out = []
    for gpu_id, count in sorted(problem.fleet.items()):
        tps = [t for g, t in zip(problem.gpu, problem.tp, strict=True) if g == gpu_id]
        if tps:
            out.append(_gpu_count(gpu_id, count, fleet.get(gpu_id, count), min(tps), problem, used))
    total = sum(used.values())
    if problem.max_gpus is not None and total + min(problem.tp) > problem.max_gpus:
        out.append(f"constraints.max_gpus: {total} of {problem.max_gpus} in use")
    for line in lines:
        shape = "".join(
            f" {k} {v}" for k, v in (("pp", line.pp), ("ep", line.ep), ("dp", line.dp_attention))
            if v > 1
        )  # fmt: skip
        out.append(
            f"{line.gpu} tp {line.tp}{shape} {line.quant} batch {line.batch}: {line.batch_limit}"
        )
    return out


def _gpu_count(
    gpu_id: str, usable: int, owned: int, smallest: int, problem: ScaleProblem, used: dict
) -> str:
    """One GPU type's line: all usable in use (and what caps the usable count), or the idle
    ones and why no replica takes them: constraints.max_gpus when it forbids even the
    smallest, else none adds capacity at this mix."""
    n = used.get(gpu_id, 0)
    spare = usable - n
    total = sum(used.values())
    if spare < smallest:
        capped = f" (hardware.inventory caps the fleet's {owned})" if usable < owned else ""
        usable_text = " usable" if usable < owned else ""
        return f"GPU count: {n} of {usable}{usable_text} {gpu_id} in use{capped}"
    if problem.max_gpus is not None and total + smallest > problem.max_gpus:
        return (
            f"GPU count: {spare} {gpu_id} idle: constraints.max_gpus {problem.max_gpus} blocks "
            f"another replica ({total} GPUs in use, the smallest {gpu_id} replica takes "
            f"{smallest})"
        )
    return f"GPU count: {spare} {gpu_id} idle (no replica adds capacity at this mix)"


# ---- the reverse question: the latency each class sees at a given rate ----------------------
def at_rate(result: Capacity, rows: Table, rate: float) -> Capacity:
    """The same deployments carrying `rate` in the same proportions: each replica's utilisation
    falls by rate / max; TTFT is re-queued at that utilisation. TPOT is the configured batch's
    (an upper bound: at lower load fewer sequences share a step)."""
    top = result.max_requests_per_second
    if not (math.isfinite(rate) and rate > 0):
        raise InputError(f"--rate: must be a positive number of requests/s, got {rate}")
    if rate > top * (1.0 + result.relative_gap):
        raise InfeasibleError(
            f"rate: {rate:g} requests/s is more than this fleet serves within the SLA "
            f"({top:.4g} requests/s at most; binding: {'; '.join(result.binding[:2])})",
            {"binding": "capacity", "max_requests_per_second": top},
        )
    worst: dict[str, tuple[float, float]] = {}
    for line in result.deployments:
        u = result.utilisation * line.utilisation * rate / top
        own = candidate_rows(rows, {k: getattr(line, k) for k in CANDIDATE_KEY})
        for cls in result.classes:
            if line.load_by_class.get(cls.name, 0.0) <= 1e-12:
                continue
            r = own[values(own, "class") == cls.name]
            r = r.assign(capacity_requests_per_s=u * values(r, "requests_per_s", float))
            ttft = float(ttft_ms_at(r, u, cls.statistic)[0])
            tpot = float(values(r, "tpot_ms", float)[0])
            old = worst.get(cls.name, (0.0, 0.0))
            worst[cls.name] = (max(old[0], tpot), max(old[1], ttft))
    seen = tuple(
        ClassLatency(
            c.name, rate * result.mix[c.name], *worst[c.name], c.statistic, c.tpot_ms, c.ttft_ms
        )
        for c in result.classes
        if c.name in worst
    )
    return replace(result, at_rate=seen, rate_requests_per_second=rate)


def scenario_at_rate(scenario: Scenario, rate: float) -> Scenario:
    """The scenario with its demand scaled to `rate` requests/s in total, same class mix (to
    check a capacity answer with an ordinary plan)."""
    wl = scenario.workload
    factor = rate / wl.peak_requests_per_second()
    update: dict[str, object] = {}
    if wl.requests_per_second is not None:
        update["requests_per_second"] = wl.requests_per_second * factor
    if wl.classes is not None:
        update["classes"] = [
            c.model_copy(update={"requests_per_second": c.requests_per_second * factor})
            if c.requests_per_second is not None
            else c
            for c in wl.classes
        ]
    return scenario.model_copy(update={"workload": wl.model_copy(update=update)})
