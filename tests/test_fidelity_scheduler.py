"""Issue #10 (remaining): each engine's scheduler as its source sets it. The prefill chunk by
GPU memory, SGLang's prefill batches that do not mix into decode steps, and TensorRT-LLM's
admission that reserves KV for the whole output. Each is pinned by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.calibration import prediction as pr
from planner.calibration.recipes import RECIPES
from planner.perf import engine_memory as em
from planner.perf import roofline as rf
from planner.perf import wave
from planner.perf.candidates import GridSpec, build_grid, engine_mem_util
from planner.perf.evaluate import evaluate


@pytest.mark.parametrize(
    ("engine", "gpu", "tokens"),
    [
        # vLLM get_batch_defaults (API server): >= 70 GiB and not an A100: 8192, else 2048
        ("vllm", "h100-sxm", 8192),  # 81,559 MiB = 79.6 GiB
        ("vllm", "a100-80gb", 2048),  # 80 GiB, but an A100 (ampere)
        ("vllm", "l40s", 2048),  # 46,068 MiB = 45 GiB
        # SGLang chunked_prefill_size: < 35 GiB 2048, < 60 GiB 4096, < 160 GiB 8192, else 16384
        ("sglang", "l40s", 4096),  # 45 GiB
        ("sglang", "h100-sxm", 8192),
        ("sglang", "b200", 16384),  # 183,359 MiB = 179 GiB
        ("sglang", "rtx-4090", 2048),
        # TensorRT-LLM max_num_tokens 8192 everywhere
        ("trtllm", "b200", 8192),
        ("trtllm", "l40s", 8192),
    ],
)
def test_prefill_chunk_is_the_engines_default_for_the_gpus_memory(catalog, engine, gpu, tokens):
    prof = RECIPES[engine].base_profile()
    g = catalog.gpu(gpu)
    assert prof.chunk_tokens(g.memory_bytes, g.family, 8192) == tokens
    assert prof.for_gpu(g.family, g.memory_bytes).prefill_chunk_tokens == tokens


@pytest.mark.parametrize(
    ("engine", "gpu", "seqs"),
    [
        # vLLM get_batch_defaults (API server): >= 70 GiB and not an A100: 1024, else 256
        ("vllm", "h100-sxm", 1024),  # 79.6 GiB
        ("vllm", "b200", 1024),
        ("vllm", "a100-80gb", 256),  # 80 GiB, but an A100 (ampere)
        ("vllm", "l40s", 256),  # 45 GiB
        ("sglang", "h100-sxm", 256),
        ("trtllm", "b200", 256),
    ],
)
def test_max_num_seqs_is_the_engines_default_for_the_gpus_memory(catalog, engine, gpu, seqs):
    """Issue #10: the shipped profile (what `estimate` reads) and the recipe agree."""
    g = catalog.gpu(gpu)
    assert catalog.engine(engine).max_num_seqs_on(g.memory_bytes, g.family) == seqs
    assert RECIPES[engine].base_profile().max_num_seqs_on(g.memory_bytes, g.family) == seqs


def test_estimate_holds_up_to_the_gpus_default_max_num_seqs(catalog):
    """Beyond 256 clients on an H100, vLLM keeps up to 1024 in flight (memory permitting);
    on an A100 256, and the rest wait for a slot."""
    from planner.planning.estimate import EstimateRequest, closed_loop

    def in_flight(gpu: str, quant: str) -> tuple[int, int]:
        req = EstimateRequest(
            model="llama-3.1-8b", gpu=gpu, tp=1, quant=quant, batch=None, input_len=1000,
            output_len=100,
        )  # fmt: skip
        row = closed_loop(req, catalog, 600)
        return int(row["max_num_seqs"]), int(row["batch"])

    seqs, held = in_flight("h100-sxm", "fp8")
    assert seqs == 1024 and 256 < held <= 600
    assert in_flight("a100-80gb", "bf16") == (256, 256)


