"""planner: cost and capacity planning for LLM inference, as a library.

    from planner import load_catalog, load_scenario, plan
    scenario, catalog = load_scenario("scenarios/chatbot.yaml", load_catalog())
    result = plan(scenario, catalog)
    print(result.fleet.total_cost_per_hour_usd)

Re-exports only, resolved on first use (PEP 562) so that `import planner.cli` stays light:
the code lives in the subpackages (README, "Layout").
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Catalog": "planner.inputs.catalog",
    "EstimateRequest": "planner.planning.estimate",
    "InfeasibleError": "planner.errors",
    "InputError": "planner.errors",
    "Plan": "planner.planning.plan",
    "PlannerError": "planner.errors",
    "Scenario": "planner.schema.scenario",
    "SolverError": "planner.errors",
    "SolverOptions": "planner.fleet.solver",
    "estimate": "planner.planning.estimate",
    "load_catalog": "planner.inputs.catalog",
    "load_scenario": "planner.inputs.scenarios",
    "plan": "planner.planning.pipeline",
}

__all__ = [
    "Catalog",
    "EstimateRequest",
    "InfeasibleError",
    "InputError",
    "Plan",
    "PlannerError",
    "Scenario",
    "SolverError",
    "SolverOptions",
    "estimate",
    "load_catalog",
    "load_scenario",
    "plan",
]

if TYPE_CHECKING:
    from planner.errors import InfeasibleError, InputError, PlannerError, SolverError
    from planner.fleet.solver import SolverOptions
    from planner.inputs.catalog import Catalog, load_catalog
    from planner.inputs.scenarios import load_scenario
    from planner.planning.estimate import EstimateRequest, estimate
    from planner.planning.pipeline import plan
    from planner.planning.plan import Plan
    from planner.schema.scenario import Scenario


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
