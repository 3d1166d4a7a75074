"""Hardware bounds on measured closed-loop rows (calibration.bounds, issue #10 vLLM forensics)."""

from __future__ import annotations

import pandas as pd
import pytest

from planner import calibration as cal
from planner.calibration import aic
from planner.calibration import bounds as b
from planner.calibration import quality as q


@pytest.fixture(scope="module")
def aic_rows() -> pd.DataFrame:
    return cal.load_aic_measurements()


def _row(rows: pd.DataFrame, row_id: int) -> pd.DataFrame:
    return rows[rows["row_id"] == row_id]


def test_compute_share_of_the_vllm_8b_row_is_hand_computed(aic_rows, catalog):
    # aic line 1039: vLLM 0.12.0, Llama-3.1-8B FP8, H200 tp 1, C 64, 2000/100, TTFT 121.73 ms,
    # TPOT 9.74 ms. Active matmul params 8,030,261,248 - 525,336,576 (embedding) =
    # 7,504,924,672; a request 2 x 7.5049e9 x 2100 = 3.15207e13 FLOPs; latency
    # 121.73 + 99 x 9.74 = 1085.99 ms; 64 x 3.15207e13 / 1.08599 s = 1.85761e15 FLOP/s,
    # over the H200's 1979 TFLOPS FP8 dense peak = 0.93866
    share = b.compute_share(_row(aic_rows, 101039), catalog)
    assert share[0] == pytest.approx(0.93866, abs=2e-5)


def test_tpot_floor_of_the_vllm_qwen3_32b_fp8_row_is_hand_computed(aic_rows, catalog):
    # aic line 916: vLLM 0.12.0, Qwen3-32B FP8 (online), H100 tp 1, C 24, 4000/1000,
    # TTFT 294.768 ms, TPOT 16.8549 ms. In decode 24 x 999 x 16.8549 / (294.768 + 999 x
    # 16.8549) = 23.5870 sequences, each >= 4000 tokens of 64 layers x 2 x 8 x 128 values:
    # BF16 KV 23.5870 x 4000 x 262,144 B = 24.733 GB, FP8 half of it; weights
    # 31,984,210,944 params x 1 B. (31.984 + 24.733) GB / 3350 GB/s = 16.930 ms,
    # (31.984 + 12.366) / 3350 = 13.239 ms
    row = _row(aic_rows, 100916)
    assert b.tpot_floor_ms(row, catalog, "bf16")[0] == pytest.approx(16.930, abs=1e-3)
    assert b.tpot_floor_ms(row, catalog, "fp8")[0] == pytest.approx(13.239, abs=1e-3)
    # measured 16.855 ms is below the BF16-KV floor: the campaign ran an FP8 KV cache
    assert row["meas_tpot"].iloc[0] < b.tpot_floor_ms(row, catalog, "bf16")[0]


def test_memory_floor_of_the_trtllm_qwen3_32b_row_is_hand_computed(aic_rows, catalog):
    # aic line 505: TensorRT-LLM 1.0.0rc3, Qwen3-32B FP8, H100 tp 1, C 64, 4096/128, TTFT
    # 1628.049 ms, TPOT 175.574 ms. Latency 1628.049 + 127 x 175.574 = 23925.953 ms; in
    # decode 64 x 22297.904 / 23925.953 = 59.645 sequences, each >= 4096 tokens of 64 layers x
    # 2 x 8 x 128 values: BF16 KV 59.645 x 4096 x 262,144 B = 64.043 GB, FP8 32.022 GB;
    # weights 31,984,210,944 params x 1 B. 96.028 GB at BF16 KV on a card of 81,559 MiB =
    # 85.521 GB; 64.006 GB at FP8
    row = _row(aic_rows, 100505)
    assert b.memory_floor_bytes(row, catalog, "bf16")[0] == pytest.approx(96.028e9, rel=1e-4)
    assert b.memory_floor_bytes(row, catalog, "fp8")[0] == pytest.approx(64.006e9, rel=1e-4)
    assert catalog.gpu("h100-sxm").memory_bytes == pytest.approx(85.521e9, rel=1e-4)


