"""plan(scenario, catalog) is a pure function of picklable inputs: sweeps can fan out."""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from planner.inputs.scenarios import load_scenario
from planner.planning.pipeline import plan
from planner.render.json import plan_dict, to_json

ROOT = Path(__file__).resolve().parent.parent


def _cost(args) -> float:
    scenario, catalog = args
    return plan(scenario, catalog).fleet.total_cost_per_hour_usd


@pytest.mark.slow  # the diurnal plan over time, twice
def test_inputs_and_plan_pickle_and_plan_is_deterministic(catalog, unhurried):
    """Solved to optimality under a generous limit: a time-limited incumbent depends on the
    machine's speed, and would make two runs differ."""
    scenario, cat = load_scenario(ROOT / "scenarios" / "diurnal-chatbot.yaml", catalog)
    scenario = unhurried(scenario)
    scenario2, cat2 = pickle.loads(pickle.dumps((scenario, cat)))
    first, second = plan(scenario, cat), plan(scenario2, cat2)
    assert first.fleet.status == first.over_time.solution.status == "optimal"
    restored = pickle.loads(pickle.dumps(first))
    assert to_json(plan_dict(first)) == to_json(plan_dict(second)) == to_json(plan_dict(restored))


@pytest.mark.slow  # worker processes import planner and plan afresh
def test_a_what_if_sweep_fans_out_on_a_process_pool(catalog):
    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    sweep = [
        scenario.model_copy(
            update={"workload": scenario.workload.model_copy(update={"requests_per_second": rps})}
        )
        for rps in (5, 10, 20)
    ]
    with ProcessPoolExecutor(max_workers=2) as pool:
        costs = list(pool.map(_cost, [(s, cat) for s in sweep]))
    assert costs == pytest.approx([_cost((s, cat)) for s in sweep])
    assert costs[0] <= costs[1] <= costs[2]
