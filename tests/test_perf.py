"""The performance model pinned to hand-computed values and to physical invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.perf import queueing as q
from planner.perf import roofline as rf
from planner.perf.candidates import GridSpec, Price, build_grid
from planner.perf.evaluate import evaluate
from planner.schema.common import Provenance
from planner.schema.model import Model

PROV = Provenance(source="hand-built test model", as_of="2026-11-30")


def seventy_billion_fp16_model() -> Model:
    """Exactly 70e9 parameters, tied embedding, no norms: every parameter is read per token.

    100 layers x (4 d^2 + 3 d f) with d=1000, f=200,000 = 60.4e9; embedding 9,599,999 x 1000
    plus the final norm 1000 = 9.6e9; total 70.0e9.
    """
    return Model(
        id="synthetic-70b",
        name="synthetic",
        family="test",
        hidden_size=1000,
        intermediate_size=200_000,
        num_hidden_layers=100,
        num_attention_heads=8,
        num_key_value_heads=8,
        head_dim=125,
        vocab_size=9_599_999,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        norms_per_layer=0,
        stated_total_params_b=70.0,
        provenance=PROV,
    )


def run(
    model,
    gpus,
    quants,
    *,
    tp=1,
    batch=1,
    shape=(1, 1),
    ideal=False,
    kv=(),
    catalog=None,
    utilisation=0.8,
    engine="vllm",
):
    spec = GridSpec(
        gpus=gpus,
        quants=quants,
        tps=[tp],
        batches=[batch],
        shapes=[shape],
        kv_dtypes=list(kv),
        prices={g.id: Price(2.0, "test") for g in gpus},
    )
    grid, rejected = build_grid(model, spec, catalog.engine(engine) if catalog else None, ideal)
    assert not grid.empty, rejected
    return evaluate(model, grid, utilisation)


def test_synthetic_model_has_exactly_seventy_billion_parameters():
    assert seventy_billion_fp16_model().params_total == 70_000_000_000


@pytest.mark.parametrize(
    ("gpu_id", "bandwidth_tb_s", "expected_ms"),
    [
        # 140 GB / 2.0 TB/s = 70 ms (the seed's A100 figure uses 2.0 TB/s)
        ("a100-80gb@2.0", 2.0, 70.0),
        # 140 GB / 2.039 TB/s = 68.66 ms (the catalog's A100 80GB SXM)
        ("a100-80gb", 2.039, 140 / 2.039),
        # 140 GB / 3.35 TB/s = 41.79 ms
        ("h100-sxm", 3.35, 140 / 3.35),
        # 140 GB / 4.8 TB/s = 29.17 ms
        ("h200", 4.8, 140 / 4.8),
        # 140 GB / 8.0 TB/s = 17.5 ms
        ("b200", 8.0, 17.5),
    ],
)
def test_ideal_floor_reads_140_gb_per_token(catalog, gpu_id, bandwidth_tb_s, expected_ms):
    gpu = catalog.gpu(gpu_id.split("@")[0])
    gpu = gpu.model_copy(update={"hbm_bandwidth_gb_per_s": bandwidth_tb_s * 1000})
    row = run(seventy_billion_fp16_model(), [gpu], [catalog.quant("fp16")], ideal=True).iloc[0]
    assert row["bytes_weights_per_step_gb"] == pytest.approx(140.0, rel=1e-12)
    assert row["t_weights_ms"] == pytest.approx(expected_ms, rel=1e-12)
    # batch 1, 1.5 tokens of context: the KV read adds microseconds, nothing else is added
    assert row["tpot_step_ms"] == pytest.approx(expected_ms, rel=1e-4)
    assert row["t_comm_ms"] == 0 and row["t_overhead_ms"] == 0


def test_int4_reads_close_to_a_quarter_of_fp16(catalog):
    """Llama-3.1-70B: blocks at 0.5195 B/param, 16-bit LM head: (69.50e9*0.5195 +
    1.05e9*2) / (70.55e9*2) = 0.271."""
    model, gpu = catalog.model("llama-3.1-70b"), catalog.gpu("h200")
    fp16 = run(model, [gpu], [catalog.quant("fp16")], tp=8, ideal=True).iloc[0]
    int4 = run(model, [gpu], [catalog.quant("int4-awq")], tp=8, ideal=True).iloc[0]
    ratio = int4["bytes_weights_per_step_gb"] / fp16["bytes_weights_per_step_gb"]
    head = 128256 * 8192
    expected = ((70553706496 - 2 * head) * 0.5195 + head * 2) / ((70553706496 - head) * 2)
    assert ratio == pytest.approx(expected, rel=1e-9)
    assert 0.25 <= ratio <= 0.28


def test_kv_bytes_per_token_gqa_llama_2_70b(catalog):
    """GQA 8 KV heads of 64: 2 * 80 layers * 8 * 128 * 2 bytes = 327,680 B/token."""
    m = catalog.model("llama-2-70b")
    assert m.kv_elements_per_token_per_layer * m.num_hidden_layers * 2 == 327_680


def test_kv_bytes_per_token_mla_deepseek_v3(catalog):
    """MLA: 61 layers * (512 latent + 64 rope) * 2 bytes = 70,272 B/token."""
    m = catalog.model("deepseek-v3")
    assert m.kv_elements_per_token_per_layer * m.num_hidden_layers * 2 == 70_272
    assert m.kv_heads_splittable == 1  # the latent is replicated across tensor-parallel ranks


def test_kv_sliding_window_caps_local_layers():
    """Gemma-3 style: 10 global layers keep 4096 tokens, 52 local ones at most 1024."""
    assert rf.kv_positions(4096, 10, 52, 1024) == 10 * 4096 + 52 * 1024
    assert rf.kv_positions(500, 10, 52, 1024) == 62 * 500


def test_moe_touched_experts():
    """E=8, k=2: one token touches 2; two tokens 8*(1-0.75^2) = 3.5; many tokens all 8."""
    got = rf.experts_touched(8, 2, np.array([1, 2, 1000]))
    assert got == pytest.approx([2.0, 3.5, 8.0])


def test_moe_small_batch_reads_fewer_bytes_than_large(catalog):
    model, gpu = catalog.model("mixtral-8x7b"), catalog.gpu("h100-sxm")
    small = run(model, [gpu], [catalog.quant("fp8")], batch=1, ideal=True).iloc[0]
    large = run(model, [gpu], [catalog.quant("fp8")], batch=64, ideal=True).iloc[0]
    expert = model.params_per_expert * model.n_moe_layers  # bytes at fp8: 1 per param
    assert large.bytes_weights_per_step_gb - small.bytes_weights_per_step_gb == pytest.approx(
        (8 * (1 - 0.75**64) - 2) * expert / 1e9, rel=1e-9
    )


def test_memory_fit_llama_70b_bf16(catalog):
    """141.1 GB of bf16 weights on H100 SXM, which holds 81,559 MiB = 85.52e9 B (nvidia-smi),
    vLLM budget 0.9 of it = 76.97 GB: no fit on one GPU, a small KV pool on two (76.97 -
    70.55 - workspace), fits on 4. The usable memory is exactly 0.9 x 81,559 MiB."""
    model, gpu, bf16 = (
        catalog.model("llama-3.1-70b"),
        catalog.gpu("h100-sxm"),
        [catalog.quant("bf16")],
    )
    assert gpu.memory_bytes == 81559 * 2**20
    weights = (70553706496) * 2 / 1e9
    for tp, fits in ((1, False), (2, True), (4, True)):
        row = run(model, [gpu], bf16, tp=tp, catalog=catalog).iloc[0]
        assert row.weights_per_gpu_gb == pytest.approx(weights / tp, rel=1e-12)
        assert bool(row.fits) is fits
    row = run(model, [gpu], bf16, tp=4, catalog=catalog).iloc[0]
    assert row.memory_usable_gb == pytest.approx(0.9 * 81559 * 2**20 / 1e9)
    # weights beyond the budget leave no pool: usable is still vLLM's 0.9 of the card, not
    # the weights plus a clipped pool (tp 1 read 145 GB usable on an 85.5 GB card)
    row = run(model, [gpu], bf16, tp=1, catalog=catalog).iloc[0]
    assert row.memory_usable_gb == pytest.approx(0.9 * 81559 * 2**20 / 1e9)


def test_usable_memory_never_exceeds_the_card(catalog):
    """Llama-3.1-405B fp8 (410 GB of weights) on one 24 GB RTX 4090, for every engine's way
    of sizing its pool: the usable memory is at most the card, so the out-of-memory message
    compares what is needed with what the card offers."""
    model, gpu = catalog.model("llama-3.1-405b"), catalog.gpu("rtx-4090")
    for engine in ("vllm", "sglang", "trtllm"):
        row = run(model, [gpu], [catalog.quant("fp8")], catalog=catalog, engine=engine).iloc[0]
        assert not row.fits
        assert 0.0 < row.memory_usable_gb <= gpu.memory_bytes / 1e9  # 24,564 MiB = 25.76 GB
        assert row.memory_per_gpu_gb > 400.0


def test_kv_pool_per_engine_budget(catalog):
    """Llama-3.3-70B fp8 on 2x H100 SXM, 5000 in / 500 out (the NIM sweep of issue #10).
    Per GPU: weights W = (70.55e9 - 2 x 1.05e9 embeddings) x 1 B + 2.10e9 x 2 B, / 2;
    FP8 KV per token 2 x 80 layers x 8 heads x 128 x 1 B / 2 GPUs = 81,920 B; TensorRT-LLM's
    GUARANTEED_NO_EVICT admits a sequence with KV for all I + O = 5500 tokens = 450.6 MB
    (a paged cache alone would hold I + O/2 = 5250 on average). TensorRT-LLM sizes the pool
    as 0.9 x (M - peak) (KvCacheCreator._cal_max_memory), the peak taken after a profiling
    pass of max_num_tokens = 8192 tokens whatever the prompts: workspace A = 8192 x (4 x 8192
    + 2 x 28672 / 2) x 2 B = 1,006,632,960 B (not the 5000-token prompt's 614 MB), and the
    memory outside torch R = 2,500 MiB (the allowance of TensorRT-LLM's own test, PR 6487).
    floor(0.9 (85.52e9 - 36.33e9 - 1.007e9 - 2.621e9) / (450.56e6 + 256,512 B logits)) = 90
    (96 without R and with the prompt's workspace). NIM (TensorRT-LLM) held ~85 sequences;
    the old model (decimal GB, 2 GB reserve, full I+O, 0.9 of total) said 36."""
    from planner.calibration.recipes import TRTLLM_RUNTIME_RESERVE_GB

    model, gpu, fp8 = catalog.model("llama-3.3-70b"), catalog.gpu("h100-sxm"), catalog.quant("fp8")
    engine = catalog.engine("trtllm")
    reserve = {"runtime_reserve_gb": TRTLLM_RUNTIME_RESERVE_GB}
    engine = engine.model_copy(
        update={
            "default": engine.default.model_copy(update=reserve),
            "families": {k: v.model_copy(update=reserve) for k, v in engine.families.items()},
        }
    )
    spec = GridSpec(gpus=[gpu], quants=[fp8], tps=[2], batches=[1], shapes=[(5000, 500)])
    grid, _ = build_grid(model, spec, engine)
    row = evaluate(model, grid).iloc[0]
    assert row.kv_dtype == "fp8"  # the engine's default for an FP8 ModelOpt checkpoint
    assert TRTLLM_RUNTIME_RESERVE_GB * 1e9 == 2500 * 2**20
    w = row.weights_per_gpu_gb * 1e9
    assert w == pytest.approx(((70553706496 - 2 * 1050673152) + 2 * 2 * 1050673152) / 2, rel=1e-6)
    workspace = 8192 * (4 * 8192 + 2 * 28672 / 2) * 2
    assert workspace == 1_006_632_960
    per_seq = 5500 * 2 * 80 * 8 * 128 / 2 + model.vocab_size * 4.0 / 2
    pool = 0.9 * (81559 * 2**20 - w - workspace - 2500 * 2**20)
    assert row.max_batch == np.floor(pool / per_seq) == 90


def test_shipped_trtllm_profile_holds_90_at_nim_concurrency_100(catalog):
    """The refitted trtllm profile carries the 2,500 MiB reserve (written to 2 decimals), and
    `estimate --concurrency 100` on the NIM deployment keeps 90 in flight (the pool above)."""
    from planner.planning.estimate import EstimateRequest, closed_loop

    engine = catalog.engine("trtllm")
    for eff in (engine.default, *engine.families.values()):
        assert eff.runtime_reserve_gb == pytest.approx(2500 * 2**20 / 1e9, abs=0.005)
    req = EstimateRequest(
        model="llama-3.3-70b", gpu="h100-sxm", tp=2, quant="fp8", batch=None, input_len=5000,
        output_len=500, engine="trtllm",
    )  # fmt: skip
    row = closed_loop(req, catalog, 100)
    assert int(row["batch"]) == 90


def test_tp_splits_kv_by_min_of_tp_and_kv_heads(catalog):
    """Qwen3-30B-A3B has 4 KV heads: tp 8 splits the cache 4 ways, not 8."""
    model, gpu = catalog.model("qwen3-30b-a3b"), catalog.gpu("h100-sxm")
    bf16 = [catalog.quant("bf16")]
    kv = {
        tp: run(model, [gpu], bf16, tp=tp, batch=8, shape=(1000, 200), ideal=True)
        .iloc[0]
        .kv_cache_per_gpu_gb
        for tp in (1, 4, 8)
    }
    assert kv[4] == pytest.approx(kv[1] / 4) and kv[8] == pytest.approx(kv[1] / 4)


def test_allreduce_hand_computed():
    """tp 2, 80 layers, batch 32, d 8192, 450 GB/s, alpha 10 us:
    2*80*(10e-6 + 2*(1/2)*32*8192*2/450e9) = 1.69320 ms."""
    t = rf.latency_allreduce(2, 80, 32, 8192, 450e9, 10e-6)
    assert t == pytest.approx(2 * 80 * (10e-6 + 32 * 8192 * 2 / 450e9))
    assert rf.latency_allreduce(1, 80, 32, 8192, 450e9, 10e-6) == 0


def test_serving_rate_and_tpot_with_prefill():
    """B=16, O=200, step 20 ms, prefill 100 ms: R = 16/(200*0.02 + 16*0.1) = 2.857 req/s;
    TPOT = 20 ms + 15 other prefills * 100 ms / 199 decode steps = 27.538 ms (a request's own
    prefill is in its TTFT, as benchmarks count TPOT = (latency - TTFT) / (O - 1))."""
    assert rf.serving_rate(16, 200, 0.02, 0.1) == pytest.approx(16 / 5.6)
    assert rf.tpot_with_prefill(0.02, 16, 200, 0.1) == pytest.approx(0.02 + 1.5 / 199)


def test_batch1_tpot_is_the_decode_step(catalog):
    """Issue #10: Llama-3.1-8B on H100, batch 1, 8000 in / 64 out: TPOT was 11.2 ms against a
    7.5 ms decode step (its own prefill counted); now TPOT equals the decode step exactly."""
    row = run(
        catalog.model("llama-3.1-8b"),
        [catalog.gpu("h100-sxm")],
        [catalog.quant("bf16")],
        shape=(8000, 64),
        catalog=catalog,
    ).iloc[0]
    assert row.tpot_ms == pytest.approx(row.tpot_step_ms, rel=1e-12)
    assert row.prefill_ms > 100  # the prefill is real, and it is in TTFT, not TPOT
    assert row.ttft_unloaded_ms > row.prefill_ms


def test_mdc_wait_one_server_matches_md1():
    """c=1: M/D/1 mean wait = rho*T/(2(1-rho)); at rho 0.5, T=1 s: 0.5 s."""
    assert q.wait_for_slot(1, 0.5, 1.0) == pytest.approx(0.5)
    assert q.wait_for_prefill(0.5, 1.0) == pytest.approx(0.5)


def test_percentile_waits_exceed_the_mean():
    mean = q.wait_for_slot(8, 0.9, 2.0, "mean")
    p99 = q.wait_for_slot(8, 0.9, 2.0, "p99")
    assert p99 > mean > 0


@given(st.floats(0.3, 10.0), st.floats(1.01, 3.0), st.sampled_from([1, 4, 32, 256]))
def test_more_bandwidth_never_raises_tpot(catalog, bw_tb_s, factor, batch):
    model, base = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    slow = base.model_copy(update={"id": "slow", "hbm_bandwidth_gb_per_s": bw_tb_s * 1000})
    fast = base.model_copy(update={"id": "fast", "hbm_bandwidth_gb_per_s": bw_tb_s * 1000 * factor})
    rows = run(
        model, [slow, fast], [catalog.quant("bf16")], batch=batch, shape=(512, 128), catalog=catalog
    )
    assert rows.iloc[1].tpot_ms <= rows.iloc[0].tpot_ms
    assert rows.iloc[1].tpot_step_ms <= rows.iloc[0].tpot_step_ms


@given(
    st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "qwen3-30b-a3b", "gemma-3-27b"]),
    st.sampled_from(["h100-sxm", "l40s", "mi300x"]),
    st.integers(64, 8192),
    st.integers(16, 2048),
)
def test_larger_batch_never_lowers_tpot_or_throughput(catalog, model_id, gpu_id, i_len, o_len):
    model, gpu = catalog.model(model_id), catalog.gpu(gpu_id)
    spec = GridSpec(
        gpus=[gpu],
        quants=[catalog.quant("fp8")],
        tps=[1],
        batches=list(range(1, 257)),
        shapes=[(i_len, o_len)],
        prices={gpu.id: Price(1.0, "t")},
    )
    grid, _ = build_grid(model, spec, catalog.engine("vllm"))
    rows = evaluate(model, grid, 0.8)
    fits = rows[rows.fits]
    assert (np.diff(rows.tpot_step_ms) >= -1e-12).all()
    assert (np.diff(rows.tpot_ms) >= -1e-12).all()
    assert (np.diff(fits.throughput_tok_s) >= -1e-9).all()


def test_bytes_order_int4_fp8_bf16(catalog):
    model, gpu = catalog.model("qwen2.5-72b"), catalog.gpu("h200")
    quants = [catalog.quant(q) for q in ("int4-awq", "int4-gptq", "fp4", "fp8", "bf16")]
    rows = run(model, [gpu], quants, tp=4, ideal=True)
    b = dict(zip(rows.quant, rows.bytes_weights_per_step_gb, strict=True))
    assert b["int4-awq"] <= b["fp8"] <= b["bf16"]
    assert b["fp4"] <= b["fp8"]


def test_fp8_on_a100_runs_weight_only(catalog):
    """A100 has no fp8 tensor cores: fp8 weights compute in bf16 (W8A16), bytes still halve."""
    model = catalog.model("llama-3.1-8b")
    rows = run(model, [catalog.gpu("a100-80gb")], [catalog.quant("fp8")], ideal=True)
    assert rows.iloc[0].compute_dtype == "bf16"
    assert rows.iloc[0].weight_bytes_per_param == 1.0


def test_pcie_cards_split_tp_within_their_server_over_pcie(catalog):
    """An L40S runs tensor parallel over PCIe within an 8-GPU server (AWS g6e.48xlarge), as
    vLLM does, where it had been refused tp > 1: the all-reduce runs at PCIe's 32 GB/s with
    its hop latency, so tp 4's collectives cost more than on NVLink H100s at the same model."""
    from planner.perf import collectives as co

    l40s = catalog.gpu("l40s")
    assert l40s.scaleup_domain_gpus == 8 and co.link_kind(l40s) == "pcie"
    assert co.link_kind(catalog.gpu("h100-pcie")) == "pcie"
    model, fp8 = catalog.model("llama-3.1-70b"), [catalog.quant("fp8")]
    rows = {
        g: run(model, [catalog.gpu(g)], fp8, tp=4, batch=8).iloc[0] for g in ("l40s", "h100-sxm")
    }
    assert rows["l40s"].t_comm_ms > 2 * rows["h100-sxm"].t_comm_ms
    with pytest.raises(Exception, match="tp 16 exceeds the scale-up domain of l40s"):
        from planner.perf.candidates import check_tp

        check_tp(model, l40s, 16)


def test_invalid_combinations_are_rejected_with_reasons(catalog):
    model, bf16 = catalog.model("llama-3.1-70b"), [catalog.quant("bf16")]
    cases = [
        ("rtx-4090", 2, "tp 2 exceeds the scale-up domain of rtx-4090"),
        ("h100-sxm", 3, "tp 3 does not divide the 64 attention heads"),
        ("t4", 1, "bf16 needs bf16 math, which t4 lacks"),
    ]
    for gpu_id, tp, reason in cases:
        spec = GridSpec(gpus=[catalog.gpu(gpu_id)], quants=bf16, tps=[tp])
        grid, rejected = build_grid(model, spec, None)
        assert grid.empty
        assert reason in rejected.reason.iloc[0]