def test_the_aic_set_infers_fp8_kv_for_two_qwen3_32b_fp8_campaigns(aic_rows):
    inferred = aic_rows[aic_rows["assumptions"].str.contains("inferred FP8", regex=False)]
    assert set(inferred["kv_dtype"]) == {"fp8"}
    by_floor = inferred[inferred["assumptions"].str.contains(b.FP8_KV_NOTE, regex=False)]
    assert sorted(by_floor["row_id"]) == [100913, 100915, 100916]
    assert set(by_floor["source_key"]) == {"aic-vllm-0.12.0"}
    # the memory bound: TensorRT-LLM 1.0.0rc3's Qwen3-32B campaign, every row of it, while the
    # same campaign's Qwen3-235B and Llama-3.1-8B rows keep the checkpoint's BF16 KV
    by_memory = inferred[inferred["assumptions"].str.contains(b.FP8_KV_CAPACITY_NOTE, regex=False)]
    assert set(by_memory["source_key"]) == {"aic-trtllm-1.0.0rc3"}
    assert set(by_memory["model_id"]) == {"qwen3-32b"} and len(by_memory) == 176
    same = aic_rows[aic_rows["source_key"] == "aic-trtllm-1.0.0rc3"]
    others = same[same["model_id"] != "qwen3-32b"]
    assert set(others["kv_dtype"]) == {"bf16"}


def _held(engine: str, tpot: float) -> pd.DataFrame:
    """One H100 tp 1 Qwen3-32B FP8 campaign row at C 64, 4096/128, TTFT 1.6 s."""
    row = _campaign([tpot], "held").assign(
        engine=engine, batch=64.0, input_len=4096.0, output_len=128.0, meas_ttft=1600.0
    )
    return row


def test_fp8_kv_is_inferred_from_memory_only_for_an_engine_that_never_evicts(catalog):
    # 64 x 127 x 175 / (1600 + 127 x 175) = 59.7 in decode: 96 GB at BF16 KV, 64 GB at FP8
    trt = b.infer_fp8_kv(_held("trtllm", 175.0), catalog)
    assert trt.loc[0, "kv_dtype"] == "fp8"
    assert trt.loc[0, "assumptions"] == b.FP8_KV_CAPACITY_NOTE
    # vLLM preempts under KV pressure: its latencies do not say the KV was held throughout
    assert b.infer_fp8_kv(_held("vllm", 175.0), catalog).loc[0, "kv_dtype"] == "bf16"
    # a short TPOT over a long TTFT: few in decode at once, room at BF16
    few = _held("trtllm", 175.0).assign(meas_ttft=200_000.0)
    assert b.infer_fp8_kv(few, catalog).loc[0, "kv_dtype"] == "bf16"


def test_the_aic_set_skips_only_the_vllm_8b_campaign_as_beyond_compute(aic_rows):
    beyond = aic_rows[aic_rows["skip_reason"] == b.BEYOND_COMPUTE_REASON]
    assert len(beyond) == 21
    assert set(zip(beyond["engine"], beyond["model_id"], beyond["gpu_id"], strict=True)) == {
        ("vllm", "llama-3.1-8b", "h200")
    }


def test_every_usable_aic_row_is_within_both_bounds(aic_rows, catalog):
    ok = aic_rows[
        (aic_rows["skip_reason"] == "")
        & aic_rows["meas_tpot"].notna()
        & aic_rows["meas_ttft"].notna()
    ]
    assert (b.compute_share(ok, catalog) <= b.MAX_COMPUTE_SHARE).all()
    floor = b.tpot_floor_ms(ok, catalog)
    dense = ~pd.isna(floor)
    assert dense.sum() > 700
    assert (ok["meas_tpot"].to_numpy()[dense] >= floor[dense]).all()


def test_the_contradicted_qwen3_235b_vllm_campaign_is_skipped_with_its_reason(aic_rows):
    # aic line 987: vLLM 0.12.0 Qwen3-235B-A22B-FP8 on H200, tp 2, C 16, 1000/100, TPOT 52 ms
    row = _row(aic_rows, 100987).iloc[0]
    reason = aic.AIC_CONTRADICTED[("vllm", "0.12.0", "Qwen/Qwen3-235B-A22B-FP8", "h200_sxm")]
    assert reason in row["skip_reason"]
    same = aic_rows[
        (aic_rows["model_id"] == "qwen3-235b-a22b")
        & (aic_rows["source_key"] == "aic-vllm-0.12.0")
        & (aic_rows["gpu_id"] == "h200")
    ]
    assert len(same) == 51
    assert same["skip_reason"].str.contains("contradicted by SGLang", regex=False).all()
    qwen = aic_rows[aic_rows["model_id"] == "qwen3-235b-a22b"]
    sglang = qwen[qwen["engine"] == "sglang"]
    assert (sglang["skip_reason"] == "").any()  # the reference campaign stays usable


