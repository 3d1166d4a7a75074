"""Issue #10 (MoE prefill): grouped-GEMM tile padding, the routed experts' activation traffic
and MLA's prefill attention FLOPs, each pinned by hand; dense models predict as before."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.perf import evaluate as ev
from planner.perf import moe_prefill as moe
from planner.perf.candidates import GridSpec, build_grid

# DeepSeek-V3: 58 MoE layers of 256 experts, top-8, d 7168, expert FFN 2048 (3 matrices)
DS_EXPERT = 3 * 7168 * 2048


def _grid(catalog, model_id: str, gpu: str, quant: str, tp: int, shape=(1024, 128)):
    spec = GridSpec(gpus=[catalog.gpu(gpu)], quants=[catalog.quant(quant)], tps=[tp],
                    batches=[1], shapes=[shape])  # fmt: skip
    grid, _ = build_grid(catalog.model(model_id), spec, catalog.engine("vllm"), False)
    return grid.iloc[:1].reset_index(drop=True)


def test_padded_rows_round_each_touched_expert_to_a_tile():
    """1,024 tokens, top-8 of 256: all 256 experts touched (1 - (31/32)^1024 = 1 - 8e-15),
    32 rows each, one 128-row tile each: 32,768 rows for 8,192 useful (4x). At 8,192 tokens
    each expert gets 256 rows on average, plus half a tile of padding: 256 x 320 = 81,920
    rows (1.25x). 64-row tiles halve the first."""
    assert moe.padded_rows(1024.0, 256, 8, 128) == pytest.approx(32768.0)
    assert moe.padded_rows(8192.0, 256, 8, 128) == pytest.approx(81920.0)
    assert moe.padded_rows(1024.0, 256, 8, 64) == pytest.approx(16384.0)
    assert moe.padded_rows(1024.0, 256, 8, 0) == pytest.approx(8192.0)  # off
    # 4 tokens touch E (1 - (1 - k/E)^4) = 30.2 experts, about one row each, one tile each
    touched = 256 * (1 - (1 - 8 / 256) ** 4)
    assert moe.padded_rows(4.0, 256, 8, 128) == pytest.approx(touched * 128)


def test_padding_flops_of_deepseek_v3_prefill(catalog):
    """One 1,024-token prompt in one pass: 2 x 58 layers x 44.04M params x (32,768 - 8,192)
    padded rows = 1.2556e14 FLOPs; as part of 8,192-token passes (1/8 of one), 64 rows of
    padding on each of 256 experts: 2 x 58 x 44.04M x 16,384 / 8."""
    model = catalog.model("deepseek-v3")
    assert model.params_per_expert == DS_EXPERT
    want = 2 * 58 * DS_EXPERT * (32768 - 8192)
    assert moe.padding_flops(model, np.array([1024.0]), 1024.0)[0] == pytest.approx(want)
    assert want == pytest.approx(1.2556e14, rel=1e-4)
    shared = 2 * 58 * DS_EXPERT * 16384 / 8
    assert moe.padding_flops(model, np.array([1024.0]), 8192.0)[0] == pytest.approx(shared)
    # a dense model has none
    dense = catalog.model("llama-3.1-70b")
    assert moe.padding_flops(dense, np.array([1024.0]), 1024.0)[0] == 0.0


def test_activation_bytes_of_deepseek_v3_prefill(catalog):
    """TP8, no EP, 1,024 tokens: each GPU streams 2 d T (gather in, combine out) plus every
    token's 8 rows of 4 d (full width) + 6 f / 8 (split) 16-bit elements, 58 layers:
    2 x 58 x (2 x 7168 x 1024 + 8 x 1024 x (4 x 7168 + 6 x 2048 / 8)) = 3.0409e10 bytes.
    EP 8 (one way per expert) with skew 1.05: 2 x 58 x (2 d T / 8 + 8 T 1.05 / 8 (4 d + 6 f))."""
    model, t = catalog.model("deepseek-v3"), np.array([1024.0])
    d, f = 7168, 2048
    tp8 = 2 * 58 * (2 * d * 1024 + 8 * 1024 * (4 * d + 6 * f / 8))
    assert moe.activation_bytes_per_gpu(model, t, 1.0, 8.0, 1.0, 1.0)[0] == pytest.approx(tp8)
    assert tp8 == pytest.approx(3.0409e10, rel=1e-4)
    ep8 = 2 * 58 * (2 * d * 1024 / 8 + 8 * 1024 * 1.05 / 8 * (4 * d + 6 * f))
    assert moe.activation_bytes_per_gpu(model, t, 8.0, 1.0, 1.05, 1.0)[0] == pytest.approx(ep8)
    dense = catalog.model("llama-3.1-70b")
    assert moe.activation_bytes_per_gpu(dense, t, 1.0, 8.0, 1.0, 1.0)[0] == 0.0


def test_mla_prefill_attention_counts_qk_192_and_v_128(catalog):
    """DeepSeek-V3 prefills without absorption: 128 heads, scores over 192 (128 nope + 64
    rope), values over 128, 2 h (192 + 128) = 81,920 FLOPs a pair, times 61 x 1024^2 / 2
    causal pairs = 2.6198e12; a non-MLA model keeps 4 h d_h."""
    model = catalog.model("deepseek-v3")
    pairs = 61 * 1024**2 / 2
    assert ev.attention_flops_prefill(model, np.array([1024.0]))[0] == pytest.approx(
        2 * 128 * (192 + 128) * pairs
    )
    assert ev.attention_pair_flops(catalog.model("llama-3.1-8b")) == (4.0, 128)


def test_moe_prefill_adds_padding_and_traffic_on_top_of_the_roofline(catalog, monkeypatch):
    """DeepSeek-V3 fp8 on 8 H200, one 1,024-token prompt alone: prefill compute grows by the
    padding FLOPs / 8 GPUs at the fp8 peak and eta_pf, plus the TP8 activation bytes at the
    HBM bandwidth and eta_mem, exactly (`moe_prefill_s`)."""
    model = catalog.model("deepseek-v3")
    grid = _grid(catalog, "deepseek-v3", "h200", "fp8", 8)
    i_len = np.array([1024.0])
    with_terms = ev.prefill_compute_s(model, grid, i_len, pass_tokens=1024.0)[0]
    monkeypatch.setattr(moe, "BLOCK_M", 0)
    monkeypatch.setattr(moe, "ACTIVATION_TRAFFIC", False)
    without = ev.prefill_compute_s(model, grid, i_len, pass_tokens=1024.0)[0]
    row = grid.iloc[0]
    pad = 2 * 58 * DS_EXPERT * (32768 - 8192) / 8
    act = 2 * 58 * (2 * 7168 * 1024 + 8 * 1024 * (4 * 7168 + 6 * 2048 / 8))
    want = pad / (row["peak_flops"] * row["eff_eta_compute_prefill"]) + act / (
        row["bandwidth_bytes_per_s"] * row["eff_eta_mem"]
    )
    assert with_terms - without == pytest.approx(want)
    assert with_terms > 1.5 * without  # the terms matter at this size: not a rounding


def test_dense_models_predict_exactly_as_before(catalog, monkeypatch):
    """Every output of a dense grid is bit-identical with the MoE terms on and off, while
    an MoE grid's prefill moves (so the switch is live)."""
    dense = _grid(catalog, "llama-3.1-70b", "h100-sxm", "fp8", 4, (4000, 500))
    ds = _grid(catalog, "deepseek-v3", "h200", "fp8", 8, (4000, 500))
    on_dense = ev.evaluate(catalog.model("llama-3.1-70b"), dense)
    on_moe = ev.evaluate(catalog.model("deepseek-v3"), ds)
    monkeypatch.setattr(moe, "BLOCK_M", 0)
    monkeypatch.setattr(moe, "ACTIVATION_TRAFFIC", False)
    off_dense = ev.evaluate(catalog.model("llama-3.1-70b"), dense)
    off_moe = ev.evaluate(catalog.model("deepseek-v3"), ds)
    numeric = on_dense.select_dtypes("number").columns
    on, off = on_dense[numeric].to_numpy(), off_dense[numeric].to_numpy()
    assert np.array_equal(on, off, equal_nan=True)
    assert on_moe["prefill_ms"].iloc[0] > off_moe["prefill_ms"].iloc[0]


@given(st.floats(1.0, 1e5), st.floats(1.0, 1e5), st.sampled_from([(256, 8), (128, 8), (8, 2)]))
def test_padding_per_token_never_grows_with_the_pass(a, b, shape):
    """Padded rows are at least the useful rows, and per token they never grow with the
    pass size (a bigger batch cannot cost more per token through padding)."""
    e, k = shape
    small, large = min(a, b), max(a, b)
    rows_small = moe.padded_rows(small, e, k, 128)
    rows_large = moe.padded_rows(large, e, k, 128)
    assert rows_small >= small * k * (1 - 1e-12)
    assert rows_large / large <= rows_small / small * (1 + 1e-12)