def test_estimate_concurrency_adds_the_others_decode_rows_where_the_engine_mixes(catalog):
    """#10 (t10b): planner estimate --concurrency 32 on vLLM adds the other 31 sequences'
    decode work in the prompt's one pass (1000 tokens fit beside them): TTFT = the idle
    TTFT + the M/D/1 wait + 31/32 t_decode_rows; SGLang (no mixing) adds nothing."""
    from planner.perf import queueing as q
    from planner.planning.estimate import EstimateRequest, closed_loop

    for engine, mixes in (("vllm", True), ("sglang", False)):
        req = EstimateRequest(
            model="llama-3.1-8b", gpu="h100-sxm", tp=1, quant="fp8", batch=None,
            input_len=1000, output_len=100, engine=engine,
        )  # fmt: skip
        row = closed_loop(req, catalog, 32)
        assert int(row["batch"]) == 32
        rate = float(row["in_flight_capacity_requests_per_s"])  # R(32), not the rate served
        wait = float(q.wait_for_prefill(rate * 31 / 32, row["prefill_share_ms"] * 1e-3, "mean"))
        fused = 31 / 32 * float(row["t_decode_rows_ms"]) if mixes else 0.0
        want = float(row["ttft_unloaded_ms"]) + wait * 1e3 + fused
        assert float(row["ttft_ms"]) == pytest.approx(want, rel=1e-6)
        assert (float(row["t_decode_rows_ms"]) > 0) and (fused > 0) == mixes


def test_the_grid_carries_the_engines_chunk(catalog):
    """build_grid resolves each GPU's chunk: SGLang on B200 prefills 16384 tokens a pass."""
    model = catalog.model("llama-3.1-8b")
    spec = GridSpec(gpus=[catalog.gpu("b200"), catalog.gpu("h100-sxm")],
                    quants=[catalog.quant("bf16")], tps=[1], batches=[8],
                    shapes=[(1000, 100)])  # fmt: skip
    grid, _ = build_grid(model, spec, RECIPES["sglang"].base_profile(), False)
    chunks = dict(zip(grid["gpu"], grid["eff_prefill_chunk_tokens"], strict=True))
    assert chunks == {"b200": 16384, "h100-sxm": 8192}


def _kv_rows(catalog, reserve: bool) -> pd.DataFrame:
    engine = catalog.engine("trtllm")
    eff = engine.default.model_copy(update={"kv_reserve_output": reserve})
    prof = engine.model_copy(update={"default": eff, "families": {}})
    spec = GridSpec(gpus=[catalog.gpu("h100-sxm")], quants=[catalog.quant("fp8")], tps=[2],
                    batches=[64], shapes=[(5000, 500)])  # fmt: skip
    model = catalog.model("llama-3.3-70b")
    grid, _ = build_grid(model, spec, prof, False)
    return evaluate(model, grid)


def _lag_rows(catalog, lag: float) -> pd.DataFrame:
    engine = catalog.engine("trtllm")
    eff = engine.default.model_copy(update={"scheduler_lag_steps": lag})
    prof = engine.model_copy(update={"default": eff, "families": {}})
    spec = GridSpec(gpus=[catalog.gpu("h100-sxm")], quants=[catalog.quant("fp8")], tps=[2],
                    batches=[1, 64], shapes=[(5000, 500)])  # fmt: skip
    model = catalog.model("llama-3.3-70b")
    grid, _ = build_grid(model, spec, prof, False)
    return evaluate(model, grid)


def test_an_overlap_scheduler_adds_the_launched_iteration_to_ttft(catalog):
    """#10 (s39): with one step launched ahead, an arrival waits one whole iteration more:
    the decode step plus its share of the others' prefills, which is the TPOT (no drafts).
    At batch 1 there are no others: one decode step. Nothing else moves."""
    none, one = _lag_rows(catalog, 0.0), _lag_rows(catalog, 1.0)
    extra = one["ttft_unloaded_ms"] - none["ttft_unloaded_ms"]
    assert np.allclose(extra, one["tpot_ms"], rtol=1e-12)
    assert np.allclose(one["ttft_scheduler_lag_ms"], one["tpot_ms"], rtol=1e-12)
    assert extra.iloc[0] == pytest.approx(one["tpot_step_ms"].iloc[0], rel=1e-12)
    assert (none["ttft_scheduler_lag_ms"] == 0.0).all()
    assert np.allclose(one["tpot_ms"], none["tpot_ms"], rtol=0)
    assert (one["ttft_ms"] - none["ttft_ms"] >= extra - 1e-9).all()  # queues see it too


