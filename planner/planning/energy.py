"""Energy and carbon per token: GPU power at the planned utilisation x PUE, per token served.

A GPU serving at the planned utilisation is taken to draw its TDP (the catalog's sourced
figure) times that utilisation; the facility draws PUE times the GPUs' power. Per 1K output
tokens: power (W) / output tokens a second x 1000 / 3600 = Wh. CO2 is that energy times
the scenario's grid intensity (`energy.grid_g_co2_per_kwh`), when given.
"""

from __future__ import annotations

from planner.inputs.catalog import Catalog
from planner.planning.plan import EnergyPlan, Plan, TimePlan
from planner.schema.scenario import Scenario
from planner.units import SECONDS_PER_HOUR, TOKENS_PER_1K


def energy_of(scenario: Scenario, catalog: Catalog, plan: Plan) -> EnergyPlan:
    """Power, energy per 1K output tokens and CO2 of the peak fleet and the plan over time."""
    types = {d.gpu for d in plan.fleet.deployments}
    if plan.over_time is not None:
        types |= set(plan.over_time.solution.gpu_types)
    tdp = {g: catalog.gpu(g).tdp_w for g in sorted(types)}
    known = {g: float(w) for g, w in tdp.items() if w is not None}
    factor = plan.utilisation * scenario.energy.pue
    watts = sum(d.gpus * known.get(d.gpu, 0.0) for d in plan.fleet.deployments) * factor
    tokens_s = plan.output_tokens_per_s
    return EnergyPlan(
        tdp_w=known,
        utilisation=plan.utilisation,
        pue=scenario.energy.pue,
        grid_g_co2_per_kwh=scenario.energy.grid_g_co2_per_kwh,
        power_kw=watts / 1e3,
        wh_per_1k_output_tokens=watts / tokens_s * TOKENS_PER_1K / SECONDS_PER_HOUR
        if tokens_s > 0
        else float("nan"),
        over_time_wh_per_1k_output_tokens=_over_time_wh(plan.over_time, known, factor),
        missing_tdp=tuple(g for g, w in tdp.items() if w is None),
    )


def _over_time_wh(tp: TimePlan | None, tdp: dict[str, float], factor: float) -> float | None:
    """Wh per 1K output tokens over the horizon: GPUs in use each period draw TDP x
    utilisation x PUE for the period's hours, over the horizon's output tokens."""
    if tp is None or tp.output_tokens <= 0:
        return None
    wh = sum(
        n.in_use * tdp.get(g, 0.0) * factor * p.hours for p in tp.periods for g, n in p.gpus.items()
    )
    return wh / tp.output_tokens * TOKENS_PER_1K
