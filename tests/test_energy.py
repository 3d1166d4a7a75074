"""Energy and carbon per token: hand-computed from the catalog TDPs, utilisation and PUE."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from planner.inputs.scenarios import load_scenario
from planner.planning.pipeline import plan
from planner.render.json import plan_dict
from planner.schema.finance import Energy

ROOT = Path(__file__).resolve().parent.parent


def test_energy_section_is_strict_with_units_in_its_names():
    assert Energy().pue == 1.3 and Energy().grid_g_co2_per_kwh is None
    with pytest.raises(ValidationError):
        Energy.model_validate({"pue": 1.2, "grid_intensity": 300})  # extra keys forbidden
    with pytest.raises(ValidationError):
        Energy.model_validate({"pue": 0.9})  # a PUE below 1 is not a facility


def test_chatbot_energy_hand_computed(catalog):
    """3 x b200 (TDP 1000 W) at 80% x PUE 1.3 = 3.12 kW; 20 req/s x 256 output tokens =
    5,120 tokens/s; 3120 / 5120 x 1000 / 3600 = 0.1693 Wh per 1K output tokens."""
    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    p = plan(scenario, cat)
    e = p.energy
    watts = sum(d.gpus * cat.gpu(d.gpu).tdp_w for d in p.fleet.deployments) * 0.8 * 1.3
    assert e.power_kw == pytest.approx(watts / 1e3)
    tokens = sum(c.requests_per_second * c.output_tokens for c in p.classes)
    assert e.wh_per_1k_output_tokens == pytest.approx(watts / tokens * 1000 / 3600)
    assert e.g_co2_per_1k_output_tokens is None
    out = plan_dict(p)
    assert out["energy_wh_per_1k_output_tokens"] == pytest.approx(e.wh_per_1k_output_tokens)


def test_diurnal_co2_at_the_scenario_grid(catalog):
    scenario, cat = load_scenario(ROOT / "scenarios" / "diurnal-chatbot.yaml", catalog)
    p = plan(scenario, cat)
    e = p.energy
    assert e.pue == 1.2 and e.grid_g_co2_per_kwh == 367
    assert e.g_co2_per_1k_output_tokens == pytest.approx(e.wh_per_1k_output_tokens / 1e3 * 367)
    tp = p.over_time
    wh = sum(
        n.in_use * cat.gpu(g).tdp_w * 0.8 * 1.2 * per.hours
        for per in tp.periods
        for g, n in per.gpus.items()
    )
    assert e.over_time_wh_per_1k_output_tokens == pytest.approx(wh / tp.output_tokens * 1e3)
