"""Calibration: the public measurements map to the catalog, the fit recovers known constants,
and every shipped engine profile is physically plausible."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner import calibration as cal
from planner.inputs.catalog import load_catalog
from planner.inputs.loading import load_yaml_model
from planner.perf import evaluate as ev
from planner.schema.engine import EngineProfile

SHIPPED = ("vllm", "trtllm", "llamacpp")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def measurements(catalog):
    return cal.load_measurements(cal.DEFAULT_CSV, catalog)


def row(frame: pd.DataFrame, row_id: int) -> pd.Series:
    return frame.set_index("row_id").loc[row_id]


def test_data_lives_in_the_project():
    assert cal.DEFAULT_CSV.is_relative_to(cal.DATA_DIR)
    assert cal.DEFAULT_CSV.is_file()
    sources = cal.DEFAULT_CSV.with_name("SOURCES.md").read_text(encoding="utf-8")
    assert "Copied verbatim" in sources


def test_csv_loads_and_maps_enough_rows(measurements):
    assert len(measurements) == 112
    used = cal.usable(measurements)
    assert len(used) >= 60
    assert used[["model_id", "gpu_id", "quant_id", "kv_dtype"]].notna().all().all()
    has_metric = used[[cal.MEASURED[m] for m in cal.METRICS]].notna().any(axis=1)
    assert has_metric.all()


@pytest.mark.parametrize(
    ("row_id", "model", "gpu", "quant", "kv", "tp"),
    [
        (3, "llama-3.1-8b", "rtx-4090", "gguf-q4_k_m", "fp16", 1),
        (18, "llama-3.1-8b", "a100-80gb-pcie", "fp16", "fp16", 1),
        (23, "llama-3.1-8b", "h100-pcie", "gguf-q4_k_m", "fp16", 1),
        (57, "llama-3.3-70b", "b200", "fp4", "fp8", 1),
        (59, "llama-3.1-405b", "h200", "fp8", "fp8", 8),
        (65, "llama-2-7b", "h100-sxm", "fp8", "fp8", 1),
        (68, "llama-2-7b", "a100-80gb", "fp16", "fp16", 1),
        (81, "llama-2-13b", "h200", "fp8", "fp8", 1),
        (123, "llama-2-7b", "rtx-4090", "int4-awq", "fp16", 1),
        (125, "mistral-7b", "rtx-4090", "int4-awq", "fp16", 1),
        (129, "llama-2-70b", "rtx-4090", "int4-awq", "fp16", 2),
        (141, "llama-3.1-70b", "mi300x", "fp8", "fp8", 8),
        (158, "llama-3.1-8b", "h200", "bf16", "bf16", 1),
        (160, "mixtral-8x7b", "h200", "bf16", "bf16", 2),
    ],
)
def test_rows_map_to_catalog_ids(measurements, row_id, model, gpu, quant, kv, tp):
    r = row(measurements, row_id)
    assert (r["model_id"], r["gpu_id"], r["quant_id"], r["kv_dtype"], r["tp"]) == (
        model, gpu, quant, kv, tp,
    )  # fmt: skip


def test_metrics_are_converted_to_one_unit_each(measurements):
    assert row(measurements, 3)["meas_tpot"] == pytest.approx(1000 / 130.58)
    assert row(measurements, 3)["meas_ttft"] == pytest.approx(512 / 7138.99 * 1000)
    assert row(measurements, 3)["input_len"] == 1  # llama-bench tg from an empty context
    assert row(measurements, 66)["meas_throughput"] == pytest.approx(2657 * 2)  # per GPU x 2
    assert row(measurements, 41)["meas_throughput"] == 27911  # total, batch left open
    assert np.isnan(row(measurements, 41)["batch"])
    assert row(measurements, 126)["meas_tpot"] == pytest.approx(8 * 1000 / 1185.25)
    assert row(measurements, 141)["meas_e2e"] == 15254
    assert row(measurements, 71)["meas_ttft"] == 7


def test_unmapped_and_ambiguous_rows_keep_a_reason(measurements):
    reasons = measurements.set_index("row_id")["skip_reason"]
    assert "CodeLlama" in reasons[128]
    assert "not in the catalog" in reasons[34]  # Apple
    assert "not in the catalog" in reasons[1]  # RTX 3090
    assert "not in the catalog" in reasons[130]  # Radeon
    assert "ambiguous" in row(measurements, 69)["metric_skips"]  # per-GPU vs total, tp 4
    assert reasons[69] and reasons[146]  # no usable metric left
    assert np.isnan(row(measurements, 21)["meas_ttft"])  # anomalous pp 512
    assert not np.isnan(row(measurements, 21)["meas_tpot"])
    split = measurements[measurements["layer_split"]]
    assert set(split["row_id"]) == {26, 27, 28, 29, 30, 31, 32, 33}
    assert split["skip_reason"].str.contains("layer").all()


def test_engine_labels(measurements):
    engines = measurements.set_index("row_id")["engine"]
    assert engines[118] == "lmdeploy" and engines[120] == "mlc" and engines[122] == "llm-awq"
    assert engines[41] == "trtllm" and engines[141] == "vllm" and engines[1] == "llamacpp"
    assert engines[123] == "autoawq"


def test_fast_path_matches_evaluate(measurements, catalog):
    design = cal.build_design(cal.usable(measurements), catalog, catalog.engines["vllm"])
    for model, grid, _ in design.groups:
        fast = cal._evaluate_core(model, grid)
        full = ev.evaluate(model, grid)
        for col in ("tpot_step_ms", "prefill_ms", "max_batch"):
            np.testing.assert_allclose(fast[col], full[col].to_numpy(dtype=float), rtol=1e-12)
        # the table stores throughput at float32 (columns.FLOAT32, #16): the fast path's
        # float64 value, rounded once
        np.testing.assert_array_equal(
            np.asarray(fast["throughput_tok_s"], np.float32), full["throughput_tok_s"].to_numpy()
        )


def test_batch_prefill_and_e2e_helpers(measurements, catalog):
    design = cal.build_design(cal.usable(measurements), catalog, catalog.engines["vllm"])
    for model, grid, _ in design.groups:
        one = grid.assign(batch=1, input_len=np.minimum(grid["input_len"], 8192))
        full = ev.evaluate(model, one)
        np.testing.assert_allclose(
            cal.batch_prefill_ms(model, one), full["prefill_ms"].to_numpy(), rtol=1e-9
        )
        e2e = cal.static_batch_e2e_ms(model, full)
        expected = (
            cal.batch_prefill_ms(model, full) + (full["output_len"] - 1) * full["tpot_step_ms"]
        )
        np.testing.assert_allclose(e2e, expected.to_numpy(), rtol=1e-12)
    # batching prefills amortises the weight read and the fixed overhead: never slower than
    # B single prefills, much faster for short prompts
    model, grid, _ = design.groups[0]
    batched = cal.batch_prefill_ms(model, grid.assign(batch=64))
    single = 64 * cal.batch_prefill_ms(model, grid.assign(batch=1))
    assert np.all(batched <= single * (1 + 1e-9))
    assert np.any(batched < 0.5 * single)


@pytest.mark.slow  # a multi-start fit over every constant
def test_round_trip_recovers_known_constants(measurements, catalog):
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
    pred = cal.predict(measurements, catalog, base.model_copy(update={"default": truth}))
    synthetic = measurements.copy()
    for metric in cal.METRICS:
        col = cal.MEASURED[metric]
        synthetic[col] = np.nan
        was = measurements.loc[pred.index, col].notna()
        synthetic.loc[pred.index, col] = pred[cal.PREDICTED[metric]].where(was)
    start = base.default.model_copy(
        update={
            "eta_mem": 0.6,
            "eta_compute_decode": 0.6,
            "eta_compute_prefill": 0.5,
            "allreduce_latency_us": 40.0,
            "step_overhead_ms": 0.5,
            "prefill_overhead_ms": 8.0,
        }
    )
    fitted, report = cal.fit_profile(
        synthetic, catalog, base.model_copy(update={"default": start}), n_starts=1
    )
    # the public set's vLLM rows are open-loop or batch runs: #10's two closed-loop TTFT terms
    # (per-request latency, first-wave share) are seen by no residual and keep their base
    unseen = set(report["default"]["not_identified"])
    assert unseen <= {"request_overhead_ms", "benchmark_wave_share"}
    for name in cal.FIT_PARAMS:
        if name not in unseen:
            assert getattr(fitted.default, name) == pytest.approx(getattr(truth, name), rel=0.05)
    assert report["default"]["rms_log_after"] < 1e-3


def test_unseen_constants_are_not_fitted(measurements, catalog):
    """llama.cpp rows are batch 1 without TP: no information on alpha or decode compute."""
    profile, report = cal.fit_profile(
        measurements,
        catalog,
        cal.RECIPES["llamacpp"].base_profile(),
        "llamacpp",
        params=cal.RECIPES["llamacpp"].params,  # #10's serving terms are not llama.cpp's
        n_starts=1,
    )
    assert set(report["default"]["not_identified"]) == {
        "eta_compute_decode",
        "allreduce_latency_us",
    }
    assert profile.default.allreduce_latency_us == cal.BASE_EFFICIENCY.allreduce_latency_us


@pytest.mark.parametrize("engine_id", SHIPPED)
def test_shipped_profiles_are_physical(catalog, engine_id):
    profile = catalog.engine(engine_id)
    assert "measured_public.csv" in profile.source
    for eff in [profile.default, *profile.families.values()]:
        assert 0.4 <= eff.eta_mem <= 1.0
        assert 0.3 <= eff.eta_compute_decode <= 1.0
        assert 0.3 <= eff.eta_compute_prefill <= 1.0
        assert 1.0 <= eff.allreduce_latency_us <= 100.0
        assert 0.0 <= eff.step_overhead_ms < 20.0
        assert 0.0 <= eff.prefill_overhead_ms < 20.0


def test_shipped_profiles_beat_the_pure_roofline(measurements, catalog):
    used = cal.usable(measurements)
    profiles = {"*": catalog.engine("vllm"), "trtllm": catalog.engine("trtllm"),
                "llamacpp": catalog.engine("llamacpp")}  # fmt: skip
    ours = cal.error_table(cal.predict(used, catalog, profiles))
    ideal = cal.error_table(cal.predict(used, catalog, None, ideal=True))
    ours_all = ours[ours["by"] == "all"].set_index("metric")
    ideal_all = ideal[ideal["by"] == "all"].set_index("metric")
    assert set(ours_all.index) == set(cal.METRICS)
    for metric in cal.METRICS:
        assert ours_all.loc[metric, "median_abs_pct"] < ideal_all.loc[metric, "median_abs_pct"]
        assert ours_all.loc[metric, "median_abs_pct"] < 25.0
        assert ideal_all.loc[metric, "median_optimism_pct"] > 0  # the roofline is optimistic
    assert {"all", "gpu", "source"} == set(ours["by"])


def test_write_profile_round_trips(tmp_path, catalog):
    profile = catalog.engine("llamacpp")
    path = cal.write_profile(profile, tmp_path / "llamacpp.yaml", "header line")
    assert path.read_text(encoding="utf-8").startswith("# header line\n")
    loaded = load_yaml_model(path, EngineProfile)
    assert loaded.id == "llamacpp"
    assert loaded.default.eta_mem == pytest.approx(profile.default.eta_mem, abs=1e-3)
    assert set(loaded.families) == set(profile.families)


# ---- user measurements: vLLM benchmark JSON, CSV inputs, serving comparison ---------------

H100_8B = {"model_id": "llama-3.1-8b", "gpu_id": "h100-sxm", "quant_id": "bf16",
           "kv_dtype": "bf16", "tp": 1}  # fmt: skip


def test_vllm_results_map_to_the_measurement_schema(measurements):
    doc = {
        "backend": "vllm", "num_prompts": 200, "request_rate": "inf", "max_concurrency": 64,
        "completed": 200, "total_input_tokens": 200 * 1000, "total_output_tokens": 200 * 250,
        "median_tpot_ms": 21.0, "mean_ttft_ms": 350.0, "output_throughput": 2800.0,
    }  # fmt: skip
    no_limit = {**doc, "max_concurrency": None, "num_prompts": 32, "backend": "sglang"}
    rows = cal.vllm_result_rows([doc, no_limit], H100_8B, "run.json")
    assert list(rows.columns) == list(measurements.columns) == list(cal.MEASUREMENT_COLUMNS)
    first = rows.iloc[0]
    assert (first["batch"], first["input_len"], first["output_len"]) == (64, 1000, 250)
    assert (first["meas_tpot"], first["meas_ttft"], first["meas_throughput"]) == (21, 350, 2800)
    # 64 clients over 200 requests: a closed loop whose first round is 64 / 200 of them
    assert np.isnan(first["meas_e2e"]) and first["scenario_kind"] == "closed_loop"
    assert first["wave_share"] == pytest.approx(0.32)
    assert rows.iloc[1]["scenario_kind"] == "serving" and np.isnan(rows.iloc[1]["wave_share"])
    assert "median_tpot_ms" in first["metric_basis"] and first["skip_reason"] == ""
    assert (first["ttft_batch"], first["ttft_input_len"]) == (64, 1000)
    assert rows.iloc[1]["batch"] == 32 and rows.iloc[1]["engine"] == "sglang"
    given = cal.vllm_result_rows([doc], H100_8B, "x", cal.Identity(input_len=900, output_len=300))
    assert (given.iloc[0]["input_len"], given.iloc[0]["output_len"]) == (900, 300)


def test_closed_loop_result_mixes_its_own_first_round_with_the_steady_state(catalog):
    """`vllm bench serve --max-concurrency 16` over 32, 64 and 160 requests: the first round
    is 1/2, 1/4 and 1/10 of them, so TTFT and TPOT are f W + (1 - f) S with the same wave W
    and steady state S: the third row lies on the line through the other two, whatever the
    profile's fitted share (0.14), which a row that says its own does not use."""
    base = {"request_rate": "inf", "max_concurrency": 16, "mean_tpot_ms": 20.0,
            "mean_ttft_ms": 500.0, "output_throughput": 1000.0}  # fmt: skip
    docs = [
        {
            **base,
            "num_prompts": n,
            "completed": n,
            "total_input_tokens": n * 2048,
            "total_output_tokens": n * 256,
        }  # fmt: skip
        for n in (32, 64, 160)
    ]
    rows = cal.vllm_result_rows(docs, H100_8B, "x")
    assert list(rows["scenario_kind"]) == ["closed_loop"] * 3
    np.testing.assert_allclose(rows["wave_share"], [0.5, 0.25, 0.1])
    pred = cal.predict(rows, catalog, catalog.engine("vllm"))
    for metric in ("pred_ttft", "pred_tpot"):
        half, quarter, tenth = pred[metric]
        slope = (half - quarter) / 0.25
        assert tenth == pytest.approx(quarter - 0.15 * slope, rel=1e-9), metric
    assert pred["pred_ttft"].iloc[0] > pred["pred_ttft"].iloc[2]  # the wave waits longer
    fitted = catalog.engine("vllm").for_family("hopper").benchmark_wave_share
    aic_like = rows.iloc[[1]].assign(wave_share=np.nan)  # no share of its own: the fitted one
    quarter_ttft = pred["pred_ttft"].iloc[1]
    slope = (pred["pred_ttft"].iloc[0] - quarter_ttft) / 0.25
    expect = quarter_ttft + (fitted - 0.25) * slope
    got = cal.predict(aic_like, catalog, catalog.engine("vllm"))["pred_ttft"].iloc[0]
    assert got == pytest.approx(expect, rel=1e-9)


