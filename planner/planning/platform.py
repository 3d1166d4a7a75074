"""plan_platform(platform, catalog) -> PlatformPlan: several models sized as one fleet.

Each model (a service) is evaluated as its own scenario would be; its SLA-feasible candidates
become one block of the fleet MIP, with capacity only on its own request classes, so every
replica serves one model. Inventory, hardware.max_gpus-style caps and the budget are shared;
min_replicas, redundancy and same_vendor hold per service. Pure: no files, no printing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from planner.errors import InfeasibleError
from planner.fleet.selection import Offered, fleet_problem, offered_capacity, prune_dominated
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem, FleetSolution, solve_fleet
from planner.inputs.catalog import Catalog
from planner.money.pricing import api_quotes, gpu_price
from planner.perf.table import Table, values
from planner.planning import assumptions as facts
from planner.planning.accuracy import (
    margin_cost_note,
    planning_margins,
    prediction_errors,
    sla_notes,
    with_margin_setting,
)
from planner.planning.energy import energy_of
from planner.planning.estimate import check_context
from planner.planning.pipeline import (
    _price_notes,
    _summarise,
    allowed_gpus,
    balanced,
    engine_left_out,
    evaluate_classes,
    quants_left_out,
    request_classes,
)
from planner.planning.plan import Plan
from planner.planning.resilience import (
    check_supported,
    failover_notes,
    failovers,
    redundant,
    token_share_note,
)
from planner.schema.model import Model
from planner.schema.plan import RequestClassPlan
from planner.schema.platform import Platform
from planner.schema.scenario import Scenario
from planner.units import HOURS_PER_MONTH


@dataclass(frozen=True)
class Service:
    """One model evaluated for the platform: its scenario, candidates and offered block."""

    label: str
    scenario: Scenario
    model: Model
    classes: tuple[RequestClassPlan, ...]
    rows: Table
    offered: Offered
    prices: dict
    notes: tuple[str, ...]
    alone: FleetProblem  # this model on its own under the platform's limits


@dataclass(frozen=True)
class PlatformPlan:
    """The joint plan: one section (a Plan) per model, the totals, and each model solved on
    its own under the same limits (equal to its section when no shared limit binds)."""

    name: str
    labels: tuple[str, ...]
    sections: tuple[Plan, ...]
    status: str
    gap: float
    solve_seconds: float
    total_cost_per_hour_usd: float
    gpus_by_type: dict[str, int]
    alone_cost_per_hour_usd: tuple[float, ...]  # each model alone under the same limits
    notes: tuple[str, ...]
    problem: FleetProblem

    @property
    def total_gpus(self) -> int:
        return sum(self.gpus_by_type.values())

    @property
    def monthly_cost_usd(self) -> float:
        return self.total_cost_per_hour_usd * HOURS_PER_MONTH

    @property
    def alone_monthly_total_usd(self) -> float:
        """The models' separate plans summed ($/month)."""
        return sum(self.alone_cost_per_hour_usd) * HOURS_PER_MONTH


def _service(platform: Platform, i: int, catalog: Catalog) -> Service:
    """Evaluate model i as its own scenario; its offered candidates and standalone problem."""
    scenario = platform.service_scenario(i)
    model = catalog.model(scenario.model)
    classes = request_classes(scenario)
    for cl in classes:
        check_context(model, cl.input_tokens, cl.output_tokens, f"workload class '{cl.name}': ")
    gpus = allowed_gpus(scenario, catalog)
    prices = {g.id: p for g in gpus if (p := gpu_price(g, scenario.hardware.pricing))}
    rows = evaluate_classes(scenario, catalog, model, classes, prices)
    names = [c.name for c in classes]
    offered = prune_dominated(offered_capacity(rows[values(rows, "sla_ok")], names))
    c = scenario.constraints
    budget = c.max_monthly_budget_usd / HOURS_PER_MONTH if c.max_monthly_budget_usd else None
    alone = fleet_problem(
        offered,
        [cl.requests_per_second for cl in classes],
        dict(scenario.hardware.inventory),
        c.max_gpus,
        budget,
        c.min_replicas,
    )
    left_out = engine_left_out(scenario, catalog) + quants_left_out(scenario, catalog)
    notes = tuple(left_out + _price_notes(gpus, prices, scenario))
    label = platform.models[i].label
    return Service(
        label, scenario, model, classes, rows, offered, prices, notes,
        redundant(alone, c, catalog),
    )  # fmt: skip


