"""The AIConfigurator silicon sample as closed-loop measurement rows (calibration.aic)."""

from __future__ import annotations

import numpy as np
import pytest

from planner import calibration as cal
from planner.calibration import aic as aic_mod
from planner.calibration import prediction as pr
from planner.planning.estimate import EstimateRequest, closed_loop


def test_every_row_is_used_or_skipped_with_a_reason(aic):
    assert len(aic) == 1536
    used = cal.usable(aic)
    # issue #10: EP / attention-DP rows, Kimi-K2.5, MiniMax-M2.5 (1236); t10v: less 21 rows
    # beyond the GPU's compute, 32 contradicted by another engine, 37 listed twice; s24: 19
    # SGLang NVFP4 DeepSeek-V3 rows contradicted by the same engine's FP8 ones
    assert len(used) == 1127
    skipped = aic[aic["skip_reason"] != ""]["skip_reason"]
    assert len(skipped) == 1536 - 1127 and (skipped.str.len() > 10).all()
    assert skipped.str.contains("beyond the GPU's compute").sum() == 21
    assert skipped.str.contains("contradicted by SGLang").sum() == 70  # 51 otherwise usable
    assert skipped.str.contains("duplicate:").sum() == 37
    assert skipped.str.contains("series not monotone").sum() == 15
    assert skipped.str.contains("disaggregated").sum() == 24
    assert skipped.str.contains("linear attention").sum() == 123  # Qwen3.5-397B-A17B
    assert skipped.str.contains("sparse attention").sum() == 54  # GLM-5
    assert skipped.str.contains("across scale-up domains").sum() == 58
    assert skipped.str.contains("MoE split").sum() == 19
    assert skipped.str.contains("only the routed experts are int4").sum() == 31  # Kimi int4
    assert not skipped.str.contains("no catalog entry").any()
    assert set(used["engine"]) == {"vllm", "sglang", "trtllm"}
    assert set(used["gpu_id"]) <= {"h100-sxm", "h200", "b200", "b300", "gb200", "gb300"}
    assert (used["row_id"] > cal.aic.AIC_ROW_OFFSET).all()


def test_rows_carry_the_generator_configuration(aic, catalog):
    """Issue #10: every aic row is taken as AIConfigurator's generator serves it (its rule
    files: ISL + 1500 prompt tokens a pass, prefill mixed into decode steps, SGLang's
    enable_mixed_chunk), and the prediction runs each row under that configuration, not the
    engine's own default (SGLang: no mixing, 8192-token chunks on an H200)."""
    assert (aic["prefill_budget_tokens"] == aic["input_len"] + 1500).all()
    # s37: the generator's SGLang 0.5.1.post1 template never passes the mixing flag
    unmixed = aic["source_key"] == "aic-sglang-0.5.1.post1"
    assert unmixed.sum() > 0 and (aic.loc[unmixed, "harness_mixes_prefill"] == 0.0).all()
    assert (aic.loc[~unmixed, "harness_mixes_prefill"] == 1.0).all()
    assert aic.loc[unmixed, "assumptions"].str.contains("prefill is not mixed").all()
    assert not aic.loc[~unmixed, "assumptions"].str.contains("prefill is not mixed").any()
    assert aic["assumptions"].str.contains("AIConfigurator's generator").all()
    used = cal.usable(aic)
    row = used[(used["engine"] == "sglang") & (used["model_id"] == "llama-3.1-8b")].iloc[[0]]
    design = pr.build_design(row, catalog, catalog.engine("sglang"))
    grid = design.groups[0][1]
    assert grid["_chunk_tokens"].iloc[0] == row["input_len"].iloc[0] + 1500
    assert bool(grid["_mixes_prefill"].iloc[0]) and not catalog.engine("sglang").mixes_prefill
    own = pr.build_design(
        row.assign(prefill_budget_tokens=np.nan, harness_mixes_prefill=np.nan),
        catalog,
        catalog.engine("sglang"),
    ).groups[0][1]
    assert not bool(own["_mixes_prefill"].iloc[0]) and own["_chunk_tokens"].iloc[0] == 8192


