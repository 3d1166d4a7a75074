"""The host floor of an eager prefill pass (perf.evaluate.prefill_host_floor_s, #10 t10p)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from trtllm_rows import llama8b_trtllm_row

from planner import calibration as cal
from planner.calibration.prediction import batch_prefill_ms
from planner.perf.evaluate import prefill_host_floor_s


def test_the_floor_is_passes_times_layers_over_stages_times_the_constant(catalog):
    # Llama-3.1-8B: 32 layers; 450 us a layer: one pass 14.4 ms, 3 passes over pp 2: 21.6 ms
    df = pd.DataFrame({"pp": [1.0, 2.0, 1.0], "eff_prefill_layer_us": [450.0, 450.0, 0.0]})
    got = prefill_host_floor_s(catalog.model("llama-3.1-8b"), df, np.array([1.0, 3.0, 5.0]))
    assert list(got) == pytest.approx([14.4e-3, 21.6e-3, 0.0])


def _row(
    catalog, layer_us: float, tp: int, input_len: int, batch: int = 16, **constants: float
) -> pd.Series:
    return llama8b_trtllm_row(catalog, tp, input_len, batch, prefill_layer_us=layer_us, **constants)


def test_a_short_prompt_at_tp8_is_host_bound_and_a_long_one_at_tp1_is_not(catalog):
    off, on = _row(catalog, 0.0, 8, 1024), _row(catalog, 450.0, 8, 1024)
    # alone (TTFT's prefill), a 1,024-token prompt at tp 8 has a few ms of GPU work: the
    # 32 x 450 us = 14.4 ms floor of its one pass binds, plus the fixed overhead a pass
    assert off.prefill_ms < 14.4 + off.eff_prefill_overhead_ms
    assert on.prefill_ms == pytest.approx(14.4 + on.eff_prefill_overhead_ms, rel=1e-6)
    # 8,192 tokens at tp 1 take far longer on the GPU than 14.4 ms: nothing moves
    off1, on1 = _row(catalog, 0.0, 1, 8192), _row(catalog, 450.0, 1, 8192)
    assert on1.prefill_ms == off1.prefill_ms and on1.prefill_share_ms == off1.prefill_share_ms
    assert on1.tpot_step_ms == off1.tpot_step_ms  # decode runs CUDA graphs: no floor
    assert on.tpot_step_ms == off.tpot_step_ms


def test_a_busy_replica_shares_the_floor_of_a_pass_among_its_prompts(catalog):
    # 2 prompts of 256 tokens share a 512-token pass: each carries half its 14.4 ms floor
    # (the pass's fixed overhead held at 0, so the floor is weighed against GPU work alone)
    off = _row(catalog, 0.0, 8, 256, batch=2, prefill_overhead_ms=0.0)
    on = _row(catalog, 450.0, 8, 256, batch=2, prefill_overhead_ms=0.0)
    assert off.prefill_share_ms < 7.2
    assert on.prefill_share_ms == pytest.approx(7.2, rel=1e-6)


def test_a_wave_pays_the_floor_once_a_pass(catalog):
    # 16 prompts of 128 tokens (2,048 tokens, a few ms of GPU work at tp 8) in passes of
    # 1,024 tokens: 2 passes, each at least 32 x 450 us = 14.4 ms, plus the overhead a pass
    row = _row(catalog, 450.0, 8, 1024)
    frame = pd.DataFrame([row.to_dict()]).infer_objects()
    model, one = catalog.model("llama-3.1-8b"), np.array([1.0])
    got = batch_prefill_ms(model, frame, 16.0 * one, 128.0 * one, 1024.0)
    overhead = 2 * frame["eff_prefill_overhead_ms"].iloc[0]
    assert got[0] == pytest.approx(2 * 14.4 + overhead, rel=1e-6)
    frame["eff_prefill_layer_us"] = 0.0
    assert batch_prefill_ms(model, frame, 16.0 * one, 128.0 * one, 1024.0)[0] < 28.8 + overhead


def test_only_trtllm_starts_with_the_floor_and_no_family_overrides_it():
    recipe = cal.RECIPES["trtllm"]
    assert "prefill_layer_us" not in (recipe.family_params or ())
    assert recipe.base_profile().default.prefill_layer_us == 454.0
    for rid in ("vllm", "sglang", "llamacpp"):
        assert "prefill_layer_us" not in cal.RECIPES[rid].params
        assert cal.RECIPES[rid].base_profile().default.prefill_layer_us == 0.0