def joint_problem(services: list[Service], platform: Platform, catalog: Catalog) -> FleetProblem:
    """One MIP over every service's candidates: block-diagonal capacity (a replica serves
    one model), shared inventory, GPU cap and budget, per-service replica floors."""
    n_classes = [len(s.classes) for s in services]
    blocks = []
    for i, s in enumerate(services):
        cap = np.zeros((len(s.offered), sum(n_classes)))
        start = sum(n_classes[:i])
        cap[:, start : start + n_classes[i]] = s.offered.capacity
        blocks.append(cap)
    keys = Table.concat([s.offered.keys for s in services])
    offered = Offered(keys, np.vstack(blocks))
    c = platform.constraints
    budget = c.max_monthly_budget_usd / HOURS_PER_MONTH if c.max_monthly_budget_usd else None
    demand = [cl.requests_per_second for s in services for cl in s.classes]
    problem = fleet_problem(
        offered, demand, dict(platform.hardware.inventory), c.max_gpus, budget, 0
    )
    problem = redundant(problem, c, catalog)
    return replace(
        problem,
        service=tuple(i for i, s in enumerate(services) for _ in range(len(s.offered))),
        demand_service=tuple(i for i, n in enumerate(n_classes) for _ in range(n)),
        min_replicas_per_service=c.min_replicas,
    )


def _infeasible(
    services: list[Service], problem: FleetProblem, options: SolverOptions, catalog: Catalog
) -> None:
    """Why the joint plan fails: a model that cannot be served even alone, else the shared
    limits (the models fit one at a time but not together)."""
    alone = []
    for i, s in enumerate(services):
        sol = solve_fleet(s.alone, options)
        if sol.status == "infeasible":
            from planner.planning.diagnose import explain_infeasible  # pandas: this path only

            gpus = allowed_gpus(s.scenario, catalog)
            try:
                explain_infeasible(s.scenario, s.model, s.classes, s.rows, s.alone, gpus, s.prices)
            except InfeasibleError as exc:
                message = f"models[{i}] ({s.label}): {exc.message}"
                raise InfeasibleError(message, exc.details) from None
        alone.append((s, sol))
    parts = [
        f"{s.label} ${sol.cost_per_hour * HOURS_PER_MONTH:,.0f}/month, "
        f"{int(np.dot(s.alone.tp, sol.replicas))} GPUs"
        for s, sol in alone
    ]
    limits = []
    if problem.budget_per_hour is not None:
        limits.append(f"max_monthly_budget_usd ${problem.budget_per_hour * HOURS_PER_MONTH:,.0f}")
    if problem.max_gpus is not None:
        limits.append(f"max_gpus {problem.max_gpus}")
    limits += [f"inventory {g} {n}" for g, n in sorted(problem.inventory.items())]
    raise InfeasibleError(
        "shared limits: every model can be served alone ("
        + "; ".join(parts)
        + ") but not all together within "
        + (", ".join(limits) or "the platform's limits")
        + "; raise them or drop a model",
        {"binding": "shared"},
    )


def _split(solution: FleetSolution, problem: FleetProblem, services, i: int) -> FleetSolution:
    """The joint solution's lines and loads of service i, as a solution of its own block."""
    cand = np.asarray(problem.service)
    cols = np.flatnonzero(np.asarray(problem.demand_service) == i)
    mine = cand == i
    replicas = solution.replicas[mine]
    cost = float(np.dot(services[i].alone.cost_per_hour, replicas))
    load = solution.load[np.ix_(mine, cols)]
    # a joint solve stopped short proves no bound per model: NaN, so no '0.0% gap' is claimed
    bound = cost if solution.status == "optimal" else math.nan
    return replace(solution, replicas=replicas, load=load, cost_per_hour=cost, lower_bound=bound)