def test_only_trtllm_runs_an_overlap_scheduler(catalog):
    for rid, engine in catalog.engines.items():
        lags = {e.scheduler_lag_steps for e in (engine.default, *engine.families.values())}
        assert lags == ({1.0} if rid == "trtllm" else {0.0}), rid


def test_reserving_the_whole_output_holds_i_plus_o_tokens(catalog):
    """TensorRT-LLM's GUARANTEED_NO_EVICT admits a 5000 + 500 sequence only with KV for 5500
    tokens, where a paged cache holds 5250 on average: the KV of a batch grows by 5500 /
    5250 = 1.047619 and the batch that fits shrinks by about as much (whole sequences)."""
    paged, reserved = _kv_rows(catalog, False), _kv_rows(catalog, True)
    ratio = reserved["kv_cache_per_gpu_gb"].iloc[0] / paged["kv_cache_per_gpu_gb"].iloc[0]
    assert ratio == pytest.approx(5500 / 5250)
    b_paged, b_res = paged["max_batch"].iloc[0], reserved["max_batch"].iloc[0]
    assert b_res < b_paged
    assert b_res == pytest.approx(b_paged * 5250 / 5500, abs=1.0)


def test_shipped_trtllm_reserves_and_sglang_does_not_mix(catalog):
    assert catalog.engine("trtllm").default.kv_reserve_output
    assert not catalog.engine("vllm").default.kv_reserve_output
    assert not catalog.engine("sglang").mixes_prefill
    assert catalog.engine("vllm").mixes_prefill and catalog.engine("trtllm").mixes_prefill
    assert 0.0 < catalog.engine("sglang").default.benchmark_wave_share < 1.0  # s37: fitted


def test_a_closed_loop_that_does_not_mix_waves_every_round():
    """s37: rows whose engine runs prefill batches on their own (SGLang without mixed chunks)
    see a wave every round (share 1), rows that mix the fitted first-round share, and a run
    that publishes its own share keeps it."""
    grid = pd.DataFrame(
        {
            "_mixes_prefill": [False, True, True],
            "eff_benchmark_wave_share": [0.29, 0.29, 0.29],
            "wave_share": [np.nan, np.nan, 0.1],
        }
    )
    assert pr._wave_share(grid).tolist() == pytest.approx([1.0, 0.29, 0.1])


def test_tpot_sees_a_first_round_only_in_the_benchmarks_true_first_rounds():
    """s37: the fitted share is TTFT's (arrivals that cluster round after round); a TPOT is a
    first round's (the whole round prefilled while it decodes) in one round of the aic
    benchmark's 50 (bench_run.sh.j2: C x 50 requests after a C x 2 warm-up), in every round
    of an engine that does not mix, and at the run's own share where it says."""
    grid = pd.DataFrame(
        {
            "_mixes_prefill": [False, True, True],
            "eff_benchmark_wave_share": [0.29, 0.29, 0.29],
            "wave_share": [np.nan, np.nan, 0.1],
        }
    )
    assert pr._tpot_wave_share(grid).tolist() == pytest.approx([1.0, 1 / 50, 0.1])
    assert pr._tpot_wave_share(grid.drop(columns="wave_share")).tolist() == pytest.approx(
        [1.0, 1 / 50, 1 / 50]
    )


def _wave(monkeypatch, mixes: bool, rows_ms: float | None = None) -> tuple[float, float]:
    """A wave of B = 2 prompts of 8192 tokens, chunk 8192, O = 11, stubbed to a 100 ms pass
    and a 10 ms decode step (`rows_ms`: the two sequences' decode work in a fused pass)."""
    grid = pd.DataFrame(
        {
            "batch": [2.0],
            "input_len": [8192.0],
            "output_len": [11.0],
            "eff_prefill_chunk_tokens": [8192.0],
            "_mixes_prefill": [mixes],
        }
    )
    monkeypatch.setattr(wave, "batch_prefill_ms", lambda m, g, b, i, c: np.array([200.0]))
    rows = None if rows_ms is None else np.array([rows_ms])
    ttft, tpot = wave.serving_wave_ms(None, grid, np.array([10.0]), None, rows)
    return float(ttft[0]), float(tpot[0])