def test_the_contradicted_sglang_nvfp4_deepseek_campaign_is_skipped_with_its_evidence(aic_rows):
    """Session 24: SGLang's unversioned NVFP4 DeepSeek-V3 rows on B200 are out, the FP8 rows of
    0.5.9 on the same GPUs, model and tp stay; the evidence is in the measurements."""
    deepseek = aic_rows[
        (aic_rows["model_id"] == "deepseek-v3")
        & (aic_rows["engine"] == "sglang")
        & (aic_rows["gpu_id"] == "b200")
    ]
    fp4 = deepseek[
        (deepseek["quant_id"] == "fp4") & (deepseek["source_key"] == "aic-sglang-unversioned")
    ]
    reason = aic.AIC_CONTRADICTED_QUANT[
        ("sglang", "", "deepseek-ai/DeepSeek-V3", "b200_sxm", "nvfp4")
    ]
    assert len(fp4) == 19 and fp4["skip_reason"].str.contains(reason, regex=False).all()
    fp8 = deepseek[(deepseek["quant_id"] == "fp8") & (deepseek["source_key"] == "aic-sglang-0.5.9")]
    kept = fp8[fp8["skip_reason"] == ""]
    assert len(kept) == 3  # the FP8 reference stays usable
    # the same tp 4, ISL 8192 and concurrency (4, 8): FP4's TTFT is 9x FP8's or more
    for c in (4, 8):
        pick = {"tp": 4, "input_len": 8192, "batch": c}
        a = fp4[(fp4[list(pick)] == pd.Series(pick)).all(axis=1)]["meas_ttft"].item()
        f = kept[(kept[list(pick)] == pd.Series(pick)).all(axis=1)]["meas_ttft"].item()
        assert a > 8.5 * f
    # and at ISL 1024 the step from C <= 16 to C >= 32, at both tp
    short = fp4[fp4["input_len"] == 1024]
    assert short[short["batch"] <= 16]["meas_ttft"].max() < 0.61e3
    assert short[short["batch"] >= 32]["meas_ttft"].min() > 7.0e3


def _campaign(tpots: list[float], source: str) -> pd.DataFrame:
    n = len(tpots)
    return pd.DataFrame(
        {
            "source_key": source,
            "engine": "vllm",
            "model_id": "qwen3-32b",
            "gpu_id": "h100-sxm",
            "quant_id": "fp8",
            "kv_dtype": "bf16",
            "tp": 1,
            "dp_attention": 1.0,
            "batch": 24.0,
            "input_len": 4000.0,
            "output_len": 1000.0,
            "scenario_kind": "closed_loop",
            "skip_reason": "",
            "assumptions": "KV dtype not published: quant default",
            "meas_ttft": 300.0,
            "meas_tpot": tpots,
        },
        index=range(n),
    )


def test_fp8_kv_is_inferred_per_campaign_and_not_below_the_fp8_floor(catalog):
    below = _campaign([16.0, 30.0], "below")  # 16 ms: under the ~16.9 ms BF16 floor
    above = _campaign([20.0, 30.0], "above")  # feasible at BF16: left alone
    impossible = _campaign([5.0, 30.0], "impossible")  # under even the FP8 floor: not FP8
    rows = pd.concat([below, above, impossible], ignore_index=True)
    out = b.infer_fp8_kv(rows, catalog)
    assert list(out["kv_dtype"]) == ["fp8", "fp8", "bf16", "bf16", "bf16", "bf16"]
    assert out.loc[0, "assumptions"] == b.FP8_KV_NOTE
    assert list(rows["kv_dtype"]) == ["bf16"] * 6  # a copy


def test_a_measurement_listed_twice_is_counted_once(aic_rows):
    # aic lines 87 and 1448: vLLM 0.16.0 MiniMax-M2.5 FP8 on H200, tp 4, C 4, 1024/8192, both
    # TTFT 103.02 ms and TPOT 12.45 ms to every digit: one run under two db-dump ids
    first, second = _row(aic_rows, 100087).iloc[0], _row(aic_rows, 101448).iloc[0]
    assert first["meas_tpot"] == second["meas_tpot"] and first["meas_ttft"] == second["meas_ttft"]
    assert first["skip_reason"] == ""
    assert second["skip_reason"] == q.DUPLICATE_REASON
    dup = aic_rows[aic_rows["skip_reason"] == q.DUPLICATE_REASON]
    assert len(dup) == 37 and set(dup["engine"]) == {"vllm"}


def test_near_duplicates_are_separate_measurements():
    rows = pd.DataFrame(
        {
            "engine": "vllm",
            "model_id": "minimax-m2.5",
            "gpu_id": "h200",
            "quant_id": "fp8",
            "tp": 8,
            "batch": 8.0,
            "input_len": 1024.0,
            "output_len": 1024.0,
            "meas_ttft": [111.23, 113.00, 111.23],
            "meas_tpot": [9.21, 9.24, 9.21],
            "skip_reason": "",
        }
    )
    assert list(q.duplicate_measurements(rows)) == [2]