def _section(
    s: Service, sol: FleetSolution, catalog: Catalog, options: SolverOptions, status: str
) -> Plan:
    """One model's part of the joint plan as a Plan every renderer can format."""
    block = replace(s.alone, max_gpus=None, budget_per_hour=None, inventory={})
    fleet = _summarise(balanced(sol, block, options), s.offered, s.rows, s.classes)
    fleet = replace(fleet, status=status)
    notes = [*s.notes, *[n for n in [token_share_note(fleet.deployments, s.classes)] if n]]
    held: tuple = ()
    if s.alone.redundancy:
        k = s.offered.keys
        keys = [
            (s.label, str(g), int(t), str(q), int(b))
            for g, t, q, b in zip(k["gpu"], k["tp"], k["quant"], k["batch"], strict=True)
        ]
        held = failovers(s.alone, sol.replicas, keys, options)
        notes += failover_notes(s.alone, sol.replicas, held, options)
    errors = prediction_errors(
        catalog, s.scenario.engine, s.model.id, (d.gpu for d in fleet.deployments)
    )
    margins = planning_margins(errors, s.scenario.engine, s.scenario.search.prediction_margin)
    notes += sla_notes(errors, s.scenario.engine, fleet.deployments, s.classes, margins)  # #10
    gpus = allowed_gpus(s.scenario, catalog)
    section = Plan(
        scenario_name=s.scenario.name or s.label,
        model_id=s.model.id,
        engine=s.scenario.engine,
        classes=s.classes,
        utilisation=s.scenario.search.target_utilization,
        fleet=fleet,
        single_gpu_best=None,
        single_gpu_best_gpu=None,
        candidate_table=s.rows,
        offered=s.offered,
        api_quotes=api_quotes(catalog, s.model.id, s.classes),
        assumption_rows=facts.assumption_table(
            s.scenario, catalog, s.model, gpus, s.prices, margins.values()
        ),
        notes=tuple(notes),
        gpu_prices=s.prices,
        problem=s.alone,
        solver=options,
        failover=held,
        prediction_errors=tuple(e for e in errors.values() if e is not None),
        prediction_margins=tuple(margins.values()),
    )
    return replace(section, energy=energy_of(s.scenario, catalog, section))


def plan_platform(platform: Platform, catalog: Catalog) -> PlatformPlan:
    """Answer a platform: the cheapest one fleet serving every model within its SLAs."""
    for i in range(len(platform.models)):
        check_supported(platform.service_scenario(i))
    services = [_service(platform, i, catalog) for i in range(len(platform.models))]
    problem = joint_problem(services, platform, catalog)
    options = SolverOptions.of(platform.solver)
    start = time.perf_counter()
    apart = [solve_fleet(s.alone, options) for s in services]
    if any(sol.status == "infeasible" for sol in apart):
        _infeasible(services, problem, options, catalog)
    solution = _stacked(apart, problem)
    binds = not _within_shared(problem, solution.replicas)
    if binds:
        _over_budget(services, apart, problem)
        solution = solve_fleet(problem, options)
    if solution.status == "infeasible":
        _infeasible(services, problem, options, catalog)
    seconds = time.perf_counter() - start
    sections = tuple(
        _section(s, _split(solution, problem, services, i), catalog, options, solution.status)
        for i, s in enumerate(services)
    )
    alone = tuple(sol.cost_per_hour for sol in apart)
    gpus: dict[str, int] = {}
    for g, t, n in zip(problem.gpu, problem.tp, solution.replicas, strict=True):
        if n:
            gpus[g] = gpus.get(g, 0) + int(t * n)
    result = PlatformPlan(
        name=platform.name or "platform",
        labels=tuple(s.label for s in services),
        sections=sections,
        status=solution.status,
        gap=solution.gap,
        solve_seconds=seconds,
        total_cost_per_hour_usd=float(np.dot(problem.cost_per_hour, solution.replicas)),
        gpus_by_type=dict(sorted(gpus.items())),
        alone_cost_per_hour_usd=alone,
        notes=_platform_notes(sections, alone, solution, problem, binds),
        problem=problem,
    )
    margin = _margin_premium(platform, catalog, result)
    return replace(result, notes=(*result.notes, margin)) if margin else result