def test_serving_wave_by_hand(catalog):
    """32 prompts of 1024 tokens = 4 passes of 8192; prompt j completes in pass ceil(j/8), so
    mean TTFT = 2.5 passes (+ the per-request latency) and a request decodes through 1.5
    prefill passes on average. Pass k also runs the decode tokens of the 8 (k - 1) prompts
    done before it (#10, t10b): D (k - 1) / 4 with D the decode work of all 32, which adds
    D mean(k (k - 1)) / 8 = 5 D / 8 to the TTFT and 0.875 D to the riding passes."""
    doc = {"request_rate": "inf", "num_prompts": 32, "completed": 32,
           "total_input_tokens": 32 * 1024, "total_output_tokens": 32 * 101,
           "mean_tpot_ms": 20.0, "mean_ttft_ms": 500.0, "output_throughput": 1000.0}  # fmt: skip
    # every prompt at once (no max_concurrency): one wave of 32; of 4 x 1024 tokens, one
    # pass with no interleaving
    small = {**doc, "num_prompts": 4, "completed": 4, "total_input_tokens": 4 * 1024,
             "total_output_tokens": 4 * 101}  # fmt: skip
    rows = cal.vllm_result_rows([doc, small], H100_8B, "x")
    profile = catalog.engine("vllm")
    pred = cal.predict(rows, catalog, profile)
    model, grid, _ = cal.build_design(rows, catalog, profile).groups[0]
    cal._set_eff(grid, profile.for_family("hopper"))  # the H100 rows use the hopper override
    core = cal._evaluate_core(model, grid)
    whole = cal.batch_prefill_ms(model, grid)
    step = core["tpot_step_ms"]
    per_pass = whole[0] / 4
    rows_d = core["t_decode_rows_ms"][0]
    overhead = profile.for_family("hopper").request_overhead_ms  # per request (#10)
    assert pred["pred_ttft"].iloc[0] == pytest.approx(2.5 * per_pass + 5 * rows_d / 8 + overhead)
    riding = 1.5 * (per_pass - step[0]) + 0.875 * rows_d
    assert pred["pred_tpot"].iloc[0] == pytest.approx(step[0] + riding / 100)
    assert pred["pred_ttft"].iloc[1] == pytest.approx(whole[1] + overhead)
    assert pred["pred_tpot"].iloc[1] == pytest.approx(step[1])
    e2e = whole + 100 * step
    np.testing.assert_allclose(pred["pred_throughput"], [32 * 101 / e2e[0] * 1e3,
                                                          4 * 101 / e2e[1] * 1e3])  # fmt: skip


