"""Issue #10 (fidelity): interconnect-aware collectives, the per-sequence decode cost, the
per-request TTFT latency and the closed-loop benchmark timing, each pinned by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.calibration import prediction as pr
from planner.perf import collectives as co
from planner.perf import wave
from planner.perf.candidates import GridSpec, build_grid
from planner.perf.evaluate import evaluate


def test_mesh_fabric_gets_one_link_per_peer_at_tp2(catalog):
    """MI300X: 448 GB/s over 7 Infinity Fabric links, so TP2 uses one link, 64 GB/s; TP4
    three links, 192 GB/s; TP8 all seven, 448. H100 SXM (NVSwitch) gets 450 at any TP."""
    mi = catalog.gpu("mi300x")
    assert co.link_bandwidth_bytes_per_s(mi, 2) == pytest.approx(64e9)
    assert co.link_bandwidth_bytes_per_s(mi, 4) == pytest.approx(192e9)
    assert co.link_bandwidth_bytes_per_s(mi, 8) == pytest.approx(448e9)
    h100 = catalog.gpu("h100-sxm")
    assert co.link_bandwidth_bytes_per_s(h100, 2) == co.link_bandwidth_bytes_per_s(h100, 8)
    assert co.link_bandwidth_bytes_per_s(h100, 2) == pytest.approx(450e9)


def test_link_kind_from_the_catalog(catalog):
    kinds = {g: co.link_kind(catalog.gpu(g)) for g in ("h100-sxm", "l40s", "mi300x", "gaudi2")}
    assert kinds == {"h100-sxm": "nvlink", "l40s": "pcie", "mi300x": "xgmi", "gaudi2": "roce"}


def test_allreduce_latency_grows_with_ring_hops():
    """NCCL's model (tuning.cc, ring LL): base + 2 (t - 1) hops of 0.47 us on NVLink. With an
    engine base of 3.6 us (NCCL's own ring-LL base): t=2 4.54 us (the ~6 us measured on two
    H100s is of this order), t=8 3.6 + 14 * 0.47 = 10.18 us; 0 at t=1's hops and in ideal mode."""
    hop = co.HOP_LATENCY_US["nvlink"]
    t = co.allreduce_latency_s([2, 8, 1], [3.6, 3.6, 3.6], hop) * 1e6
    assert t == pytest.approx([3.6 + 2 * hop, 3.6 + 14 * hop, 3.6])
    assert t[0] == pytest.approx(4.54)
    assert co.allreduce_latency_s(8, 0.0, hop) == 0.0  # ideal: no collective latency


def _row(catalog, **eff):
    engine = catalog.engine("vllm")
    prof = engine.model_copy(
        update={"default": engine.default.model_copy(update=eff), "families": {}}
    )
    spec = GridSpec(
        gpus=[catalog.gpu("h100-sxm")],
        quants=[catalog.quant("bf16")],
        tps=[1],
        batches=[1, 64],
        shapes=[(1000, 200)],
    )
    grid, _ = build_grid(catalog.model("llama-3.1-8b"), spec, prof, False)
    return evaluate(catalog.model("llama-3.1-8b"), grid).set_index("batch")


def test_per_sequence_step_cost_adds_b_times_it(catalog):
    """step_per_seq_us = 20: the decode step at B=64 grows by 64 x 20 us = 1.28 ms, at B=1 by
    0.02 ms; nothing else in the step moves."""
    base = _row(catalog, step_per_seq_us=0.0)
    more = _row(catalog, step_per_seq_us=20.0)
    diff = more["tpot_step_ms"] - base["tpot_step_ms"]
    assert diff[64] == pytest.approx(1.28)
    assert diff[1] == pytest.approx(0.02)
    assert (more["t_overhead_ms"] - base["t_overhead_ms"])[64] == pytest.approx(1.28)


def test_per_sequence_cost_per_layer_scales_with_the_model_depth(catalog):
    """step_seq_layer_us = 0.5 on Llama-3.1-8B (32 layers): the decode step at B=64 grows by
    64 x 32 x 0.5 us = 1.024 ms, at B=1 by 0.016 ms, in the step's overhead term alone; it
    adds to step_per_seq_us (10 us: B=64 then 1.024 + 0.64 ms)."""
    base = _row(catalog, step_per_seq_us=0.0, step_seq_layer_us=0.0)
    layered = _row(catalog, step_per_seq_us=0.0, step_seq_layer_us=0.5)
    both = _row(catalog, step_per_seq_us=10.0, step_seq_layer_us=0.5)
    diff = layered["tpot_step_ms"] - base["tpot_step_ms"]
    assert diff[64] == pytest.approx(1.024)
    assert diff[1] == pytest.approx(0.016)
    assert (layered["t_overhead_ms"] - base["t_overhead_ms"])[64] == pytest.approx(1.024)
    assert (both["tpot_step_ms"] - base["tpot_step_ms"])[64] == pytest.approx(1.664)