def _margin_premium(platform: Platform, catalog: Catalog, result: PlatformPlan) -> str | None:
    """What planning every model to the p90 prediction margin costs (issue #10): the same
    platform planned to the predictions (None when no margin was asked)."""
    if platform.search.prediction_margin == "none":
        return None
    bare = plan_platform(with_margin_setting(platform, "none"), catalog)
    return margin_cost_note(
        "every model",
        "the platform planned to the predictions",
        bare.status == result.status == "optimal",
        (result.monthly_cost_usd, result.total_gpus),
        (bare.monthly_cost_usd, bare.total_gpus),
    )


def _over_budget(
    services: list[Service], apart: list[FleetSolution], problem: FleetProblem
) -> None:
    """Exit 1 at once when the models' separate lower bounds already sum above the shared
    budget: the joint fleet's share for each model is a plan of it alone, so it costs no less
    (the solver would only run to its limit)."""
    budget = problem.budget_per_hour
    floor = sum(sol.lower_bound for sol in apart)
    if budget is None or floor <= budget * (1 + 1e-9):
        return
    parts = "; ".join(
        f"{s.label} ${sol.lower_bound * HOURS_PER_MONTH:,.0f}"
        for s, sol in zip(services, apart, strict=True)
    )
    raise InfeasibleError(
        f"constraints.max_monthly_budget_usd: ${budget * HOURS_PER_MONTH:,.0f}/month is below "
        f"what the models cost planned alone (at least ${floor * HOURS_PER_MONTH:,.0f}/month: "
        f"{parts}), and together they cost no less; raise the budget or drop a model",
        {"binding": "budget"},
    )


def _stacked(apart: list[FleetSolution], problem: FleetProblem) -> FleetSolution:
    """The models' separate optima side by side, as one solution of the joint problem."""
    cand, cols = np.asarray(problem.service), np.asarray(problem.demand_service)
    replicas = np.zeros(problem.n_candidates, dtype=np.int64)
    load = np.zeros(problem.capacity.shape)
    for i, sol in enumerate(apart):
        replicas[cand == i] = sol.replicas
        load[np.ix_(cand == i, cols == i)] = sol.load
    exact = all(sol.status == "optimal" for sol in apart)
    return FleetSolution(
        "optimal" if exact else "time_limit",
        replicas,
        load,
        sum(sol.cost_per_hour for sol in apart),
        sum(sol.lower_bound for sol in apart),
        sum(sol.solve_seconds for sol in apart),
        apart[0].backend,
    )


def _within_shared(problem: FleetProblem, replicas: np.ndarray) -> bool:
    """Does this fleet keep the shared inventory, GPU cap and budget? If the separate optima
    do, they are the joint optimum: each model alone faces limits no tighter than jointly."""
    tp = np.asarray(problem.tp)
    gpus = {g: 0 for g in problem.inventory}
    for g, t, n in zip(problem.gpu, tp, replicas, strict=True):
        if g in gpus:
            gpus[g] += int(t * n)
    if any(gpus[g] > cap for g, cap in problem.inventory.items()):
        return False
    if problem.max_gpus is not None and int(tp @ replicas) > problem.max_gpus:
        return False
    budget = problem.budget_per_hour
    return budget is None or float(problem.cost_per_hour @ replicas) <= budget * (1 + 1e-9)


def _platform_notes(sections, alone, solution, problem, binds: bool) -> tuple[str, ...]:
    """Whether a shared limit changed the split: the joint cost against the separate plans."""
    joint = float(np.dot(problem.cost_per_hour, solution.replicas))
    apart = sum(alone)
    if not binds:
        return (
            f"no shared limit binds: the {len(sections)} models' separate plans together "
            f"(${apart * HOURS_PER_MONTH:,.0f}/month) keep the shared inventory, GPU cap and "
            "budget, so they are the joint optimum",
        )
    return (
        f"shared limits bind: the joint plan costs ${joint * HOURS_PER_MONTH:,.0f}/month, "
        f"${(joint - apart) * HOURS_PER_MONTH:,.0f} more than the models planned separately "
        "(each alone may use the whole inventory, GPU cap and budget)",
    )
