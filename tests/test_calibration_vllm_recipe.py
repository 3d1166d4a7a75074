"""The vLLM recipe's choices of issue #10 (t10v): MoE TTFT out of the fit, the MoE-layer cost."""

from __future__ import annotations

import math

import pandas as pd

from planner import calibration as cal
from planner.calibration import recipes


def _rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model_id": ["minimax-m2.5", "llama-3.1-70b", "kimi-k2.5"],
            "meas_ttft": [120.0, 90.0, math.nan],
            "meas_tpot": [10.0, 20.0, 30.0],
            "metric_skips": ["", "", "ttft: other"],
        }
    )


def test_moe_rows_lose_their_ttft_and_say_why(catalog):
    out = recipes.without_moe_ttft(_rows(), catalog)
    assert math.isnan(out.loc[0, "meas_ttft"]) and out.loc[1, "meas_ttft"] == 90.0
    assert out.loc[0, "metric_skips"] == recipes.MOE_TTFT_NOTE
    assert out.loc[1, "metric_skips"] == ""  # dense: untouched
    assert out.loc[2, "metric_skips"] == "ttft: other"  # no TTFT to leave out
    assert list(out["meas_tpot"]) == [10.0, 20.0, 30.0]  # TPOT stays in the fit
    assert _rows().loc[0, "meas_ttft"] == 120.0  # a copy


def test_vllm_and_sglang_fit_the_moe_layer_cost_and_only_vllm_leaves_moe_ttft_out():
    """vLLM fits the MoE layer cost per family from 20 us; SGLang (session 36) fits one
    default from 0, its prior towards no cost; TensorRT-LLM (worse leaving a model out with
    it) and llama.cpp keep 0."""
    vllm, sglang = cal.RECIPES["vllm"], cal.RECIPES["sglang"]
    assert "moe_layer_us" in vllm.params and "moe_layer_us" in (vllm.family_params or ())
    assert "prefill_overhead_ms" not in vllm.params and vllm.unfitted_moe_ttft
    assert "moe_layer_us" in sglang.params and "moe_layer_us" not in (sglang.family_params or ())
    assert sglang.base_profile().default.moe_layer_us == 0.0
    for rid in ("trtllm", "llamacpp"):
        assert "moe_layer_us" not in cal.RECIPES[rid].params
        assert cal.RECIPES[rid].base_profile().default.moe_layer_us == 0.0
    for rid in ("trtllm", "sglang", "llamacpp"):
        assert not cal.RECIPES[rid].unfitted_moe_ttft
    assert vllm.base_profile().default.moe_layer_us == 20.0  # the stated starting value


def test_fit_shipped_profiles_only_fits_the_named_recipes(catalog, monkeypatch):
    seen = []

    def fake_fit(measurements, cat, recipe, n_starts=2):
        seen.append(recipe.id)
        return recipe.base_profile(), {"default": {}, "row_ids": []}

    monkeypatch.setattr(recipes, "fit_recipe", fake_fit)
    monkeypatch.setattr(recipes, "describe_fit", lambda *a: ("src", "notes"))
    out = recipes.fit_shipped_profiles(pd.DataFrame(), catalog, "2026-12-02", only=("vllm",))
    assert seen == ["vllm"] and set(out) == {"vllm"}