def test_a_wave_without_mixing_waits_out_the_other_prompts(monkeypatch):
    """n = 2 passes of p = 100 ms; prompt 1 is done at pass 1, prompt 2 at pass 2: TTFT =
    1.5 p = 150 ms either way. Mixed (vLLM): prompt 1 decodes a token in pass 2, TPOT_1 =
    (100 + 9 x 10) / 10 = 19 ms, TPOT_2 = 10 ms, mean 14.5. Not mixed (SGLang): prompt 1
    waits pass 2 out, then decodes 10 tokens: TPOT_1 = (100 + 10 x 10) / 10 = 20 ms, mean 15."""
    ttft_mixed, tpot_mixed = _wave(monkeypatch, True)
    ttft_apart, tpot_apart = _wave(monkeypatch, False)
    assert ttft_mixed == ttft_apart == pytest.approx(150.0)
    assert tpot_mixed == pytest.approx(14.5)
    assert tpot_apart == pytest.approx(15.0)


def test_a_fused_wave_pass_carries_the_decode_rows_of_the_prompts_before_it(monkeypatch):
    """#10 (t10b): with D = 8 ms of decode work for both sequences, pass 1 carries none
    (p_1 = 100), pass 2 the decode of prompt 1 (p_2 = 100 + 8 x 1/2 = 104). TTFT = (100 +
    204) / 2 = 152 ms; prompt 1's token in pass 2 takes 104 ms: TPOT = ((104 + 90) / 10 +
    10) / 2 = 14.7 ms. Without mixing (SGLang) the decode rows change nothing."""
    ttft, tpot = _wave(monkeypatch, True, 8.0)
    assert ttft == pytest.approx(152.0)
    assert tpot == pytest.approx(14.7)
    assert _wave(monkeypatch, False, 8.0) == _wave(monkeypatch, False)
    assert _wave(monkeypatch, True, 0.0) == pytest.approx(_wave(monkeypatch, True))


def test_decode_rows_in_a_busy_prompts_passes_hand_computed():
    """#10 (t10b): B = 64 in flight, chunk 8192, D = 16 ms for all 64 decode tokens. A
    1,024-token prompt fits one pass beside the other 63 (budget 8129): 16 x 63/64 =
    15.75 ms. An 8,192-token prompt needs two passes (8129 + 63): 31.5 ms. Alone (B = 1)
    nothing is added."""
    got = rf.decode_rows_in_prefill(16.0, np.array([64.0, 64.0, 1.0]), [1024, 8192, 8192], 8192)
    assert got == pytest.approx([15.75, 31.5, 0.0])


def test_decode_rows_grow_with_the_batch_and_vanish_alone(catalog):
    """The batch's decode work in a fused pass is positive, grows with the batch and is
    at most the decode step (it leaves out the step's weight read and fixed costs)."""
    model = catalog.model("llama-3.1-8b")
    spec = GridSpec(gpus=[catalog.gpu("h100-sxm")], quants=[catalog.quant("bf16")], tps=[1],
                    batches=[1, 16, 256], shapes=[(1024, 1024)])  # fmt: skip
    grid, _ = build_grid(model, spec, catalog.engine("vllm"), False)
    out = evaluate(model, grid, statistic="none")
    rows, step = out["t_decode_rows_ms"].to_numpy(), out["tpot_step_ms"].to_numpy()
    assert (rows > 0).all() and (np.diff(rows) > 0).all()
    assert (rows < step).all()


