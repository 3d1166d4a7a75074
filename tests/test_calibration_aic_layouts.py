"""Expert-parallel and attention-DP rows of the aic set on the grid's layouts (issue #10)."""

from __future__ import annotations

import numpy as np
import pytest

from planner import calibration as cal
from planner.calibration.aic import aic_layout
from planner.perf import evaluate as ev


def _row(aic, fragment: str):
    rows = aic[aic["source"].str.contains(fragment, regex=False)]
    assert len(rows) == 1, fragment
    return rows


def test_wide_ep_row_maps_to_its_layout(aic):
    """TensorRT-LLM DeepSeek on B200, attention DP 16, moe_tp 4 x moe_ep 4: 16 GPUs."""
    r = _row(aic, "dsr1_b200_trtllm_fp4_agg_1024x1024_c256_cfg192").iloc[0]
    assert (r["tp"], r["ep"], r["dp_attention"], r["pp"]) == (1, 4, 16, 1)
    assert r["num_gpus"] == 16 and r["skip_reason"] == ""
    assert (r["model_id"], r["gpu_id"], r["quant_id"]) == ("deepseek-v3", "b200", "fp4")


def test_kimi_dp_ep_row_maps_to_its_layout(aic):
    r = _row(aic, "kimik2_5_b200_vllm_fp4_agg_1024x1024_c8_cfg635").iloc[0]
    assert (r["model_id"], r["tp"], r["ep"], r["dp_attention"], r["num_gpus"]) == (
        "kimi-k2.5", 4, 16, 4, 16,
    )  # fmt: skip
    assert r["skip_reason"] == ""


def test_layout_of_a_raw_row_reads_blank_as_one():
    raw = {"tp_size": "4", "pp_size": "1", "moe_ep_size": "4", "attention_dp_size": "",
           "moe_tp_size": "1"}  # fmt: skip
    assert aic_layout(raw) == {"tp": 4, "pp": 1, "ep": 4, "dp_attention": 1, "moe_tp": 1}


def test_rows_outside_the_layouts_keep_a_reason(aic):
    skipped = aic[aic["skip_reason"] != ""]
    moe_split = skipped[skipped["skip_reason"].str.contains("MoE split")]
    # vLLM Qwen3-235B with moe_tp above tp and no attention DP published: not guessed
    assert set(moe_split["model_id"]) == {"qwen3-235b-a22b"}
    assert set(moe_split["engine"]) == {"vllm"}
    wide_tp = skipped[skipped["skip_reason"].str.contains("across scale-up domains")]
    assert (wide_tp["tp"] > 8).all() and len(wide_tp) == 58
    assert not aic["skip_reason"].str.contains("expert parallel").any()


def test_a_layout_is_its_own_series_in_the_quality_rule(aic):
    """Qwen3-235B TensorRT-LLM tp4 has ep 4 and ep 2 rows with the same shapes: the
    monotonicity rule compares each layout with itself only (none is flagged)."""
    q = aic[(aic["model_id"] == "qwen3-235b-a22b") & (aic["engine"] == "trtllm") & (aic["tp"] == 4)]
    assert set(q["ep"]) == {2, 4}
    assert not q["skip_reason"].str.contains("not monotone").any()


def test_ep_decode_step_by_hand(catalog, aic):
    """Qwen3-235B-A22B fp8 on 4 H100 SXM, tp 4 x ep 4, 4 clients, 512 / 128, ideal
    efficiencies: the weights a GPU reads and the all-to-all, from the formulas by hand."""
    rows = _row(aic, "h100_sxm_trtllm_agg_512x128_c4_tp4_epnone_1")
    design = cal.build_design(rows, catalog, None, ideal=True)
    model, grid, _ = design.groups[0]
    assert (int(grid["ep"][0]), int(grid["dp_attention"][0]), int(grid["batch"][0])) == (4, 1, 4)
    out = ev.evaluate_arrays(model, grid, statistic="none")
    b, e, k, layers, d = 4.0, 128, 8, 94, 4096
    per_expert = 3 * d * 1536  # gated expert: gate, up, down
    assert model.params_per_expert == per_expert
    touched = e * (1 - (1 - k / e) ** b)  # distinct experts 4 tokens reach (uniform routing)
    all_bytes = ev.bytes_weights_per_step(model, grid, np.array([b]))[0]  # fp8: 1 B/param
    touched_b = layers * touched * per_expert * 1.0
    expected_w = (all_bytes - touched_b) / 4 + touched_b * 1.05 / 4  # EP straggler 1.05
    assert out["bytes_weights_per_step_gb"][0] == pytest.approx(expected_w / 1e9, rel=1e-6)
    # dispatch + combine: each GPU sends its 1 token to k experts, 3/4 of them off-rank, bf16
    link = float(grid["link_bytes_per_s"][0])
    payload = (b / 4) * k * d * 2 * (3 / 4) * 1.05
    a2a = layers * 2 * (0.0 + payload / link)  # ideal: no all-to-all latency
    assert out["t_alltoall_ms"][0] == pytest.approx(a2a * 1e3, rel=1e-6)
    # attention still all-reduces over tp (one per layer, 94), the MoE layers do not
    alpha = ev.collective_alpha_s(grid)[0]
    ar = layers * (alpha + 2 * 3 / 4 * b * d * 2 / link)
    assert out["t_comm_ms"][0] == pytest.approx((ar + a2a) * 1e3, rel=1e-6)


def test_ep_rows_are_predicted(catalog, aic):
    """Every usable EP / attention-DP row gets a finite TPOT and TTFT with the profiles."""
    used = cal.usable(aic)
    layout = used[(used["ep"] > 1) | (used["dp_attention"] > 1)]
    assert len(layout) > 150
    pred = cal.predict(layout, catalog, {e: catalog.engine(e) for e in ("vllm", "trtllm")})
    assert len(pred) >= len(layout) - 1
    assert np.isfinite(pred["pred_tpot"]).all() and np.isfinite(pred["pred_ttft"]).all()
