"""The recipes' choices of issue #10: vLLM's MoE TTFT out of the fit and the MoE-layer cost
(t10v); SGLang's wave share taken from the engines that share its benchmark harness (s39)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

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


def test_sglang_ships_the_mean_of_vllm_and_trtllm_wave_shares(catalog):
    """SGLang's shipped share is the mean of the shipped vLLM and TensorRT-LLM ones (a refit
    of either without SGLang's leaves it stale and fails here), in its default and every
    family override, and the profile's notes say where it came from."""
    donors = [catalog.engines[r].default.benchmark_wave_share for r in ("vllm", "trtllm")]
    assert all(0.1 < s < 0.2 for s in donors)  # both fit about one request in seven
    share = recipes.harness_wave_share(cal.RECIPES["sglang"], catalog)
    assert share == pytest.approx(sum(donors) / 2)
    sglang = catalog.engines["sglang"]
    assert sglang.default.benchmark_wave_share == pytest.approx(share, abs=1e-3)  # 3 digits
    assert all(
        f.benchmark_wave_share == pytest.approx(share, abs=1e-3) for f in sglang.families.values()
    )
    assert f"benchmark_wave_share {share:.3g}: the mean of the vllm, trtllm profiles'" in (
        sglang.notes
    )
    assert recipes.harness_wave_share(cal.RECIPES["vllm"], catalog) is None


def test_the_harness_share_reaches_the_default_and_every_family(catalog):
    base = cal.RECIPES["sglang"].base_profile()
    base = base.model_copy(update={"families": {"hopper": base.default, "ada": base.default}})
    out = recipes.with_harness_wave_share(base, cal.RECIPES["sglang"], catalog)
    shares = [
        out.default.benchmark_wave_share,
        *(f.benchmark_wave_share for f in out.families.values()),
    ]
    want = recipes.harness_wave_share(cal.RECIPES["sglang"], catalog)
    assert shares == pytest.approx([want] * 3)
    assert out.default.eta_mem == base.default.eta_mem  # nothing else moves
    vllm = cal.RECIPES["vllm"].base_profile()
    assert recipes.with_harness_wave_share(vllm, cal.RECIPES["vllm"], catalog) is vllm


def test_a_recipe_cannot_both_take_and_fit_the_wave_share():
    with pytest.raises(ValueError, match="cannot be fitted"):
        recipes.Recipe("x", "x", ("x",), wave_share_from=("vllm",))  # FIT_PARAMS has it


def test_a_refit_of_every_recipe_gives_sglang_the_fresh_vllm_and_trtllm_shares(
    catalog, monkeypatch
):
    """fit_shipped_profiles fits the donors first and hands their new fits on: SGLang sees
    vLLM's and TensorRT-LLM's refitted shares (0.2, 0.3 -> 0.25), not the shipped ones."""
    fresh = {"vllm": 0.2, "trtllm": 0.3}
    seen: dict[str, float | None] = {}

    def fake_fit(measurements, cat, recipe, n_starts=2):
        seen[recipe.id] = recipes.harness_wave_share(recipe, cat)
        base = recipe.base_profile()
        eff = base.default.model_copy(update={"benchmark_wave_share": fresh.get(recipe.id, 0.1)})
        return base.model_copy(update={"default": eff}), {}

    monkeypatch.setattr(recipes, "fit_recipe", fake_fit)
    monkeypatch.setattr(recipes, "describe_fit", lambda *a: ("src", "notes"))
    recipes.fit_shipped_profiles(pd.DataFrame(), catalog, "2026-12-05")
    assert list(seen)[-1] == "sglang" and seen["sglang"] == pytest.approx(0.25)
    assert seen["vllm"] is None
    assert recipes.fit_order(cal.RECIPES).index("sglang") > recipes.fit_order(cal.RECIPES).index(
        "trtllm"
    )