def test_a_row_maps_to_catalog_ids(aic):
    row = aic[aic["source"].str.contains("llama3_1_70b_h200_sxm_vllm_fp8_agg_1024x8192_c32")]
    if row.empty:  # the id spelling of the sample; fall back to the mapped values
        row = aic[(aic["model_id"] == "llama-3.1-70b") & (aic["engine"] == "vllm")]
    r = row.iloc[0]
    assert r["scenario_kind"] == "closed_loop" and r["engine_class"] == "server"
    assert r["quant_id"] in {"fp8", "fp4", "bf16"} and r["kv_dtype"] in {"bf16", "fp8"}
    # throughput by Little's law over the closed loop, from the measured TTFT and TPOT
    c, o = r["batch"], r["output_len"]
    expect = c * o / (r["meas_ttft"] + (o - 1) * r["meas_tpot"]) * 1e3
    assert r["meas_throughput"] == pytest.approx(expect)


def test_steady_closed_loop_matches_estimate_concurrency(catalog, aic, monkeypatch):
    """The vectorised closed loop is `planner estimate --concurrency` row by row."""
    monkeypatch.setattr(pr, "CLOSED_LOOP_TIMING", "steady")
    used = cal.usable(aic)
    row = used[(used["model_id"] == "llama-3.1-8b") & (used["tp"] == 1)].iloc[[0]]
    # the engine's own prefill budget and mixing, as estimate uses (not the aic harness's)
    row = row.assign(prefill_budget_tokens=np.nan, harness_mixes_prefill=np.nan)
    profile = catalog.engine(row["engine"].iloc[0])
    pred = cal.predict(row, catalog, profile).iloc[0]
    r = row.iloc[0]
    req = EstimateRequest(
        model=r["model_id"], gpu=r["gpu_id"], tp=1, quant=r["quant_id"], batch=10_000,
        input_len=int(r["input_len"]), output_len=int(r["output_len"]),
        kv_dtype=r["kv_dtype"], engine=profile.id,
    )  # fmt: skip
    est = closed_loop(req, catalog, int(r["batch"]))
    assert pred["pred_tpot"] == pytest.approx(est["tpot_ms"], rel=1e-6)
    assert pred["pred_ttft"] == pytest.approx(est["ttft_ms"], rel=1e-6)
    assert pred["pred_throughput"] == pytest.approx(est["throughput_tok_s"], rel=1e-6)


def test_wave_closed_loop_at_concurrency_one_is_the_prefill(catalog, aic):
    used = cal.usable(aic)
    # the aic set's C = 1 rows were the GB200 series the data-quality filter skips: the B200
    # TensorRT-LLM rows' identities and shapes at concurrency 1 (prompts of one 8192-token
    # prefill chunk; a longer prompt's chunks interleave with decode steps)
    b200 = used[(used["engine"] == "trtllm") & (used["gpu_id"] == "b200")]
    b200 = b200[b200["input_len"] <= 8192]
    one = b200.assign(batch=1.0)
    pred = cal.predict(one, catalog, catalog.engine("trtllm"))
    assert len(pred) > 0
    # #10: wave share f sees prefill + latency, the rest the steady state, which adds half a
    # decode step (an idle replica starts the prefill at the next step) and the step the
    # overlap scheduler launched ahead (s39; at C=1 a bare decode step): no queueing at C=1
    eff = catalog.engine("trtllm").for_family("blackwell")
    f, lat = eff.benchmark_wave_share, eff.request_overhead_ms
    assert eff.scheduler_lag_steps == 1.0
    expected = pred["prefill_ms"] + lat + (1 - f) * pred["tpot_step_ms"] * 1.5
    assert (pred["gpu_family"] == "blackwell").all()
    assert np.allclose(pred["pred_ttft"], expected, rtol=1e-6)
    assert np.allclose(pred["pred_tpot"], pred["tpot_step_ms"], rtol=1e-6)


def test_round_trip_on_closed_loop_rows(catalog, aic):
    """Constants used to generate synthetic closed-loop rows are fitted back (a sample of
    the aic vLLM rows with TP > 1, so every constant is seen)."""
    used = cal.usable(aic)
    rows = used[(used["engine"] == "vllm")].sample(40, random_state=0)
    base = cal.RECIPES["vllm"].base_profile()
    truth = base.default.model_copy(
        update={
            "eta_mem": 0.72,
            "eta_compute_decode": 0.45,
            "eta_compute_prefill": 0.62,
            "allreduce_latency_us": 22.0,
            "step_overhead_ms": 1.8,
            "prefill_overhead_ms": 4.0,
        }
    )
    pred = cal.predict(rows, catalog, base.model_copy(update={"default": truth}))
    synthetic = rows.loc[pred.index].copy()
    for metric in ("tpot", "ttft", "throughput"):
        synthetic[cal.MEASURED[metric]] = pred[cal.PREDICTED[metric]]
    fitted, report = cal.fit_profile(synthetic, catalog, base, "vllm", n_starts=1)
    assert report["default"]["rms_log_after"] < 1e-3
    for name in ("eta_mem", "eta_compute_prefill", "step_overhead_ms", "prefill_overhead_ms"):
        assert getattr(fitted.default, name) == pytest.approx(getattr(truth, name), rel=0.05)