def test_sglang_takes_the_harness_wave_share_and_vllm_trtllm_fit_it_and_eta_kv():
    """SGLang takes its first-round share from vLLM and TensorRT-LLM (s39, the benchmark
    harness's; its rows that do not mix still wave every round); its eta_kv stays 0.8
    (fitted, it made leaving a GPU family out worse); vLLM and TensorRT-LLM fit both."""
    assert "benchmark_wave_share" not in RECIPES["sglang"].params
    assert RECIPES["sglang"].wave_share_from == ("vllm", "trtllm")
    assert "eta_kv" not in RECIPES["sglang"].params
    for rid in ("vllm", "trtllm"):
        assert "eta_kv" in RECIPES[rid].params
        assert "benchmark_wave_share" in RECIPES[rid].params


@pytest.mark.parametrize(("chunk", "expect"), [(8192.0, 400.0), (1024.0 + 1500.0, 237.5)])
def test_a_wave_under_the_aic_prefill_budget(monkeypatch, chunk, expect):
    """#10: 8 prompts of 1,024 tokens, the whole wave's prefill stubbed to P = 400 ms. In one
    8,192-token pass every prompt completes at its end: TTFT = P. Under the aic generator's
    budget of ISL + 1500 = 2,524 tokens a pass the wave takes n = ceil(8192 / 2524) = 4 passes
    of p = 100 ms and prompt j completes in pass ceil(1024 j / 2524) = 1,1,2,2,3,3,3,4: mean
    2.375 passes, TTFT = 237.5 ms."""
    grid = pd.DataFrame(
        {
            "batch": [8.0],
            "input_len": [1024.0],
            "output_len": [11.0],
            "eff_prefill_chunk_tokens": [chunk],
            "_mixes_prefill": [True],
        }
    )
    monkeypatch.setattr(wave, "batch_prefill_ms", lambda m, g, b, i, c: np.array([400.0]))
    ttft, _ = wave.serving_wave_ms(None, grid, np.array([10.0]), None, None)
    assert float(ttft[0]) == pytest.approx(expect)


def test_a_wave_of_whole_prompts_without_chunked_prefill(monkeypatch):
    """#10 (s39): TensorRT-LLM packs whole prompts only (enable_chunked_prefill false). The
    same 8 prompts of 1,024 tokens under 2,524 tokens a pass: floor(2524 / 1024) = 2 a pass,
    n = 4 passes of p = 100 ms, prompt j completes in pass ceil(j / 2) = 1,1,2,2,3,3,4,4:
    mean 2.5 passes, TTFT = 250 ms (237.5 ms chunked). At 2,048 tokens (3,548 a pass) one
    fits a pass: 8 passes of 50 ms, mean 4.5, TTFT = 225 ms (chunked: ceil(8 x 2048 / 3548)
    = 5 passes of 80 ms, ceil(2048 j / 3548) = 1,2,2,3,3,4,5,5, mean 3.125: 250 ms)."""
    monkeypatch.setattr(wave, "batch_prefill_ms", lambda m, g, b, i, c: np.array([400.0]))
    for isl, whole, expect in [
        (1024.0, True, 250.0),
        (1024.0, False, 237.5),
        (2048.0, True, 225.0),
        (2048.0, False, 250.0),
    ]:
        grid = pd.DataFrame(
            {
                "batch": [8.0],
                "input_len": [isl],
                "output_len": [11.0],
                "eff_prefill_chunk_tokens": [isl + 1500.0],
                "_mixes_prefill": [True],
                "_whole_prompts": [whole],
            }
        )
        ttft, _ = wave.serving_wave_ms(None, grid, np.array([10.0]), None, None)
        assert float(ttft[0]) == pytest.approx(expect), (isl, whole)


def test_prefill_passes_whole_or_chunked():
    """ceil(B I / C) passes in chunks, ceil(B / floor(C / I)) whole (a prompt longer than C
    runs alone: one a pass)."""
    frame = pd.DataFrame({"_whole_prompts": [False, True, True, True]})
    prompts = np.array([8.0, 8.0, 5.0, 3.0])
    i_len = np.array([2048.0, 2048.0, 1024.0, 9000.0])
    chunk = np.array([3548.0, 3548.0, 2524.0, 8192.0])
    assert wave.prefill_passes(frame, prompts, i_len, chunk).tolist() == [5.0, 8.0, 3.0, 3.0]


def test_only_trtllm_packs_whole_prompts(catalog):
    for rid, engine in catalog.engines.items():
        assert engine.chunked_prefill == (rid != "trtllm"), rid