def test_a_prompts_cost_in_the_decode_loop_is_hand_computed(aic_rows, catalog):
    # aic lines 669 and 671: TensorRT-LLM 1.0.0rc3, Llama-3.1-8B, H100 tp 1, C 32, ISL 2048,
    # TPOT 19.836241 ms at OSL 128 and 12.560652 ms at OSL 512. t_pf = 7.275589 / (31 x (1/127
    # - 1/511)) = 7.275589 / 0.183431 = 39.664 ms; 2 x 7,504,924,672 x 2048 = 3.07402e13 FLOPs
    # in 39.664 ms = 775.0 TFLOP/s, 0.7832 of the H100's 989.5 BF16 dense peak
    group = aic_rows[
        (aic_rows["source_key"] == "aic-trtllm-1.0.0rc3")
        & (aic_rows["model_id"] == "llama-3.1-8b")
        & (aic_rows["tp"] == 1)
        & (aic_rows["input_len"] == 2048)
        & (aic_rows["batch"] == 32)
    ]
    assert sorted(group["output_len"]) == [128.0, 256.0, 512.0]
    out = b.prefill_peak_share(group, catalog, "bf16")
    assert len(out) == 1
    assert out["t_pf_ms"].iloc[0] == pytest.approx(39.664, abs=1e-3)
    assert out["peak_share"].iloc[0] == pytest.approx(0.7832, abs=1e-4)


def test_llama_8b_of_trtllm_1_0_0rc3_prefills_beyond_any_16_bit_gemm(aic_rows, catalog):
    """Session 38 (aic.AIC_WEIGHTS_INFERRED): at tp 1 the campaign's Llama-3.1-8B prompts need
    a median 85% of the BF16 peak, above MAX_COMPUTE_SHARE, so its unpublished weight format
    is taken as FP8 (42% of that peak), as its per-tensor FP8 Qwen3-32B (47%)."""
    campaign = aic_rows[(aic_rows["source_key"] == "aic-trtllm-1.0.0rc3") & (aic_rows["tp"] == 1)]
    llama = campaign[campaign["model_id"] == "llama-3.1-8b"]
    bf16 = b.prefill_peak_share(llama, catalog, "bf16")["peak_share"]
    fp8 = b.prefill_peak_share(llama, catalog, "fp8")["peak_share"]
    assert len(bf16) == 14
    assert bf16.median() > b.MAX_COMPUTE_SHARE and bf16.median() == pytest.approx(0.847, abs=1e-3)
    assert fp8.median() == pytest.approx(0.423, abs=1e-3)
    qwen = campaign[campaign["model_id"] == "qwen3-32b"]
    assert b.prefill_peak_share(qwen, catalog, "fp8")["peak_share"].median() == pytest.approx(
        0.466, abs=1e-3
    )
    assert set(llama["quant_id"]) == {"fp8"}
    assert llama["assumptions"].str.contains("FP8 inferred", regex=False).all()


def _loop(**over: float | str) -> pd.DataFrame:
    """One predicted closed-loop row, as calibration.predict returns it: SGLang 0.5.8.post1's
    Qwen3-32B BF16 on one H100, 16 clients of 1024 + 128 tokens (aic line 340), TTFT 6775.54
    ms and TPOT 25.4761 ms measured, 620.30 ms TTFT predicted with 20 sequences' KV budget."""
    row = {
        "scenario_kind": "closed_loop",
        "batch": 16.0,
        "max_batch": 20.0,
        "output_len": 128.0,
        "meas_ttft": 6775.54,
        "meas_tpot": 25.4761,
        "pred_ttft": 620.30,
    }
    return pd.DataFrame([{**row, **over}])


def test_a_loop_that_held_a_third_of_its_clients_is_told_apart():
    # in decode 16 x 127 x 25.4761 / (6775.54 + 127 x 25.4761) = 16 x 3235.46 / 10011.00
    # = 5.171 sequences, under half of min(16, 20) = 8; TTFT 10.9x the prediction
    assert b.sequences_in_decode(_loop())[0] == pytest.approx(5.171, abs=1e-3)
    assert b.held_fewer_than_budget(_loop()).tolist() == [True]
    # measured TTFT 700 ms: 16 x 3235.46 / 3935.46 = 13.15 in decode, above 8
    assert b.held_fewer_than_budget(_loop(meas_ttft=700.0)).tolist() == [False]
    # a loop that few in decode because its prompts take the time, as predicted, is physics
    assert b.held_fewer_than_budget(_loop(pred_ttft=6000.0)).tolist() == [False]
    # the budget holds 9: half is 4.5, and 5.17 sequences were in decode
    assert b.held_fewer_than_budget(_loop(max_batch=9.0)).tolist() == [False]
    assert b.held_fewer_than_budget(_loop(scenario_kind="open_loop")).tolist() == [False]
    assert b.held_fewer_than_budget(_loop(meas_tpot=float("nan"))).tolist() == [False]