def test_trtllm_kv_is_fp8_for_fp8_checkpoints_but_the_checkpoints_own_in_a_kv_auto_campaign(aic):
    """Issue #10: TensorRT-LLM 1.0.0rc3's H100 campaign serves the pre-quantized
    Qwen3-235B-A22B-FP8 with the checkpoint's BF16 KV cache; its Qwen3-32B rows hold more
    KV than BF16 fits beside the weights (session 38, bounds.memory_floor_bytes), so FP8; the
    other TensorRT-LLM FP8/FP4 campaigns keep the FP8 KV assumed for ModelOpt checkpoints."""
    used = cal.usable(aic)
    trt = used[(used["engine"] == "trtllm") & used["quant_id"].isin(["fp8", "fp4"])]
    auto = trt["framework"] == "trtllm 1.0.0rc3"
    assert auto.sum() >= 300 and set(trt.loc[auto, "model_id"]) == {
        "qwen3-32b",
        "qwen3-235b-a22b",
        "llama-3.1-8b",  # FP8 weights inferred (aic.AIC_WEIGHTS_INFERRED), its KV the campaign's
    }
    llama = auto & (trt["model_id"] == "llama-3.1-8b")
    assert set(trt.loc[llama, "kv_dtype"]) == {"bf16"}
    moe = auto & (trt["model_id"] == "qwen3-235b-a22b")
    assert set(trt.loc[moe, "kv_dtype"]) == {"bf16"}
    own = trt.loc[moe, "assumptions"].str.contains("the checkpoint's own (BF16)", regex=False)
    assert own.all()
    dense = auto & (trt["model_id"] == "qwen3-32b")
    assert set(trt.loc[dense, "kv_dtype"]) == {"fp8"}
    other = trt[~auto & (trt["model_id"] == "llama-3.1-70b")]
    assert len(other) > 0 and set(other["kv_dtype"]) == {"fp8"}


def test_a_campaign_without_a_weight_format_says_what_it_assumed(aic):
    """Session 38: rows whose GEMM quant mode is blank carry the BF16 assumption, except the
    campaign whose own rows rule BF16 out (aic.AIC_WEIGHTS_INFERRED)."""
    blank = aic[aic["precision_raw"].str.contains("gemm - ", regex=False)]
    assert len(blank) > 250
    inferred = blank["assumptions"].str.contains("FP8 inferred", regex=False)
    assert set(blank.loc[inferred, "model_id"]) == {"llama-3.1-8b"}
    assert set(blank.loc[inferred, "quant_id"]) == {"fp8"}
    notes = blank.loc[~inferred, "assumptions"]
    assert notes.str.contains(aic_mod.AIC_BF16_UNPUBLISHED, regex=False).all()
    assert set(blank.loc[~inferred, "quant_id"]) == {"bf16"}


def test_vllm_nvfp4_campaigns_are_predicted_with_the_fp8_kv_their_checkpoints_declare(aic, catalog):
    """Issue #10: vLLM's NVFP4 rows (Kimi-K2.5, MiniMax-M2.5 and Llama-3.1-70B) ran exported
    ModelOpt checkpoints, which declare an FP8 KV cache that vLLM's auto KV follows; its FP8
    rows keep the quant's default, and the planner's own FP4 rule for vLLM (16-bit, as MXFP4
    checkpoints run) is untouched."""
    used = cal.usable(aic)
    vllm = used[used["engine"] == "vllm"]
    fp4 = vllm[vllm["quant_id"] == "fp4"]
    assert len(fp4) >= 80
    assert set(fp4["model_id"]) == {"kimi-k2.5", "minimax-m2.5", "llama-3.1-70b"}
    assert set(fp4["kv_dtype"]) == {"fp8"}
    assert fp4["assumptions"].str.contains("vllm-project/vllm#29980", regex=False).all()
    fp8 = vllm[vllm["quant_id"] == "fp8"]
    assert not fp8["assumptions"].str.contains("#29980", regex=False).any()
    assert catalog.quants["fp4"].default_kv_dtype == "bf16"