@pytest.mark.parametrize(
    ("gpu", "tp", "pp", "dp", "fraction"),
    [
        # H100 SXM, 81,559 MiB, chunk 8192, CUDA graphs to 256 sequences below tp 4:
        # 512 + 1.5 x 8192 + 2 x 256 + 1 x 1 / 8 x 1024 = 13,440 MiB -> 68,119 / 81,559
        ("h100-sxm", 1, 1, 1, 0.835),
        # tp 8: graphs to 512: 512 + 12,288 + 1,024 + 1,024 = 14,848 MiB -> 0.818
        ("h100-sxm", 8, 1, 1, 0.818),
        # H200, 143,771 MiB, the same 13,440 MiB -> 0.907
        ("h200", 1, 1, 1, 0.907),
        # B200, 183,359 MiB, chunk 16384, graphs 512: 512 + 24,576 + 1,024 + 128 = 26,240 MiB
        ("b200", 1, 1, 1, 0.857),
        # L40S, 46,068 MiB (45 GiB, no 10 GiB floor), chunk 4096, graphs 32:
        # 512 + 6,144 + 64 + 128 = 6,848 MiB -> 0.851
        ("l40s", 1, 1, 1, 0.851),
        # attention DP on 8 H100s (SGLang tp_size 8, dp_size 8): graphs 512 (> 300), so
        # 512 + 12,288 + 1,024 + 1,024 + 3 x 512 x 8 + 1.5 x 512 x 8 = 33,280 MiB -> 0.592
        ("h100-sxm", 1, 1, 8, 0.592),
        # two pipeline stages of tp 4 H100s: 512 + 12,288 + 1,024 + 4 x 2 / 8 x 1,024 -> 0.818
        ("h100-sxm", 4, 2, 1, 0.818),
        # tp 4 x dp 32 (128 GPUs): 16 GiB for the width and 73,728 MiB of DP padding exceed
        # the card; SGLang would not start with its default, the plan gets no KV pool
        ("h100-sxm", 4, 1, 32, 0.0),
    ],
)
def test_sglang_memory_fraction_is_its_own_default_for_the_gpu_and_layout(
    catalog, gpu, tp, pp, dp, fraction
):
    """Issue #10: SGLang's mem_fraction_static when the user does not set it
    (server_args._handle_gpu_memory_settings), hand-computed from its reserve."""
    g = catalog.gpu(gpu)
    assert em.sglang_mem_fraction(g.memory_bytes, tp, pp, dp) == fraction
    eff = catalog.engine("sglang").for_gpu(g.family, g.memory_bytes)
    assert eff.mem_util_by_gpu and engine_mem_util(eff, g.memory_bytes, tp, pp, dp) == fraction


def test_sglang_fraction_reaches_the_kv_pool_and_other_engines_keep_theirs(catalog):
    """The grid carries SGLang's per-GPU fraction (a smaller KV pool on an H100 than the
    flat 0.88 gave), while vLLM and TensorRT-LLM keep their profile's constant."""
    model = catalog.model("llama-3.1-8b")
    spec = GridSpec(
        gpus=[catalog.gpu("h100-sxm"), catalog.gpu("h200")],
        quants=[catalog.quant("bf16")],
        tps=[1, 8],
        batches=[1],
        shapes=[(1000, 200)],
    )
    for engine, expect in (
        ("sglang", {("h100-sxm", 1): 0.835, ("h100-sxm", 8): 0.818, ("h200", 1): 0.907}),
        ("vllm", {("h100-sxm", 1): 0.9, ("h100-sxm", 8): 0.9, ("h200", 1): 0.9}),
        ("trtllm", {("h100-sxm", 1): 0.9, ("h100-sxm", 8): 0.9, ("h200", 1): 0.9}),
    ):
        grid, _ = build_grid(model, spec, catalog.engine(engine), False)
        got = grid.groupby(["gpu", "tp"])["eff_mem_util"].first().to_dict()
        assert {k: got[k] for k in expect} == pytest.approx(expect)
    assert em.SGLANG_SOURCE.startswith("sgl-project/sglang")
