"""Why no plan exists: the binding constraint, by how much, and the nearest change."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import get_args

import numpy as np
import pandas as pd

from planner.errors import InfeasibleError, SolverError
from planner.fleet import disagg as fleet_disagg
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem, solve_fleet
from planner.perf import columns
from planner.perf import memory as mem
from planner.perf.candidates import Price
from planner.perf.table import Table
from planner.planning import disagg
from planner.schema.hardware import Gpu
from planner.schema.model import Model
from planner.schema.plan import RequestClassPlan
from planner.schema.scenario import Pricing, Scenario
from planner.units import HOURS_PER_MONTH


def _memory_message(model: Model, rows: pd.DataFrame, gpus: list[Gpu]) -> str:
    """The model does not fit anywhere: the closest layout vs its memory, and how many GPUs
    and nodes the weights alone need against the largest replica the search allowed."""
    if rows.empty:
        return (
            f"no allowed (GPU, tp, quantization) combination can run {model.id}; "
            "allow more GPUs, tensor-parallel degrees or quantizations"
        )
    best = rows.loc[rows["memory_shortfall_gb"].idxmin()]
    biggest = max(gpus, key=lambda g: g.memory_gb)
    return (
        f"memory: {model.id} does not fit on any allowed GPU; the closest is {best.gpu} "
        f"{_layout(best)} {best.quant} needing {best.memory_per_gpu_gb:.1f} GB per GPU at batch "
        f"{best.batch} against {best.memory_usable_gb:.1f} GB usable; the largest allowed GPU "
        f"is {biggest.id} ({biggest.memory_gb:g} GB). " + _multinode_advice(model, rows, gpus)
    )


def _spec_label(row: pd.Series) -> str:
    """' draft k5 (a 0.6)' for a speculating candidate, '' otherwise (issue #11)."""
    if row["speculative"] == "off":
        return ""
    return f" {row['speculative']} k{row['spec_tokens']} (a {row['spec_acceptance']:g})"


def _spec_hint(fitting: pd.DataFrame) -> str:
    """Suggest speculative decoding when the search left it off (issue #11)."""
    if (fitting["speculative"] != "off").any():
        return ""
    return " or let search.speculative consider mtp/draft (auto)"


def _layout(row: pd.Series) -> str:
    """'tp 8' or 'tp 8 pp 2 ep 16 dp_attention 2' for a candidate row."""
    extra = [f"{k} {int(row[k])}" for k in ("pp", "ep", "dp_attention") if int(row[k]) > 1]
    return " ".join([f"tp {int(row.tp)}", *extra])


def _multinode_advice(model: Model, rows: pd.DataFrame, gpus: list[Gpu]) -> str:
    """What would fit: the GPUs (and nodes) the leanest allowed weights need, the largest
    replica allowed, and only the changes that can help (no lower-bit advice when the
    leanest allowed quantization is already 4-bit, no tp advice beyond a node)."""
    # a categorical column (columns.SHARED, #16): its values read as floats, first minimum
    lean = rows.iloc[int(np.argmin(rows["weight_bytes_per_param"].to_numpy(dtype=float)))]
    by_id = {g.id: g for g in gpus}
    gpu = by_id.get(str(lean.gpu), max(gpus, key=lambda g: g.memory_gb))
    weights = float(
        mem.bytes_weights_total(
            model,
            np.asarray(lean.weight_bytes_per_param),
            np.asarray(lean.embedding_bytes_per_param),
        )
    )
    need = math.ceil(weights / (0.9 * gpu.memory_bytes))
    node = min(gpu.gpus_per_node or gpu.scaleup_domain_gpus, gpu.scaleup_domain_gpus)
    largest = int(rows["gpus_per_replica"].max())
    text = (
        f"Its {lean.quant} weights alone ({weights / 1e9:,.0f} GB) need at least {need} "
        f"{gpu.id} GPUs"
    )
    advice = []
    if need > node:
        nodes = math.ceil(need / node)
        text += (
            f", more than one {node}-GPU node ({nodes} nodes)"
            if node > 1
            else f", more than one GPU (no scale-up link joins {gpu.id} GPUs)"
        )
        if gpu.scaleout_link_gb_per_s:
            advice.append(
                f"allow search.pp up to {nodes}"
                + (" or search.ep / search.dp_attention across nodes" if model.moe else "")
            )
        else:
            advice.append(f"choose a GPU with a scale-out link in the catalog ({gpu.id} has none)")
    else:
        advice.append(f"allow a tp of at least {need}")
    text += f"; the search allowed at most {largest} GPU(s) per replica. "
    if float(rows["weight_bytes_per_param"].to_numpy(dtype=float).min()) > 0.5:
        advice.append(
            "allow a lower-bit quantization than "
            + ", ".join(sorted(set(rows["quant"])))
            + " (where such a checkpoint exists)"
        )
    advice.append("allow a GPU with more memory")
    msg = "; or ".join(advice)
    return text + msg[0].upper() + msg[1:]


def _sla_message(cls: RequestClassPlan, fitting: pd.DataFrame) -> str:
    """No fitting candidate meets the SLA of a class: the best reachable figures."""
    best_tpot = fitting.loc[fitting["tpot_ms"].idxmin()]
    best_ttft = fitting.loc[fitting["ttft_ms"].idxmin()]
    parts = [f"SLA of class '{cls.name}': no candidate meets it."]
    if cls.tpot_ms is not None and best_tpot.tpot_ms > cls.tpot_ms:
        parts.append(
            f"The best TPOT any candidate reaches is {best_tpot.tpot_ms:.1f} ms "
            f"({best_tpot.gpu} tp {best_tpot.tp} {best_tpot.quant} batch {best_tpot.batch}"
            f"{_spec_label(best_tpot)}) against a target of {cls.tpot_ms:g} ms; relax "
            f"sla.tpot_ms to at least {math.ceil(best_tpot.tpot_ms * 10) / 10:g} or allow "
            f"faster GPUs/lower-bit quants{_spec_hint(fitting)}."
        )
    if cls.ttft_ms is not None:
        ok_tpot = fitting if cls.tpot_ms is None else fitting[fitting["tpot_ms"] <= cls.tpot_ms]
        pool = ok_tpot if not ok_tpot.empty else fitting
        best = pool.loc[pool["ttft_ms"].idxmin()]
        if best.ttft_ms > cls.ttft_ms:
            parts.append(
                f"The best {cls.statistic} TTFT is {best.ttft_ms:.0f} ms ({best.gpu} tp "
                f"{best.tp} {best.quant} batch {best.batch}) against {cls.ttft_ms:g} ms; relax "
                f"sla.ttft_ms to at least {math.ceil(best.ttft_ms):g}."
            )
    if len(parts) == 1:
        parts.append(
            f"TPOT and TTFT are each reachable but never together; best TPOT "
            f"{best_tpot.tpot_ms:.1f} ms, best TTFT {best_ttft.ttft_ms:.0f} ms."
        )
    return " ".join(parts)


def _fleet_message(scenario: Scenario, problem: FleetProblem) -> str:
    """The candidates exist but the fleet limits bind: say which and what would do."""
    c = scenario.constraints
    msgs = []
    options = SolverOptions.of(scenario.solver)
    no_budget = solve_fleet(problem.relaxed(budget=True), options)
    no_gpu_cap = solve_fleet(problem.relaxed(gpus=True), options)
    free = solve_fleet(
        problem.relaxed(budget=True, gpus=True),
        options,
    )
    if problem.budget_per_hour is not None and no_budget.status != "infeasible":
        need = no_budget.cost_per_hour * HOURS_PER_MONTH
        msgs.append(
            f"budget: the cheapest plan costs ${need:,.0f} a month against "
            f"constraints.max_monthly_budget_usd ${c.max_monthly_budget_usd:,.0f}; raise it to "
            f"at least {math.ceil(need):,}"
        )
    fewest = _fewest_gpus(problem, options) if problem.max_gpus else None
    if fewest is not None and problem.max_gpus is not None and fewest[0] > problem.max_gpus:
        n, fleet = fewest
        msgs.append(
            f"max_gpus: the fewest GPUs that serve the demand are {n} ({fleet}) against "
            f"constraints.max_gpus {problem.max_gpus}; raise it to at least {n}, or allow "
            "larger GPUs or lower-bit quants"
        )
    elif (problem.inventory or problem.max_gpus) and no_gpu_cap.status != "infeasible":
        used = int(sum(t * n for t, n in zip(problem.tp, no_gpu_cap.replicas, strict=True)))
        limits = ", ".join(f"{g} {n}" for g, n in sorted(problem.inventory.items()))
        cap = f"max_gpus {problem.max_gpus}" if problem.max_gpus else ""
        counts = scenario.hardware.count_keys()
        msgs.append(
            f"{counts.removeprefix('hardware.')}: the demand needs {used} GPUs in the cheapest "
            f"plan ({_fleet_text(problem, no_gpu_cap.replicas)}) but the allowed counts are "
            f"{'; '.join(x for x in (limits, cap) if x)}; raise {counts} or "
            "constraints.max_gpus, or allow more GPU types"
        )
    if not msgs and free.status != "infeasible":
        msgs.append(
            "the budget and the GPU limits bind together: without both, the cheapest plan "
            f"costs ${free.cost_per_hour * HOURS_PER_MONTH:,.0f} a month with "
            f"{int(sum(t * n for t, n in zip(problem.tp, free.replicas, strict=True)))} GPUs"
        )
    names = [name for name, *_ in scenario.workload.resolved_classes()]
    return "; ".join(msgs) or _unbounded_failure(problem, free.status, names)


def _unbounded_failure(problem: FleetProblem, status: str, names: list[str]) -> str:
    """Without budget and GPU limits a fleet always exists (replicas are bounded by the
    demand), so failing even then is a class no candidate carries, or a solver failure."""
    carried = np.zeros(0, dtype=bool)  # no candidates: no class to blame
    if problem.n_candidates:
        carried = np.asarray((problem.capacity > 0).any(axis=0), dtype=bool)
    for w, ok in enumerate(carried):
        if not ok:
            return (
                f"demand: no offered candidate can carry class '{names[w]}' at its SLA; "
                "relax its SLA or allow more GPUs, tensor-parallel degrees or quantizations"
            )
    unpaired = _unpaired_pools(problem, names)
    if unpaired:
        return unpaired
    raise SolverError(
        f"the solver found no fleet even without the budget and GPU limits ({status}), "
        f"which always admit one: the demand ({problem.demand.sum():.3g} requests/s) or the "
        "costs are likely beyond its numerical range; raise solver.time_limit_s or scale "
        "the scenario down"
    )


def _unpaired_pools(problem: FleetProblem, names: list[str]) -> str | None:
    """A class that only prefill/decode pools carry, where no prefill pool and decode pool fit
    one split of its TTFT bound (`fleet.disagg`: 2-75% of it to the decode side): each pool
    meets the bound alone, yet no pair does. None where every class has a pair."""
    if not fleet_disagg.has_roles(problem) or problem.ttft_part_ms is None:
        return None
    role = fleet_disagg.roles_of(problem)
    group = fleet_disagg.groups_of(problem)
    eligible = fleet_disagg.eligibility(problem)
    shares = np.asarray(fleet_disagg.DECODE_TTFT_SHARES)
    for w, name in enumerate(names):
        carried = problem.capacity[:, w] > 0
        if (carried & (role == "aggregated")).any():
            continue
        pre, dec = (carried & (role == "prefill")), (carried & (role == "decode"))
        same = group[pre][:, None] == group[dec][None, :]
        common = (eligible[pre, w][:, None, :] & eligible[dec, w][None, :, :]).any(axis=2)
        if (same & common).any() or not (pre.any() and dec.any()):
            continue
        part = problem.ttft_part_ms[:, w]
        # the least bound some pair fits: P <= (1 - f) X and D <= f X for a split f
        need = np.maximum(
            part[pre][:, None, None] / (1 - shares), part[dec][None, :, None] / shares
        ).min(axis=2)
        need = np.where(same, need, np.inf)
        bound = float(problem.ttft_sla_ms[w])  # type: ignore[index]
        return (
            f"TTFT of class '{name}': only prefill/decode pools carry it, and no prefill pool "
            f"pairs with a decode pool within its bound of {bound:,.0f} ms (the bound is "
            f"split between the two sides, {100 * shares[0]:g}-{100 * shares[-1]:g}% to "
            f"decode; the quickest prefill part is {part[pre].min():,.0f} ms, the quickest "
            f"decode part {part[dec].min():,.0f} ms); relax sla.ttft_ms to at least "
            f"{math.ceil(float(need.min())):,}, or allow faster GPUs, more tensor "
            "parallelism or lower-bit quantizations (no aggregated replica meets its SLA)"
        )
    return None


def _fewest_gpus(problem: FleetProblem, options: SolverOptions) -> tuple[int, str] | None:
    """The fewest GPUs any fleet serving the demand takes within the inventory (no budget, no
    GPU cap), and that fleet: the least constraints.max_gpus can be (the cheapest plan may
    take more: 9 GPUs where 6 B200s would do). None where no fleet does."""
    counts = replace(
        problem.relaxed(budget=True),
        max_gpus=None,
        cost_per_hour=np.asarray(problem.tp, dtype=float),  # minimise GPUs, not dollars
    )
    sol = solve_fleet(counts, options)
    if sol.status == "infeasible":
        return None
    n = int(sum(t * r for t, r in zip(problem.tp, sol.replicas, strict=True)))
    return n, _fleet_text(problem, sol.replicas)


def _fleet_text(problem: FleetProblem, replicas: np.ndarray) -> str:
    parts: dict[str, int] = {}
    for g, t, n in zip(problem.gpu, problem.tp, replicas, strict=True):
        parts[g] = parts.get(g, 0) + int(t * n)
    return ", ".join(f"{n} x {g}" for g, n in sorted(parts.items()) if n)


def _no_price_message(scenario: Scenario, gpus: list[Gpu]) -> str:
    """No allowed GPU is priced in the scenario's tier (and provider): name them, and the
    tiers the catalog does price those GPUs in (of that provider, when one is named)."""
    pricing = scenario.hardware.pricing
    of = f" from provider '{pricing.provider}'" if pricing.provider else ""
    allowed = get_args(Pricing.model_fields["tier"].annotation)  # not 'serverless'
    tiers = sorted(t for t in allowed if any(g.price(t, pricing.provider) for g in gpus))
    other = (
        f"the catalog prices them{of} in: {', '.join(tiers)}"
        if tiers
        else f"the catalog prices them{of} in no tier"
    )
    return (
        f"hardware.pricing.tier: none of the allowed GPUs ({', '.join(g.id for g in gpus)}) "
        f"has a price in tier '{pricing.tier}'{of}; {other}; choose one of those, another "
        "provider, or set hardware.pricing.usd_per_gpu_hour"
    )


def explain_infeasible(
    scenario: Scenario,
    model: Model,
    classes: tuple[RequestClassPlan, ...],
    table: Table,
    problem: FleetProblem,
    gpus: list[Gpu],
    prices: dict[str, Price],
) -> None:
    """Raise an InfeasibleError naming the binding constraint, from every candidate judged
    per class (`evaluate_classes`' Table; this diagnosis is written in pandas, the one path of
    a plan that loads it, and only when no plan exists)."""
    if not prices:
        raise InfeasibleError(_no_price_message(scenario, gpus))
    try:
        _explain(scenario, model, classes, table, problem, gpus)
    except InfeasibleError as exc:
        extra = [_unpriced_message(scenario, gpus, prices), _margin_message(scenario)]
        said = [e for e in extra if e]
        if not said:
            raise
        raise InfeasibleError("; ".join([str(exc), *said]), exc.details) from None


def _margin_message(scenario: Scenario) -> str:
    """That the figures above are at the p90 prediction margin (issue #10), or ''."""
    if scenario.search.prediction_margin == "none":
        return ""
    return (
        f"every TPOT, TTFT and capacity above is at the {scenario.search.prediction_margin} "
        "prediction margin (search.prediction_margin; none plans to the predictions themselves)"
    )


def _unpriced_message(scenario: Scenario, gpus: list[Gpu], prices: dict[str, Price]) -> str:
    """The allowed GPUs left out of the plan for want of a price (a fleet's own GPUs named as
    such) and the key that gives one, or '' when every GPU is priced."""
    missing = [g.id for g in gpus if g.id not in prices]
    if not missing:
        return ""
    tier = scenario.hardware.pricing.tier.replace("_", "-")
    owned = [g for g in missing if g in scenario.hardware.fleet]
    whose = "hardware.fleet's " if owned == missing else ""
    example = ", ".join(f"{g}: <$/GPU-hour>" for g in missing)
    return (
        f"{whose}{', '.join(missing)} left out: no {tier} price in the catalog, and solve plans "
        f"by cost (planner capacity needs none); give one in hardware.pricing.usd_per_gpu_hour: "
        f"{{{example}}}"
    )


def _explain(
    scenario: Scenario,
    model: Model,
    classes: tuple[RequestClassPlan, ...],
    table: Table,
    problem: FleetProblem,
    gpus: list[Gpu],
) -> None:
    """Raise the InfeasibleError for a plan with some priced GPU: memory, each class's SLA,
    then the fleet's limits."""
    rows = columns.conform(table.to_pandas(), columns.CANDIDATE_COLUMNS)
    priced = rows[rows["price_usd_per_gpu_hour"].notna()] if not rows.empty else rows
    fitting = priced[priced["fits"]] if not priced.empty else priced
    if fitting.empty:
        raise InfeasibleError(_memory_message(model, priced, gpus), {"binding": "memory"})
    for cls in classes:
        own = fitting[fitting["class"] == cls.name]
        if own.empty:
            mine = priced[priced["class"] == cls.name]
            raise InfeasibleError(
                f"class '{cls.name}': " + _memory_message(model, mine, gpus),
                {"binding": "memory", "class": cls.name},
            )
        if not disagg.servable(cls, own):  # aggregated, or a prefill and a decode pool (#11)
            message = disagg.sla_message(cls, own, _sla_message)
            raise InfeasibleError(message, {"binding": "sla", "class": cls.name})
    raise InfeasibleError(_fleet_message(scenario, problem), {"binding": "fleet"})