def test_trtllm_fits_its_sequence_cost_per_layer_and_holds_the_per_step_one(catalog):
    """TensorRT-LLM's recipe fits step_seq_layer_us (default and family overrides) in place of
    step_per_seq_us, which its shipped profile holds at 0; vLLM and SGLang keep theirs per step."""
    from planner.calibration import recipes

    trt = recipes.RECIPES["trtllm"]
    assert "step_seq_layer_us" in trt.params and "step_per_seq_us" not in trt.params
    assert "step_seq_layer_us" in (trt.family_params or ())
    shipped = catalog.engine("trtllm")
    for eff in (shipped.default, *shipped.families.values()):
        assert eff.step_per_seq_us == 0.0
        assert eff.step_seq_layer_us > 0.0
    for other in ("vllm", "sglang"):
        assert "step_seq_layer_us" not in recipes.RECIPES[other].params
        assert catalog.engine(other).default.step_seq_layer_us == 0.0


def test_request_overhead_is_in_ttft_not_tpot(catalog):
    """request_overhead_ms = 70: TTFT on an idle replica + 70 ms exactly; TPOT unchanged."""
    base = _row(catalog, request_overhead_ms=0.0)
    more = _row(catalog, request_overhead_ms=70.0)
    assert (more["ttft_unloaded_ms"] - base["ttft_unloaded_ms"]).to_numpy() == pytest.approx(70)
    assert (more["tpot_ms"] - base["tpot_ms"]).abs().max() == 0


def test_closed_loop_benchmark_mixes_wave_and_steady(monkeypatch):
    """With the wave and steady timings stubbed: f = 0.1, wave TTFT 1000 ms, steady 100 ms,
    overhead 50 ms (in the steady TTFT already, added to the wave's): TTFT = 0.1 (1000 + 50)
    + 0.9 x 100 = 195 ms; TPOT's share is the benchmark's true first rounds, 1 in 50 for an
    engine that mixes (s37): TPOT = 0.02 x 30 + 0.98 x 20 = 20.2 ms; throughput = C O /
    (TTFT + (O - 1) TPOT) = 16 x 101 / (0.195 + 100 x 0.0202) s = 729.6 tok/s."""
    grid = pd.DataFrame(
        {
            "batch": [16.0],
            "concurrency": [16.0],
            "output_len": [101.0],
            "eff_benchmark_wave_share": [0.1],
            "eff_request_overhead_ms": [50.0],
        }
    )
    core = {
        "requests_per_s": np.array([1e9]),
        "tpot_step_ms": np.array([20.0]),
        "t_decode_rows_ms": np.array([5.0]),
    }
    monkeypatch.setattr(
        pr, "closed_loop_ms", lambda g, c: (np.array([100.0]), np.array([20.0]), None)
    )
    monkeypatch.setattr(  # the first round's wave (perf/wave.py, shared with estimate)
        wave, "serving_wave_ms", lambda m, g, s, c, d: (np.array([1000.0]), np.array([30.0]))
    )
    ttft, tpot, thr = pr.closed_loop_benchmark_ms(None, grid, core, np.array([True]))
    assert ttft[0] == pytest.approx(195.0)
    assert tpot[0] == pytest.approx(20.2)
    assert thr[0] == pytest.approx(16 * 101 / (0.195 + 100 * 0.0202))


def test_prefill_attention_runs_at_the_16bit_peak(catalog):
    """Llama-3.1-8B fp8 on H100 SXM, one 8000-token prompt: GEMM FLOPs at the fp8 peak and
    attention FLOPs (4 h d_h x pairs) at the bf16 peak, both at eta_pf, summed."""
    from planner.perf import evaluate as ev

    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    spec = GridSpec(gpus=[gpu], quants=[catalog.quant("fp8")], tps=[1], batches=[1],
                    shapes=[(8000, 10)])  # fmt: skip
    grid, _ = build_grid(model, spec, catalog.engine("vllm"), False)
    i_len = np.array([8000.0])
    attn = ev.attention_flops_prefill(model, i_len)
    gemm = ev.flops_prefill_per_request(model, i_len) - attn
    eta = grid["eff_eta_compute_prefill"].iloc[0]
    expected = gemm / (gpu.dense_tflops["fp8"] * 1e12 * eta) + attn / (
        gpu.dense_tflops["bf16"] * 1e12 * eta
    )
    assert ev.prefill_compute_s(model, grid, i_len)[0] == pytest.approx(expected[0])
    # 32 layers x 32 heads x 128 x 4 x 8000^2 / 2 pairs = 1.0737e13 FLOPs of attention
    assert attn[0] == pytest.approx(4 * 32 * 128 * 32 * 8000**2 / 2)


def test_closed_loop_throughput_is_littles_law_over_the_clients(catalog):
    """Llama-3.1-8B on one H100, C = 4 (far below capacity): each client has one request in
    flight for TTFT + (O - 1) TPOT, so throughput = C O / that lifetime exactly; the
    per-request latency (vLLM's fitted 71 ms) is in the TTFT."""
    from planner.planning.estimate import EstimateRequest, estimate

    req = EstimateRequest(model="llama-3.1-8b", gpu="h100-sxm", tp=1, quant="bf16", batch=None,
                          input_len=1000, output_len=200, concurrency=4)  # fmt: skip
    row = estimate(req, catalog)
    life_s = (row["ttft_ms"] + 199 * row["tpot_ms"]) / 1e3
    assert row["throughput_tok_s"] == pytest.approx(4 * 200 / life_s)
    lat = catalog.engine("vllm").for_family("hopper").request_overhead_ms
    assert row["ttft_ms"] >= row["prefill_ms"] + lat
