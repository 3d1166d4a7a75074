"""plan(scenario, catalog) -> Plan: evaluate, filter, optimise. Pure: no files, no printing."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from planner.errors import InputError, unknown_name_message
from planner.fleet import disagg as disagg_fleet
from planner.fleet.balance import balance_load
from planner.fleet.bounds import fleet_floor, least_cost_bound
from planner.fleet.selection import (
    CANDIDATE_KEY,
    OFFER_INPUTS,
    Offered,
    fleet_problem,
    offered_capacity,
    prune_dominated,
    sla_met,
    sla_verdicts,
)
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem, FleetSolution, solve_fleet
from planner.inputs.catalog import Catalog
from planner.money.pricing import api_quotes, gpu_price
from planner.perf import columns
from planner.perf.candidates import DEFAULT_BATCHES, GridSpec, Price
from planner.perf.evaluate import evaluate_table, ttft_ms_at
from planner.perf.kv_link import KV_LINKS
from planner.perf.table import Table, values
from planner.planning import assumptions as facts
from planner.planning import disagg
from planner.planning.accuracy import (
    margin_cost_note,
    planning_margins,
    prediction_errors,
    sla_notes,
    with_margin_setting,
    with_margins,
)
from planner.planning.energy import energy_of
from planner.planning.estimate import check_context
from planner.planning.layouts import search_axes
from planner.planning.lines import candidate_rows, chosen, key_fields, layout_fields
from planner.planning.plan import Plan
from planner.planning.pool_layouts import build_pool_grid
from planner.planning.resilience import (
    check_supported,
    failover_notes,
    failovers,
    redundant,
    token_share_note,
)
from planner.planning.speculation import SpecRequest, spec_options, speculation_note
from planner.schema.hardware import Gpu
from planner.schema.model import Model
from planner.schema.plan import Deployment, FleetSummary, RequestClassPlan
from planner.schema.quant import Quant
from planner.schema.scenario import Scenario
from planner.units import HOURS_PER_MONTH, SECONDS_PER_HOUR


def request_classes(scenario: Scenario) -> tuple[RequestClassPlan, ...]:
    """Each class with its demand and effective SLA (its own, else the scenario's)."""
    out = []
    cached = scenario.workload.prefix_cached()
    for name, rate, i_len, o_len, sla in scenario.workload.resolved_classes():
        own = sla or scenario.sla
        out.append(
            RequestClassPlan(
                name=name,
                requests_per_second=rate,
                input_tokens=i_len,
                output_tokens=o_len,
                tpot_ms=own.tpot_ms if own.tpot_ms is not None else scenario.sla.tpot_ms,
                ttft_ms=own.ttft_ms if own.ttft_ms is not None else scenario.sla.ttft_ms,
                statistic=own.statistic if sla else scenario.sla.statistic,
                prefix_cached_tokens=cached.get(name, 0),
            )
        )
    return tuple(out)


def allowed_gpus(scenario: Scenario, catalog: Catalog) -> list[Gpu]:
    """The scenario's GPU list (default: the whole catalog) minus exclusions and the GPUs its
    engine does not run on; ids checked."""
    hw = scenario.hardware
    for key, ids in (
        ("hardware.gpus", hw.gpus or []),
        ("hardware.exclude", hw.exclude),
        ("hardware.inventory", list(hw.inventory)),
        ("hardware.fleet", list(hw.fleet)),
        ("hardware.pricing.usd_per_gpu_hour", list(hw.pricing.usd_per_gpu_hour)),
    ):
        for gpu_id in ids:
            if gpu_id not in catalog.gpus:
                raise InputError(f"{key}: " + unknown_name_message("GPU", gpu_id, catalog.gpus))
    outside = hw.outside_fleet()
    if outside is not None:
        raise InputError(outside)
    emptied = hw.nothing_left(catalog.gpus)  # load_scenario says so first, naming the file
    if emptied is not None:
        raise InputError(emptied)
    listed = _listed_gpus(scenario, catalog)
    engine = catalog.engine(scenario.engine)
    kept = [g for g in listed if engine.runs_on(g.family)]
    if listed and not kept:
        raise InputError(
            f"engine: {scenario.engine} runs on none of the GPUs allowed "
            f"({', '.join(g.id for g in listed)}): {engine.hardware()}; choose another "
            "engine (vllm and sglang run on every family in the catalog) or other GPUs"
        )
    return kept


def _listed_gpus(scenario: Scenario, catalog: Catalog) -> list[Gpu]:
    """The scenario's GPUs before the engine's say: its list (default: its fleet's, else the
    whole catalog) minus exclusions."""
    hw = scenario.hardware
    default = sorted(hw.fleet) if hw.fleet else sorted(catalog.gpus)  # a fleet: its own GPUs
    chosen = hw.gpus if hw.gpus is not None else default
    return [catalog.gpus[g] for g in chosen if g not in set(hw.exclude)]


def engine_left_out(
    scenario: Scenario, catalog: Catalog, gpus: list[Gpu] | None = None
) -> list[str]:
    """A note naming the allowed GPUs (or `gpus`: a fleet's own) the scenario's engine does
    not run on, left out of the plan (TensorRT-LLM on an MI300X), or none."""
    engine = catalog.engine(scenario.engine)
    listed = _listed_gpus(scenario, catalog) if gpus is None else gpus
    out = [g.id for g in listed if not engine.runs_on(g.family)]
    if not out:
        return []
    return [f"{scenario.engine} does not run on {', '.join(out)}, so left out: {engine.hardware()}"]


def allowed_quants(scenario: Scenario, catalog: Catalog) -> list[Quant]:
    """The scenario's quants minus those its engine does not load (llama.cpp: no FP8); exit 2
    when none is left."""
    engine = catalog.engine(scenario.engine)
    listed = [catalog.quant(q) for q in scenario.search.quants]
    kept = [q for q in listed if engine.runs_quant(q.id)]
    if not kept:
        raise InputError(
            f"search.quants: {scenario.engine} runs none of the quants asked for "
            f"({', '.join(q.id for q in listed)}): {engine.formats()}; choose among those "
            "or another engine (vllm and sglang run every quant in the catalog)"
        )
    return kept


def quants_left_out(scenario: Scenario, catalog: Catalog) -> list[str]:
    """A note naming the scenario's quants its engine does not load, left out of the search
    (fp8 on llama.cpp), or none."""
    engine = catalog.engine(scenario.engine)
    out = [q for q in scenario.search.quants if not engine.runs_quant(q)]
    if not out:
        return []
    return [f"{scenario.engine} does not run {', '.join(out)}, so left out: {engine.formats()}"]


def _batches(scenario: Scenario) -> list[int]:
    s = scenario.search
    pool = s.batches if s.batches is not None else DEFAULT_BATCHES
    chosen = sorted({b for b in pool if s.batch_min <= b <= s.batch_max})
    if not chosen:
        raise InputError(
            f"search: no batch size between batch_min {s.batch_min} and batch_max {s.batch_max}"
        )
    return chosen


def evaluate_classes(
    scenario: Scenario,
    catalog: Catalog,
    model: Model,
    classes: tuple[RequestClassPlan, ...],
    prices: dict[str, Price],
) -> Table:
    """Every candidate evaluated for every class, with an SLA verdict per row (no pandas:
    issue #16; only `diagnose` reads it as a DataFrame)."""
    gpus = allowed_gpus(scenario, catalog)
    quants = allowed_quants(scenario, catalog)
    engine = catalog.engine(scenario.engine)
    speculative = scenario_spec_options(scenario, catalog, model)
    axes = search_axes(scenario.search, model, gpus, quants)
    kind = scenario.search.prediction_margin  # issue #10: the records only when asked
    ids = [g.id for g in gpus]
    errors = {} if kind == "none" else prediction_errors(catalog, scenario.engine, model.id, ids)
    margins = planning_margins(errors, scenario.engine, kind)
    frames = []
    for cls in classes:
        spec = GridSpec(
            gpus=gpus,
            quants=quants,
            tps=scenario.search.tp,
            kv_dtypes=scenario.search.kv_dtypes,
            batches=_batches(scenario),
            shapes=[(cls.input_tokens, cls.output_tokens)],
            prices=prices,
            speculative=speculative,
            prefix_cached_tokens=cls.prefix_cached_tokens,
            roles=disagg.roles_for(scenario, classes),  # issue #11
            pps=axes.pps,
            eps=axes.eps,
            dp_attentions=axes.dp_attentions,
            kv_links=KV_LINKS,  # issue #11: pools may pass the KV over NVLink in one node
        )
        grid, _ = build_pool_grid(model, spec, engine, axes)  # MoE pools' layouts, #11
        if grid.empty:
            continue
        rows = evaluate_table(model, grid, scenario.search.target_utilization, cls.statistic)
        frames.append(_judged(with_margins(rows, margins), cls))  # issue #10: p90 margin
    if not frames:
        return columns.empty_table(columns.CANDIDATE_COLUMNS)
    return columns.conform_table(Table.concat(frames), columns.CANDIDATE_COLUMNS)


def scenario_spec_options(scenario: Scenario, catalog: Catalog, model: Model) -> list:
    """The speculation settings the scenario's search allows (issue #11)."""
    s = scenario.search
    req = SpecRequest(s.speculative, s.spec_tokens, s.spec_acceptance, s.draft_model)
    return spec_options(model, req, catalog)


def _judged(rows: Table, cls: RequestClassPlan) -> Table:
    """One class's evaluated rows with the class, its SLA bounds and the verdict on each."""
    why = sla_verdicts(rows, cls.tpot_ms, cls.ttft_ms)
    verdict = {
        "class": cls.name,
        "sla_tpot_ms": np.nan if cls.tpot_ms is None else cls.tpot_ms,
        "sla_ttft_ms": np.nan if cls.ttft_ms is None else cls.ttft_ms,
        "why_not": why,
        "sla_ok": why == "",
    }
    return rows.assign(**verdict)


def _summarise(
    solution: FleetSolution,
    offered: Offered,
    rows: Table,
    classes: tuple[RequestClassPlan, ...],
) -> FleetSummary:
    """Turn a solver result into fleet lines with predicted latencies per class."""
    names = [c.name for c in classes]
    lines = []
    table = rows[_LINE_INPUTS]  # issue #16: the few columns a line reads, filtered per line
    for i, cand, n_rep in chosen(solution.replicas, offered.keys):
        own = candidate_rows(table, cand, names)
        at = {str(n): k for k, n in enumerate(own["class"].tolist())}  # one row per class
        load = {n: float(solution.load[i, j]) for j, n in enumerate(names)}
        served = [n for n in names if load[n] > 1e-9] or [n for n in names if n in at]
        tpot_of, ttft_of = values(own, "tpot_ms", float), values(own, "ttft_ms", float)
        tpot = {n: float(tpot_of[at[n]]) for n in served}
        ttft = {n: float(ttft_of[at[n]]) for n in served}
        first = {k: own[k][0] for k in _LINE_FIRST}
        lines.append(
            Deployment(
                **key_fields(cand, n_rep),
                **layout_fields(cand),
                price_usd_per_gpu_hour=float(first["price_usd_per_gpu_hour"]),
                price_provider=str(first["price_provider"]),
                cost_per_hour_usd=n_rep * float(cand["cost_per_hour_usd"]),
                requests_per_s=sum(load.values()),
                capacity_requests_per_s=_capacity(load, offered.capacity[i], names, n_rep),
                load_by_class=load,
                tpot_ms=max(tpot.values()),
                ttft_ms=max(ttft.values()),
                tpot_ms_by_class=tpot,
                ttft_ms_by_class=ttft,
                spec_acceptance=float(first["spec_acceptance"]),
                gpus_per_replica=int(cand["gpus_per_replica"]),
                nodes_per_replica=int(cand["nodes_per_replica"]),
                kv_link=str(cand["kv_link"]),  # issue #11
            )
        )
    return _totals(solution, tuple(lines), classes)


# what a fleet line reads of its candidate's rows (besides the key it is found by)
_LINE_FIRST = ("price_usd_per_gpu_hour", "price_provider", "spec_acceptance")
_LINE_INPUTS = [*CANDIDATE_KEY, "class", "tpot_ms", "ttft_ms", *_LINE_FIRST]


def _capacity(load: dict[str, float], capacity: np.ndarray, names: list[str], n_rep: int) -> float:
    """Requests/s these replicas carry at planned load for their class mix (`capacity`: one
    replica's per class, in `names` order)."""
    per_class = dict(zip(names, capacity.tolist(), strict=True))
    used = sum(load[n] / per_class[n] for n in names if load[n] > 1e-12 and per_class[n] > 0)
    total = sum(load.values())
    if used <= 0:
        return n_rep * float(max(per_class.values()))
    return total / used * n_rep


def _totals(
    solution: FleetSolution, lines: tuple[Deployment, ...], classes: tuple[RequestClassPlan, ...]
) -> FleetSummary:
    cost = sum(d.cost_per_hour_usd for d in lines)
    out_tok_s = sum(c.requests_per_second * c.output_tokens for c in classes)
    all_tok_s = sum(c.requests_per_second * (c.input_tokens + c.output_tokens) for c in classes)
    return FleetSummary(
        status=solution.status,
        deployments=lines,
        total_cost_per_hour_usd=cost,
        total_gpus=sum(d.gpus for d in lines),
        cost_per_1k_output_tokens_usd=cost / (SECONDS_PER_HOUR * out_tok_s) * 1e3,
        cost_per_1m_tokens_usd=cost / (SECONDS_PER_HOUR * all_tok_s) * 1e6,
        lower_bound_per_hour_usd=solution.lower_bound,
        gap=solution.gap,
        solve_seconds=solution.solve_seconds,
    )


def balanced(
    solution: FleetSolution, problem: FleetProblem, options: SolverOptions
) -> FleetSolution:
    """The same fleet with its load spread evenly and reproducibly over the replicas."""
    if solution.status == "infeasible" or disagg_fleet.uses_pools(problem, solution.replicas):
        return solution  # pools keep the MIP's split: balance_load knows no pools (issue #11)
    load = balance_load(problem, solution.replicas, options)
    return solution if load is None else replace(solution, load=load)


def _single_gpu_best(
    problem: FleetProblem,
    offered: Offered,
    rows: Table,
    classes: tuple[RequestClassPlan, ...],
    options: SolverOptions,
    solution: FleetSolution,
    fleet: FleetSummary,
) -> tuple[FleetSummary, str] | None:
    """The cheapest fleet that uses one GPU type only, for comparison with the optimum (one
    MIP per GPU type over the candidates already offered; only the cheapest is summarised).
    Types are tried cheapest cost floor first, and a type whose floor is above the best
    fleet found is not solved (issue #16); ties still go to the first GPU id. An optimal
    `solution` of one GPU type is that type's plan, `fleet` (its summary) with no solve: it is
    feasible there, and no fleet of a subset of the candidates costs less (issue 16: agent
    and chatbot solved it again)."""
    best: tuple[float, str, FleetSolution] | None = None
    gpu = np.asarray(problem.gpu, dtype=object)
    subsets = {g: problem.restricted(gpu == g) for g in sorted(set(problem.gpu))}
    used = set(gpu[solution.replicas > 0].tolist())
    if solution.status == "optimal" and len(used) == 1:
        (gpu_id,) = used
        cost = float(np.dot(problem.cost_per_hour, solution.replicas))
        best = (cost, gpu_id, solution)
        del subsets[gpu_id]
    floors = {g: fleet_floor(sub, options) for g, sub in subsets.items()}
    for gpu_id in sorted(subsets, key=lambda g: (floors[g], g)):
        if best is not None and (floors[gpu_id], gpu_id) > (best[0] * (1 + 1e-9), best[1]):
            continue  # cannot beat (or tie first with) the best fleet found
        sub = subsets[gpu_id]
        if best is not None and least_cost_bound(sub, options) > best[0] * (1 + 1e-6):
            continue  # proven dearer by a smaller MIP (fleet/bounds.py, issue 16)
        sol = solve_fleet(sub, options)
        if sol.status == "infeasible":
            continue
        cost = float(np.dot(sub.cost_per_hour, sol.replicas))
        if best is None or (cost, gpu_id) < best[:2]:
            best = (cost, gpu_id, sol.widened(gpu == gpu_id))
    if best is None:
        return None
    return (fleet if best[2] is solution else _summarise(best[2], offered, rows, classes)), best[1]


def plan(scenario: Scenario, catalog: Catalog, comparisons: bool = True) -> Plan:
    """Answer a scenario: the cheapest fleet meeting its SLAs and constraints.

    `comparisons=False` (a sweep point, #14) leaves out what is only set beside the plan: the
    best single-GPU-type fleet, the percentile's premium, the all-on-demand and all-reserved
    plans over time and the energy figures; the fleet and the plan over time are the same."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    check_supported(scenario)
    model = catalog.model(scenario.model)
    catalog.engine(scenario.engine)
    for q in scenario.search.quants:
        catalog.quant(q)
    classes = request_classes(scenario)
    for cl in classes:
        check_context(model, cl.input_tokens, cl.output_tokens, f"workload class '{cl.name}': ")
    gpus = allowed_gpus(scenario, catalog)
    prices = {g.id: p for g in gpus if (p := gpu_price(g, scenario.hardware.pricing))}
    notes = engine_left_out(scenario, catalog) + quants_left_out(scenario, catalog)
    notes += _price_notes(gpus, prices, scenario)
    ttft_sla = [math.inf if cl.ttft_ms is None else cl.ttft_ms for cl in classes]
    rows = evaluate_classes(scenario, catalog, model, classes, prices)
    timings["evaluate"] = time.perf_counter() - start
    names = [c.name for c in classes]
    feasible = rows[OFFER_INPUTS][values(rows, "sla_ok")]  # issue #16: few columns
    offered = prune_dominated(offered_capacity(feasible, names))
    c = scenario.constraints
    budget = c.max_monthly_budget_usd / HOURS_PER_MONTH if c.max_monthly_budget_usd else None
    problem = fleet_problem(
        offered,
        [cl.requests_per_second for cl in classes],
        scenario.hardware.available(),
        c.max_gpus,
        budget,
        c.min_replicas,
        ttft_sla,
    )
    problem = redundant(problem, c, catalog)
    options = SolverOptions.of(scenario.solver)
    t0 = time.perf_counter()
    solution = solve_fleet(problem, options)
    timings["solve"] = time.perf_counter() - t0
    if solution.status == "infeasible":
        from planner.planning.diagnose import explain_infeasible

        explain_infeasible(scenario, model, classes, rows, problem, gpus, prices)
    fleet = _summarise(balanced(solution, problem, options), offered, rows, classes)
    pools = disagg.pools_note(fleet, classes)
    if pools:
        notes.append(pools)
    held, held_notes = _held(problem, solution, offered, fleet, classes, options)
    notes += held_notes
    notes += _unbounded_notes(fleet, classes)
    errors = prediction_errors(
        catalog, scenario.engine, model.id, (d.gpu for d in fleet.deployments)
    )
    margins = planning_margins(errors, scenario.engine, scenario.search.prediction_margin)
    notes += sla_notes(errors, scenario.engine, fleet.deployments, classes, margins)
    t0 = time.perf_counter()
    single = (
        _single_gpu_best(problem, offered, rows, classes, options, solution, fleet)
        if comparisons
        else None
    )
    timings["single_gpu"] = time.perf_counter() - t0
    result = Plan(
        scenario_name=scenario.name or "scenario",
        model_id=model.id,
        engine=scenario.engine,
        classes=classes,
        utilisation=scenario.search.target_utilization,
        fleet=fleet,
        single_gpu_best=single[0] if single else None,
        single_gpu_best_gpu=single[1] if single else None,
        candidate_table=rows,
        offered=offered,
        api_quotes=api_quotes(catalog, model.id, classes),
        assumption_rows=facts.assumption_table(
            scenario, catalog, model, gpus, prices, margins.values()
        ),
        notes=tuple(notes),
        gpu_prices=prices,
        timings_s=timings,
        problem=problem,
        solver=options,
        failover=held,
        prediction_errors=tuple(e for e in errors.values() if e is not None),
        prediction_margins=tuple(margins.values()),
    )
    premium = percentile_premium(scenario, catalog, result) if comparisons else None
    if premium:
        result = replace(result, notes=(*result.notes, premium))
    margin = margin_premium(scenario, catalog, result) if comparisons else None
    if margin:
        result = replace(result, notes=(*result.notes, margin))
    spec_note = speculation_note(scenario, result)  # issue #11
    if spec_note:
        result = replace(result, notes=(*result.notes, spec_note))
    if scenario.finance is not None:
        from planner.planning.timeplan import plan_over_time

        t0 = time.perf_counter()
        over_time = plan_over_time(scenario, catalog, result, comparisons)
        result = replace(result, over_time=over_time)
        timings["over_time"] = time.perf_counter() - t0
    if comparisons:
        result = replace(result, energy=energy_of(scenario, catalog, result))
    timings["total"] = time.perf_counter() - start
    return result


def _held(problem, solution, offered, fleet, classes, options):
    """Redundancy that holds: each line's failover share (when n+k is asked) and the
    notes on losing a replica and on token replicas."""
    notes = [n for n in [token_share_note(fleet.deployments, classes)] if n]
    if not problem.redundancy or solution.status == "infeasible":
        return (), notes
    k = offered.keys
    keys = [
        ("", str(g), int(t), str(q), int(b))
        for g, t, q, b in zip(k["gpu"], k["tp"], k["quant"], k["batch"], strict=True)
    ]
    held = failovers(problem, solution.replicas, keys, options)
    return held, notes + failover_notes(problem, solution.replicas, held, options)


def _mean_ttft_ok(rows: Table, classes: tuple[RequestClassPlan, ...], util: float):
    """Each row's SLA verdict with every TTFT bound on the mean instead of a percentile."""
    ok = values(rows, "sla_ok").copy()
    ttft = values(rows, "ttft_ms", float).copy()
    for cls in classes:
        if cls.statistic == "mean" or cls.ttft_ms is None:
            continue
        mine = values(rows, "class") == cls.name
        own = rows if mine.all() else rows[mine]  # issue #16: one class, no copy
        mean = ttft_ms_at(own, util, "mean")
        ok[mine] = sla_met(own.assign(ttft_ms=mean), cls.tpot_ms, cls.ttft_ms)
        ttft[mine] = mean
    return ok, ttft  # the mean TTFT too: a pool's TTFT part places it in the MIP (#11)


def percentile_premium(scenario: Scenario, catalog: Catalog, result: Plan) -> str | None:
    """What bounding a TTFT percentile costs: the fleet re-solved over the same evaluated
    candidates with every TTFT bound on the mean."""
    if all(c.statistic == "mean" or c.ttft_ms is None for c in result.classes):
        return None
    stats = sorted({c.statistic for c in result.classes if c.statistic != "mean"})
    rows = result.candidate_table
    ok, mean_ttft = _mean_ttft_ok(rows, result.classes, result.utilisation)
    names = [c.name for c in result.classes]
    feasible = rows[OFFER_INPUTS].assign(ttft_ms=mean_ttft)[ok]
    offered = prune_dominated(offered_capacity(feasible, names))
    c = scenario.constraints
    budget = c.max_monthly_budget_usd / HOURS_PER_MONTH if c.max_monthly_budget_usd else None
    problem = fleet_problem(
        offered,
        [cl.requests_per_second for cl in result.classes],
        scenario.hardware.available(),
        c.max_gpus,
        budget,
        c.min_replicas,
        [math.inf if cl.ttft_ms is None else cl.ttft_ms for cl in result.classes],
    )
    relaxed = solve_fleet(redundant(problem, c, catalog), result.solver)
    if relaxed.status != "optimal" or result.fleet.status != "optimal":
        # two plans cut short by the limit differ by where each stopped, not by the bound
        return (
            f"what bounding the {'/'.join(stats)} TTFT instead of the mean costs is not "
            "priced: the solver stopped before proving both plans optimal (raise "
            "solver.time_limit_s or solver.max_nodes)"
        )
    mean_cost = float(np.dot(problem.cost_per_hour, relaxed.replicas))
    extra = result.fleet.total_cost_per_hour_usd - mean_cost
    return (
        f"bounding the {'/'.join(stats)} TTFT instead of the mean costs "
        f"${extra * HOURS_PER_MONTH:,.0f} a month (mean-TTFT plan: "
        f"${mean_cost * HOURS_PER_MONTH:,.0f} a month)"
    )


def margin_premium(scenario: Scenario, catalog: Catalog, result: Plan) -> str | None:
    """What planning to the p90 prediction margin costs (issue #10): the same scenario planned
    to the predictions themselves, its fleet alone (None when no margin was asked)."""
    if scenario.search.prediction_margin == "none" or result.fleet.status == "infeasible":
        return None
    bare = plan(with_margin_setting(scenario, "none"), catalog, comparisons=False).fleet
    return margin_cost_note(
        "",
        "the plan to the predictions",
        bare.status == result.fleet.status == "optimal",
        (result.fleet.monthly_cost_usd, result.fleet.total_gpus),
        (bare.monthly_cost_usd, bare.total_gpus),
    )


def _unbounded_notes(fleet: FleetSummary, classes: tuple[RequestClassPlan, ...]) -> list[str]:
    """A class with no TPOT or TTFT target is planned for cost alone: say so, with the slowest
    figure its aggregated lines reach, so a missing `sla:` is not read as a met one."""
    notes = []
    for cl in classes:
        missing = [name for name, v in (("TPOT", cl.tpot_ms), ("TTFT", cl.ttft_ms)) if v is None]
        if not missing:
            continue
        lines = [
            d
            for d in fleet.deployments
            if d.role == "aggregated" and d.load_by_class.get(cl.name, 0.0) > 0
        ]
        by = {"TPOT": "tpot_ms_by_class", "TTFT": "ttft_ms_by_class"}
        worst = {
            name: max((getattr(d, by[name]).get(cl.name, math.nan) for d in lines), default=None)
            for name in missing
        }
        reached = [f"{n} up to {v:,.0f} ms" for n, v in worst.items() if v is not None and v == v]
        shown = f" ({', '.join(reached)} on its lines)" if reached else ""
        keys = " and ".join(f"sla.{n.lower()}_ms" for n in missing)
        them, are = ("both", "both are") if len(missing) == 2 else ("it", "it is")
        notes.append(
            f"class '{cl.name}' has no {' or '.join(missing)} target: {are} left to cost"
            f"{shown}; set {keys} (or the class's own sla) to bound {them}"
        )
    return notes


def _price_notes(gpus: list[Gpu], prices: dict[str, Price], scenario: Scenario) -> list[str]:
    tier = scenario.hardware.pricing.tier
    missing = [g.id for g in gpus if g.id not in prices]
    notes = []
    if missing:
        notes.append(
            f"no {tier.replace('_', '-')} price in the catalog, so left out: "
            f"{', '.join(missing)} (set hardware.pricing.usd_per_gpu_hour to include them)"
        )
    assumed = [g for g, p in prices.items() if p.assumption]
    if assumed:
        notes.append(f"prices supplied by the scenario (assumptions): {', '.join(assumed)}")
    return notes