def test_csv_with_catalog_ids_and_few_columns(tmp_path, catalog):
    path = tmp_path / "mine.csv"
    path.write_text(
        "framework,model,gpu,weight_precision,tp,batch_size,input_len,output_len,tpot_itl_ms\n"
        "vLLM 0.10,llama-3.1-70b,h100-sxm,fp8,4,32,2048,256,22.5\n",
        encoding="utf-8",
    )
    rows = cal.read_measurements([path], catalog)
    r = rows.iloc[0]
    assert (r["model_id"], r["gpu_id"], r["quant_id"], r["tp"], r["engine"]) == (
        "llama-3.1-70b", "h100-sxm", "fp8", 4, "vllm",
    )  # fmt: skip
    assert r["row_id"] == 1 and r["source"] == "mine.csv" and r["skip_reason"] == ""
    assert r["meas_tpot"] == 22.5 and r["input"] == str(path)


def test_identifiable_counts_values_and_constants(catalog):
    doc = {"request_rate": "inf", "max_concurrency": 8, "completed": 8,
           "total_input_tokens": 8 * 512, "total_output_tokens": 8 * 128,
           "mean_tpot_ms": 10.0, "mean_ttft_ms": 100.0}  # fmt: skip
    rows = cal.vllm_result_rows([doc], H100_8B, "x")
    seen = cal.identifiable(rows, catalog, catalog.engine("vllm"))
    assert seen["rows"] == 1 and seen["values"] == 2
    assert "allreduce_latency_us" in seen["not_identified"]  # tp 1
    assert {"eta_mem", "step_overhead_ms", "prefill_overhead_ms"} <= set(seen["identified"])


def test_sglang_profile_is_fitted_on_sglang_rows_and_says_so(catalog):
    """Since the aic set (issue #10) SGLang has its own rows and its own fit."""
    sglang = catalog.engine("sglang")
    assert "aic_silicon_public.csv" in sglang.source
    assert "engines sglang " in sglang.source and "aic-sglang" in sglang.source
    # the memory budget is SGLang's own (mem_fraction_static: weights + KV, of total)
    assert not sglang.default.activations_in_budget
    assert catalog.engine("vllm").default.activations_in_budget
