"""Prefill GEMMs at eta_pf K / (K + k0) in their per-GPU K (perf.gemm_shape, #10 t10g)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from trtllm_rows import llama8b_trtllm_row

from planner import calibration as cal
from planner.perf import gemm_shape as gs
from planner.perf.evaluate import gemm_short_k_s


def test_the_efficiency_is_k_over_k_plus_k0_by_hand():
    # Llama-3.1-8B's attention output at tp 8: K = 4096 / 8 = 512. With a ridge of 300
    # FLOP/byte and c = 1.22, k0 = 366 and the factor 512 / 878 = 0.58314
    assert gs.shape_efficiency(512.0, 300.0, 1.22) == pytest.approx(512.0 / 878.0, rel=1e-12)
    # the source fit: DeepGEMM's K 2048 point at H800's ridge, 1422 x 2048 / (2048 + 720)
    ridge = 1979.0 / 3.35
    assert 1422.0 * gs.shape_efficiency(2048.0, ridge, gs.GEMM_K0_RIDGE) == pytest.approx(
        1025.0, rel=0.03
    )
    assert gs.shape_efficiency(512.0, ridge, 0.0) == 1.0  # off


def test_a_larger_per_gpu_gemm_never_computes_slower_per_flop():
    # time per FLOP of an M x N x K GEMM: 1 / (F eta) + c 2 / (BW eta K): falls with K,
    # flat in M and N; on a grid of shapes and cards, never rising in any dimension
    f, bw, eta, c = 989e12, 3.35e12, 0.58, gs.GEMM_K0_RIDGE
    dims = np.array([64.0, 192.0, 512.0, 1024.0, 1792.0, 4096.0, 8192.0, 28672.0])
    m, n, k = np.meshgrid(dims, dims, dims, indexing="ij")
    flops = 2.0 * m * n * k
    t = flops / (f * eta) + gs.short_k_s(2.0 * m * n, bw, eta, c)
    per_flop = t / flops
    for axis in range(3):  # rounding aside (1e-12 relative), never rising
        assert (np.diff(per_flop, axis=axis) <= 1e-12 * per_flop.max()).all()
    assert (np.diff(per_flop, axis=2) < 0).all()  # and K strictly helps
    # the rate form agrees with the additive one
    rate = f * eta * gs.shape_efficiency(k, f / bw, c)
    assert np.allclose(flops / rate, t, rtol=1e-12)


def test_output_elements_per_token_by_hand(catalog):
    # Llama-3.1-8B (d 4096, 32 heads + 2 x 8 KV heads of 128, FFN 14336, 32 layers) at tp 8:
    # attention 32 x (48 x 128 / 8 + 4096) = 155,648; FFN 32 x (2 x 14336 / 8 + 4096) =
    # 245,760; tp 1: 32 x (6144 + 4096) + 32 x (28672 + 4096) = 1,376,256
    llama = catalog.model("llama-3.1-8b")
    assert list(gs.output_elements_per_token(llama, np.array([8.0, 1.0]))) == [
        401_408.0,
        1_376_256.0,
    ]
    # Qwen3-235B's routed experts at moe_tp 8: 94 layers x 8 routes x (2 x 1536 / 8 + 4096)
    # 16-bit elements a token
    qwen = catalog.model("qwen3-235b-a22b")
    got = gs.routed_output_bytes_per_gpu(qwen, 1.0, 1.0, 8.0, 1.0, 1.0)
    assert float(got) == 2.0 * 94 * 8 * (2 * 1536 / 8 + 4096)
    assert float(gs.routed_output_bytes_per_gpu(llama, 1.0, 1.0, 8.0, 1.0, 1.0)) == 0.0


def _row(catalog, k0: float, tp: int, input_len: int, batch: int = 1) -> pd.Series:
    return llama8b_trtllm_row(catalog, tp, input_len, batch, gemm_k0_ridge=k0, prefill_layer_us=0.0)


def test_a_compute_bound_prefill_grows_by_the_hand_computed_write(catalog):
    # 8,192 tokens of Llama-3.1-8B at tp 1 are compute-bound: the prefill grows by
    # c x 2 bytes x 8192 x 1,376,256 / (BW x eta_pf)
    off, on = _row(catalog, 0.0, 1, 8192), _row(catalog, gs.GEMM_K0_RIDGE, 1, 8192)
    bw, eta = on.bandwidth_bytes_per_s, on.eff_eta_compute_prefill
    want = gs.GEMM_K0_RIDGE * 2.0 * 8192 * 1_376_256 / (bw * eta) * 1e3
    assert on.prefill_ms - off.prefill_ms == pytest.approx(want, rel=1e-9)
    assert on.tpot_step_ms == off.tpot_step_ms  # decode is untouched


def test_the_short_k_term_is_zero_where_the_profile_has_none(catalog):
    frame = pd.DataFrame({"eff_gemm_k0_ridge": [0.0, 0.0]})
    got = gemm_short_k_s(catalog.model("llama-3.1-8b"), frame, np.array([1e3, 1e4]), 1.0)
    assert list(got) == [0.0, 0.0]


def test_only_trtllm_takes_the_term_so_vllm_and_sglang_stay_bit_identical():
    assert cal.RECIPES["trtllm"].base_profile().default.gemm_k0_ridge == gs.GEMM_K0_RIDGE
    for rid in ("vllm", "sglang"):
        assert cal.RECIPES[rid].base_profile().default.gemm_k0_ridge == 0.0
    for rid in cal.RECIPES:
        assert "gemm_k0_ridge" not in cal.RECIPES[rid].params  # sourced, not fitted


def test_the_shipped_profiles_carry_the_recipe_value(catalog):
    assert catalog.engine("trtllm").default.gemm_k0_ridge == gs.GEMM_K0_RIDGE
    for fam in catalog.engine("trtllm").families.values():
        assert fam.gemm_k0_ridge == gs.GEMM_K0_RIDGE
    assert catalog.engine("vllm").default.gemm_k0_ridge == 0.0
    assert catalog.engine("sglang").default.gemm_k0_ridge == 0.0
