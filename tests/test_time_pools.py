"""Disaggregated pools and speculative decoding in plans over time (issue #11)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from planner.inputs.catalog import load_catalog
from planner.inputs.scenarios import load_scenario
from planner.perf.table import Table
from planner.planning.pipeline import plan
from planner.planning.time_pools import UNIT_ROLE, _best_units

ROOT = Path(__file__).resolve().parent.parent


def _keys(roles, cost, gpus):
    """Offered key rows as the plan's `Table` holds them."""
    return Table(
        {"gpu": np.array(["g"] * len(roles)), "role": np.array(roles),
         "cost_per_hour_usd": np.array(cost, float), "gpus_per_replica": np.array(gpus)}
    )  # fmt: skip


def test_unit_is_the_most_cost_efficient_integer_ratio_hand_computed():
    # prefill 3 req/s for $4/h (4 GPUs), decode 1 req/s for $2/h (2 GPUs):
    # (1, 1): min(3, 1) / 6 = 0.167; (1, 2): min(3, 2) / 8 = 0.25 <- best; (2, 2): 2 / 12
    keys = _keys(["prefill", "decode"], [4.0, 2.0], [4, 2])
    cap = np.array([[3.0], [1.0]])
    (key, unit_cap), *rest = list(
        _best_units(keys, cap, np.zeros((2, 1)), np.array([np.inf]), np.array([0]), np.array([1]))
    )
    assert not rest
    assert key["role"] == UNIT_ROLE
    assert key["cost_per_hour_usd"] == pytest.approx(8.0)
    assert key["gpus_per_replica"] == 4 + 2 * 2
    assert unit_cap[0] == pytest.approx(2.0)


def test_a_pair_over_the_ttft_bound_makes_no_unit():
    keys = _keys(["prefill", "decode"], [4.0, 2.0], [4, 2])
    parts = np.array([[700.0], [400.0]])  # 1,100 ms > the 1,000 ms bound
    units = _best_units(
        keys, np.ones((2, 1)), parts, np.array([1000.0]), np.array([0]), np.array([1])
    )
    assert list(units) == []


def _long_with_finance(tmp_path, mode, speculative=None):
    data = yaml.safe_load((ROOT / "scenarios" / "long-prompt.yaml").read_text())
    data["finance"] = yaml.safe_load((ROOT / "scenarios" / "diurnal-chatbot.yaml").read_text())[
        "finance"
    ]
    data["search"]["disaggregated"] = mode
    if speculative:
        data["search"]["speculative"] = speculative
    path = tmp_path / f"long-{mode}.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(str(path), load_catalog())


def test_pools_over_time_are_offered_as_units_and_never_cost_more(tmp_path, unhurried):
    plans = {}
    for mode in ("auto", False, True):
        scenario, catalog = _long_with_finance(tmp_path, mode)
        plans[mode] = plan(unhurried(scenario), catalog, comparisons=False)
    pools_only = plans[True].over_time
    assert pools_only.solution.status == "optimal"  # disaggregated: true works over time
    aggregated = plans[False].over_time.solution.total_cost
    # auto offers the aggregated shortlist plus the units: a superset, never dearer
    assert plans["auto"].over_time.solution.total_cost <= aggregated + 1e-6
    assert plans["auto"].over_time.solution.total_cost < aggregated  # and here it pays


def _fast_chat_over_time(tmp_path, unhurried, speculative, no_step_cost):
    data = yaml.safe_load((ROOT / "scenarios" / "fast-chat.yaml").read_text())
    data["finance"] = yaml.safe_load((ROOT / "scenarios" / "diurnal-chatbot.yaml").read_text())[
        "finance"
    ]
    data["search"]["speculative"] = speculative
    path = tmp_path / f"fast-{'-'.join(speculative)}.yaml"
    path.write_text(yaml.safe_dump(data))
    scenario, catalog = load_scenario(str(path), catalog=load_catalog())
    # draft speculation pays for fast-chat without vLLM's step cost (conftest.no_step_cost)
    return plan(unhurried(scenario), no_step_cost(catalog), comparisons=False)


def test_speculation_is_a_candidate_over_time(tmp_path, unhurried, no_step_cost):
    on = _fast_chat_over_time(tmp_path, unhurried, ["off", "draft"], no_step_cost)
    off = _fast_chat_over_time(tmp_path, unhurried, ["off"], no_step_cost)
    assert (on.offered.keys["speculative"] == "draft").any()
    # the draft halves the steady fleet (fast-chat), and the plan over time follows
    assert on.over_time.solution.total_cost < off.over_time.solution.total_cost
