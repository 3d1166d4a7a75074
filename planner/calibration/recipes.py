"""The shipped engine profiles: which rows fit which profile (`RECIPES`), the fit of each
(`fit_recipe`, `fit_shipped_profiles`), leave-one-group-out cross-validation and the
`source` / `notes` texts of a fitted profile (`describe_fit`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from planner.calibration.aic import AIC_ROW_OFFSET
from planner.calibration.fit import FIT_PARAMS, fit_profile
from planner.calibration.measurements import usable
from planner.calibration.prediction import predict
from planner.calibration.transfer import TRANSFER_MIN_MODELS, needs_transfer, transfer_family
from planner.inputs.catalog import Catalog
from planner.perf import engine_memory
from planner.perf import gemm_shape as gs
from planner.schema.engine import Efficiency, EngineProfile

# Starting values and the constants that are not fitted (eta_kv, mem_util, runtime reserve):
# the pre-calibration defaults of catalogs/engines/vllm.yaml. They are engineering priors,
# not measurements: a decode that streams weights at ~3/4 of peak bandwidth, GEMMs at about
# half of peak in decode and ~60% in prefill, collectives of ~15 us, a scheduler/launch cost
# of ~1.5 ms a step and ~5 ms a prefill. A recipe with `base_prior_weight` > 0 pulls its fit
# gently towards them, so a constant the rows barely see stays sane instead of running to a
# bound (without it, leaving out the only server TTFT source drives prefill_overhead_ms to 0
# and TTFT out of sample to a 29% median error).
BASE_EFFICIENCY = Efficiency(
    eta_mem=0.75,
    eta_compute_decode=0.5,
    eta_compute_prefill=0.6,
    eta_kv=0.8,
    allreduce_latency_us=15.0,
    step_overhead_ms=1.5,
    prefill_overhead_ms=5.0,
    mem_util=0.9,
    runtime_reserve_gb=0.0,
    # issue #10: ~10 us of sampling/scheduling per sequence a step; ~50 ms per request of
    # HTTP, tokenisation and admission; a benchmark of 10 requests per client (InferenceX's
    # num_prompts = 10 x concurrency) sends 1/10 of them in its first, synchronised round
    step_per_seq_us=10.0,
    request_overhead_ms=50.0,
    benchmark_wave_share=0.1,
)
# The constants a server engine's GPU-family override may change (the benchmark's wave
# share and the per-request latency are the engine's and the benchmark's, not the GPU's).
SERVER_FAMILY_PARAMS: tuple[str, ...] = (
    "eta_mem",
    "eta_compute_decode",
    "eta_compute_prefill",
    "allreduce_latency_us",
    "step_overhead_ms",
    "prefill_overhead_ms",
    "step_per_seq_us",
)

# How each engine budgets memory (not fitted; the engines' documented defaults):
# vLLM gpu_memory_utilization 0.9 of total memory, weights and the profiled activation peak
# inside it; TensorRT-LLM kv_cache_free_gpu_mem_fraction 0.9 of the memory free after the
# weights and activations; SGLang mem_fraction_static of total for weights + KV pool with
# activations outside it, derived from the GPU's memory and the layout as SGLang does when the
# user does not set it (mem_util_by_gpu, perf.engine_memory: 0.835 on an H100 at tp 1, 0.907
# on an H200, 0.857 on a B200; 0.88, SGLang's own fallback, only where no memory is known).
# No reserve on top of the engine's own headroom, except TensorRT-LLM's (below). TensorRT-LLM
# runs FP8/FP4 ModelOpt checkpoints with an FP8 KV cache (kv_cache_quant_algo FP8 in
# hf_quant_config.json).
# Issue #10 (KV pool): TensorRT-LLM's PyTorch backend (tensorrt_llm/_torch/pyexecutor/_util.py,
# KvCacheCreator._cal_max_memory) sizes the pool as (total - peak) x free_gpu_memory_fraction,
# where peak is the process's whole device use after a profiling pass of max_num_tokens: the
# weights, that pass's activations and the memory outside torch (CUDA context, cuBLAS and
# NCCL/all-reduce workspaces, CUDA graphs). TensorRT-LLM's own test of that estimate
# (NVIDIA/TensorRT-LLM PR 6487, tests/unittest/_torch/auto_deploy/.../test_ad_trtllm_bench.py,
# 2025-07-30; issue 6335) allows 2,500 MiB of such extra consumption on one H100 beyond the
# model: TRTLLM_RUNTIME_RESERVE_GB, an assumption from that figure (not a measurement of ours).
TRTLLM_RUNTIME_RESERVE_GB = 2500 * 2**20 / 1e9  # 2,500 MiB = 2.62 GB
ENGINE_MEMORY: dict[str, dict] = {
    "vllm": {"mem_util": 0.9, "kv_budget_of_free": False, "activations_in_budget": True},
    "trtllm": {
        "mem_util": 0.9,
        "kv_budget_of_free": True,
        "activations_in_budget": False,
        "runtime_reserve_gb": TRTLLM_RUNTIME_RESERVE_GB,
    },
    "sglang": {
        "mem_util": 0.88,
        "mem_util_by_gpu": True,
        "kv_budget_of_free": False,
        "activations_in_budget": False,
    },
}
# Issue #10 (remaining): each engine's scheduler, from its source (not fitted).
# * Prefill chunk by GPU memory. vLLM (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults,
#   OpenAI API server): max_num_batched_tokens 8192 and max_num_seqs 1024 on devices of
#   >= 70 GiB except the A100, else 2048 and 256. SGLang (python/sglang/srt/server_args.py,
#   _handle_gpu_memory_settings, perf.engine_memory.SGLANG_TIERS): chunked_prefill_size 2048
#   below 35 GiB, 4096 below 60 GiB (A100 40GB, L40S), 8192 below 160 GiB (H100, H200),
#   16384 above (B200, MI300X). TensorRT-LLM: max_num_tokens 8192 (BuildConfig default) on
#   every GPU.
# * SGLang does not mix prefill into decode steps by default: a prefill batch runs on its own
#   and pauses decode, so the requests of a closed loop with fixed lengths start, decode and
#   finish together every round: each round a wave (share 1, calibration.prediction
#   ._wave_share). Its aic rows that mix (enable_mixed_chunk: every campaign but 0.5.1.post1,
#   aic.AIC_UNMIXED) fit their first-round share like vLLM's and TensorRT-LLM's (s37).
# * TensorRT-LLM's default capacity scheduler (GUARANTEED_NO_EVICT) admits a request only
#   with KV blocks for its whole output: I + O tokens a sequence (kv_reserve_output).
_VLLM_CHUNKS = (
    {"min_memory_gib": 0, "tokens": 2048},
    {"min_memory_gib": 70, "tokens": 8192, "except_families": ("ampere",), "max_num_seqs": 1024},
)
_SGLANG_CHUNKS = engine_memory.sglang_chunk_tiers()  # the same source as its memory fraction
# The hardware each engine documents (not fitted). vLLM (NVIDIA CUDA, AMD ROCm, Intel Gaudi)
# and SGLang (NVIDIA, AMD; Gaudi through Habana's fork) run on every family the catalog has.
_TRTLLM_HARDWARE = {
    "gpu_families": ("ampere", "ada", "hopper", "blackwell"),
    "gpu_families_source": "https://nvidia.github.io/TensorRT-LLM/supported-hardware.html "
    "(2026-12-04): NVIDIA Blackwell, Hopper, Ada Lovelace and Ampere; other architectures are "
    "not developed or tested (support-matrix: community support only)",
}
_LLAMACPP_HARDWARE = {
    "gpu_families": ("turing", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4"),
    "gpu_families_source": "https://github.com/ggml-org/llama.cpp README, Supported backends "
    "(2026-12-04): CUDA for NVIDIA and HIP for AMD GPUs; no backend for Intel Gaudi",
}
# The checkpoint formats each engine documents loading (not fitted). llama.cpp loads GGUF
# files only: gguf-q4_k_m, and bf16 / fp16 converted to GGUF as BF16 / F16 tensors; it has no
# FP8, FP4, AWQ or GPTQ kernels, and int8 (SmoothQuant W8A8) is not its Q8_0 (8-bit weights,
# 16-bit math). TensorRT-LLM runs every catalog quant but GGUF (ModelOpt FP8/NVFP4, AWQ, GPTQ,
# SmoothQuant, FP16/BF16). vLLM and SGLang load all of them (GGUF included).
_TRTLLM_QUANTS = {
    "quants": ("bf16", "fp16", "fp8", "fp4", "int8", "int4-awq", "int4-gptq"),
    "quants_source": "https://nvidia.github.io/TensorRT-LLM/features/quantization.html and "
    "https://nvidia.github.io/TensorRT-LLM/reference/precision.html (2026-12-05): FP16/BF16, "
    "FP8, NVFP4/MXFP4, W4A16 AWQ and GPTQ, W8A8 SmoothQuant; no GGUF",
}
_LLAMACPP_QUANTS = {
    "quants": ("gguf-q4_k_m", "bf16", "fp16"),
    "quants_source": "https://github.com/ggml-org/llama.cpp README (2026-12-05): models must be "
    "stored in the GGUF file format (others converted with its convert_*.py scripts); "
    "tools/quantize/README.md lists its types (Q4_K_M, Q8_0, F16, BF16, ...): no FP8, FP4, "
    "AWQ, GPTQ or W8A8",
}
ENGINE_SETTINGS: dict[str, dict] = {
    "vllm": {"prefill_chunk_tiers": _VLLM_CHUNKS},
    "trtllm": {
        "fp8_kv_with_fp8_checkpoint": True,
        # issue #10 (s39): the LLM API's enable_chunked_prefill defaults to false, and
        # AIConfigurator's generator (extra_engine_args.*.yaml.j2, `enable_chunked_prefill |
        # default(false)`; no rule sets it) leaves it so: a pass packs whole prompts only,
        # floor(max_num_tokens / ISL) of them (perf.wave.prefill_passes)
        "chunked_prefill": False,
        **_TRTLLM_HARDWARE,
        **_TRTLLM_QUANTS,
    },
    "sglang": {"mixes_prefill": False, "prefill_chunk_tiers": _SGLANG_CHUNKS},
    "llamacpp": {**_LLAMACPP_HARDWARE, **_LLAMACPP_QUANTS},
}
ENGINE_SCHEDULER: dict[str, dict] = {
    # Issue #10 (s39): TensorRT-LLM's PyTorch backend runs an overlap scheduler by default
    # (docs, features/overlap-scheduler, read 2026-12-05: at step n it launches step n+1
    # before processing step n's outputs), and AIConfigurator's generator keeps it for
    # aggregated workers (rule_plugin/trtllm.rule: agg disable_overlap_scheduler = false): a
    # request that arrives has the launched step ahead of it before it can join one.
    "trtllm": {"kv_reserve_output": True, "scheduler_lag_steps": 1.0},
}
# Issue #11 (t10s): the fixed cost of one draft forward inside a decode step (not fitted: the
# calibration sets hold no speculative rows). vLLM V1 runs the drafter's k forwards inside the
# verify's engine step (GPUModelRunner.execute_model -> the proposer's propose(), one forward
# per draft token, each a CUDA-graph replay: piecewise graphs for EAGLE/MTP heads since PR
# 25109, and for draft_model since PR 47460, which before it ran eager), so a draft forward pays
# graph replay, its input and attention-metadata preparation and its sampling, not the step's
# scheduling and output processing. 1.2 ms is derived, not measured: SpecDecode-Bench
# (Liu et al., "Speculative Decoding: Performance or Illusion?", arXiv 2601.11580; vLLM
# 0.10.1, CUDA graphs, 4x H100) reports a Llama-3.2-1B draft forward at ~12.5% of the
# Llama-3-70B target forward (TP4, k 3; their scripts/profile-llama3-70b-draft-model.sh).
# The roofline parts are 0.67 ms (draft) and 13.8 ms (target, bf16, batch 1); with the same
# fixed part f in both, (0.67 + f) / (13.8 + f) = 0.125 gives f = 1.2 ms (1.06-1.40 ms as the
# target's share of the step cost is taken as none or all). Whether that fork's drafter replayed
# CUDA graphs is not stated; had it run eager (as upstream draft_model did before PR 47460),
# 1.2 ms would be high for today's vLLM. SGLang (EAGLEDraftCudaGraphRunner)
# and TensorRT-LLM's one-model path replay the whole drafting loop as one CUDA graph; no
# per-forward figure is sourced for them, so they keep the whole step cost (None).
VLLM_DRAFT_FORWARD_MS = 1.2
ENGINE_SPECULATION: dict[str, dict] = {"vllm": {"draft_forward_ms": VLLM_DRAFT_FORWARD_MS}}
# issue #10 (t10v): starting values (and prior centres) of constants only some recipes fit.
# moe_layer_us 20 is an engineering default, not a measurement: a vLLM MoE layer launches 5-7
# kernels (router GEMM, top-k, align/permute, two grouped GEMMs, combine) of a few us each
# beyond their bytes; the fit moves it. Engines that do not fit it keep 0.
#
# prefill_layer_us (#10, t10p): TensorRT-LLM replays CUDA graphs for decode-only steps and
# runs context and mixed passes eagerly by default (its piecewise graphs for those are
# opt-in, `torch_compile_config.enable_piecewise_cuda_graph`, and its docs say they
# "primarily benefit host-bound iterations in the context phase": NVIDIA/TensorRT-LLM
# docs/source/features/torch_compile_and_piecewise_cuda_graph.md), so a short prompt's pass
# at high tp takes the host's time, not the GPU's. 454 us a layer is calibrated, not fitted
# with the rest: `benchmarks/prefill_floor.py` on the prefill share of the dense aic
# TensorRT-LLM 1.0.0rc3 H100 series (Llama-3.1-8B bf16, Qwen3-32B fp8, tp 1-8; 547 us on
# Llama alone, 348 us on Qwen alone); the recipe's own fit, which also sees Qwen3-235B's short
# prompts, does not pin it (84 +/- 100 us). vLLM (piecewise CUDA graphs by default) and
# SGLang (its aic waves are GPU-bound passes: the floor never binds) keep 0.
#
# gemm_k0_ridge (#10, t10g): prefill GEMMs at eta_pf K / (K + k0) in their per-GPU K,
# k0 = 1.22 x the card's F / BW from DeepGEMM's published FP8 Hopper GEMM table
# (perf/gemm_shape.py): not fitted. Only TensorRT-LLM takes it for now (the test of the
# hypothesis, t10g); vLLM and SGLang keep 0, bit-identical.
#
# step_seq_layer_us (#10, s40): TensorRT-LLM's per-sequence decode cost is fitted per layer
# (TRTLLM_PARAMS), its per-step one held at 0; 0.15 us a layer starts it where BASE_EFFICIENCY's
# 10 us a step would be on a 64-layer model.
ENGINE_START: dict[str, dict] = {
    "vllm": {"moe_layer_us": 20.0},
    "trtllm": {
        "prefill_layer_us": 454.0,
        "gemm_k0_ridge": gs.GEMM_K0_RIDGE,
        "step_per_seq_us": 0.0,
        "step_seq_layer_us": 0.15,
    },
}


@dataclass(frozen=True)
class Recipe:
    """How one shipped engine profile is fitted: which engines' rows, which GPU families
    may get an override and how many rows an override needs."""

    id: str
    name: str
    engines: tuple[str, ...]
    families: tuple[str, ...] = ()
    min_family_rows: int = 8
    params: tuple[str, ...] = FIT_PARAMS
    prior: str | None = None  # recipe whose fitted default the default is pooled towards
    family_params: tuple[str, ...] | None = None  # constants an override may change
    base_prior_weight: float = 0.0  # weight of a Gaussian prior towards BASE_EFFICIENCY
    caveats: str = ""  # appended to the profile's notes
    unfitted_moe_ttft: bool = False  # issue #10 (t10v): MoE rows' TTFT left out of the fit
    # issue #10 (s39): recipes whose shipped benchmark_wave_share (their mean) this recipe
    # takes instead of fitting its own: the share is the benchmark harness's (WAVE_SHARE_NOTE)
    wave_share_from: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.wave_share_from and "benchmark_wave_share" in self.params:
            raise ValueError(f"{self.id}: a wave share taken from others cannot be fitted")

    def base_profile(self, source: str = "to be fitted", as_of: str = "unfitted") -> EngineProfile:
        """The unfitted profile: BASE_EFFICIENCY with this engine's memory budget."""
        base = BASE_EFFICIENCY.model_copy(
            update={
                **ENGINE_MEMORY.get(self.id, {}),
                **ENGINE_SCHEDULER.get(self.id, {}),
                **ENGINE_START.get(self.id, {}),
                **ENGINE_SPECULATION.get(self.id, {}),
            }
        )
        return EngineProfile(
            id=self.id,
            name=self.name,
            source=source,
            as_of=as_of,
            default=base,
            **ENGINE_SETTINGS.get(self.id, {}),
        )


# Family overrides: with the aic set every server engine has hundreds of Hopper rows and
# tens of Blackwell rows, so each gets hopper and blackwell overrides of every constant,
# pulled towards the engine's default (fitted on all its rows). Other families (ampere, ada
# in the public TensorRT-LLM tables) and AMD use the default; AMD (cdna3) has 9 vLLM ROCm
# rows of one AMD blog (MI300X TP8 FP8), too few for an override of its own: its constants
# are the vLLM default, an explicit assumption (recipe caveats). For llama.cpp, overrides of
# the decode constants cut the leave-one-GPU-out TPOT error from 26% to 13% (GDDR Ada cards
# reach a larger fraction of their bandwidth than HBM A100/H100 at batch 1).
_THROUGHPUT_NOTE = (
    "Max-throughput rows are predicted as B*O / (prefill of the B prompts in 8192-token "
    "chunks + (O-1) decode steps), which is what static-batch and offline benchmarks "
    "measure (planner.perf.evaluate's continuous-batching rate shares chunked prefill passes "
    "the same way)."
)
_AIC_NOTE = (
    "The aic rows (data/calibration/aic_silicon_public.csv, SOURCES.md section 10) are closed "
    "loops at concurrency C with fixed ISL/OSL, predicted as a fitted share of requests "
    "arriving together (the clients' first round, a wave) and the rest in the steady state, "
    "each with a fitted per-request latency (calibration.prediction.closed_loop_benchmark_ms),"
    " served as AIConfigurator's generator configures an aggregated deployment (assumed: ISL"
    " + 1500 prompt tokens a pass, prefill mixed into decode steps, calibration.aic."
    "AIC_GENERATOR); their throughput is "
    "derived from the measured TTFT and TPOT (Little's law), so it is not an independent "
    "check. Rows with expert parallelism, attention DP, disaggregation or models outside the "
    "catalog are not fitted."
)
_SERVER_FAMILIES = ("hopper", "blackwell")
# Issue #10: the KV read efficiency is fitted too for vLLM and TensorRT-LLM (the aic set's
# 4-8K-token prompts at batch 16-512 make the KV read a large part of the decode step; both
# fit 1.0 x eta_mem, at the bound). Not for SGLang: fitted there, leaving a GPU family out
# gave TPOT 70% / throughput 47% (median), against 50% / 41% with eta_kv kept at 0.8 (its 28
# Blackwell rows cannot pin one more constant).
# Issue #10 (s39): SGLang does not fit its wave share; it takes the mean of vLLM's and
# TensorRT-LLM's (WAVE_SHARE_NOTE). The share is the benchmark's: the aic rows of all three
# engines come from one harness (AIConfigurator's generator, aiperf with C x 50 requests after
# C x 2 of warm-up), and the two engines with hundreds of mixing rows fit it alike (vLLM 0.147
# +/- 0.011, TensorRT-LLM 0.142 +/- 0.010). SGLang's mixing rows cannot pin it: fitted on
# them it came out 0.30 +/- 0.06, and leaving Llama-3.1-8B out it ran to its bound of 1 and put
# that model's TTFT 179% slow (leaving a model out 10 / 31 / 14%). Taken from the other two,
# 9 / 20 / 8% (benchmarks/results/accuracy-s39-sglang-wave-share-*.txt); any share from 0.12
# to 0.22 meets all three targets leaving a model or a GPU out. Its rows that do not mix are
# still a wave every round (prediction._wave_share).
WAVE_SHARE_NOTE = (
    "benchmark_wave_share {share:.3g}: the mean of the {donors} profiles' (not fitted: the "
    "share of a closed loop's requests that arrive in a wave is the benchmark harness's, "
    "which the aic rows of every engine share, and this engine's rows cannot pin it, "
    "calibration.recipes.WAVE_SHARE_NOTE)"
)
SERVER_PARAMS: tuple[str, ...] = (*FIT_PARAMS, "eta_kv")
# issue #10 (t10v): vLLM's MoE rows (Kimi-K2.5, MiniMax-M2.5, 0.16-0.19) need a fixed decode
# cost per MoE layer (without it the 422-row fit put eta_mem at 0.92 and a 3-4 ms step
# overhead on every model). Fitted for vLLM and SGLang (session 36: SGLang's leave-one-model-out
# 23 / 33 / 18% -> 15 / 33 / 11%, in sample 12 / 20 / 10% -> 6 / 19 / 5%, its two MoE models
# predicted 27-36% fast in TPOT without it; benchmarks/results/accuracy-s36-sglang-moe-layer.txt).
# Not for TensorRT-LLM: fitted there (15 us), leaving a model out went 18 / 29 / 17% -> 24 / 29 /
# 22% (accuracy-s36-trtllm-moe-layer-fitted.txt), so it keeps 0.
# prefill_overhead_ms is not fitted for vLLM: on these rows (the inconsistent 8B and Qwen3-235B
# campaigns out) it runs to its 20 ms bound on dense rows alone, trading against
# request_overhead_ms (70 -> 45 ms), a per-pass cost the closed-loop TTFT cannot tell from the
# per-request latency; it stays at BASE_EFFICIENCY's 5 ms engineering default (an assumption).
#
# issue #10 (ep-lead): EP across nodes. TensorRT-LLM's wide-EP rows (attention DP 16/64 at 1-16
# requests) put 406 us on each MoE layer (perf.parallel.EP_CROSS_NODE_LAYER_S, the default);
# vLLM's EP16 rows (tp 4 x dp 4 on two nodes, Kimi-K2.5 B200 and MiniMax-M2.5 H100) measure
# ~10 ms TPOT at 1-2 requests, 40-65 us a layer above the physics, and the gap grows with the
# batch (~18 us per request per layer). vLLM fits its own fixed and per-token cost, default
# constants only (one campaign per family: an override would be one model's).
VLLM_PARAMS: tuple[str, ...] = (
    *(p for p in SERVER_PARAMS if p != "prefill_overhead_ms"),
    "moe_layer_us",
    "ep_cross_node_layer_us",
    "ep_cross_node_token_us",
)
VLLM_FAMILY_PARAMS: tuple[str, ...] = (
    *(p for p in SERVER_FAMILY_PARAMS if p != "prefill_overhead_ms"),
    "moe_layer_us",
)
SGLANG_PARAMS: tuple[str, ...] = (
    *(p for p in FIT_PARAMS if p not in ("eta_kv", "benchmark_wave_share")),
    "moe_layer_us",
)


def _sequence_cost_per_layer(params: tuple[str, ...]) -> tuple[str, ...]:
    """`params` with the per-step sequence cost replaced by the per-layer one."""
    return tuple("step_seq_layer_us" if p == "step_per_seq_us" else p for p in params)


# issue #10 (t10p): TensorRT-LLM's host floor of an eager prefill pass is calibrated apart
# (ENGINE_START), not fitted: one value for every GPU family (the host's, not the GPU's).
# issue #10 (s40): TensorRT-LLM fits its per-sequence decode cost per layer instead of per step.
# Its overlap scheduler (ENGINE_SCHEDULER) runs the host's per-step work (scheduling,
# sampling, output processing) while the GPU runs the launched step, so what a sequence still
# adds is GPU work in every layer (its attention and KV append beyond the KV bytes). Held per
# step, the fit without Qwen3-32B (64 layers) put 13 us on it and without Llama-3.1-8B (32)
# 42 us; leaving a model out went 14 / 26 / 14% -> 13 / 25 / 12%
# (accuracy-s40-trtllm-seq-layer.txt).
TRTLLM_PARAMS: tuple[str, ...] = _sequence_cost_per_layer(SERVER_PARAMS)
TRTLLM_FAMILY_PARAMS: tuple[str, ...] = _sequence_cost_per_layer(SERVER_FAMILY_PARAMS)

RECIPES: dict[str, Recipe] = {
    "vllm": Recipe(
        "vllm",
        "vLLM (continuous batching, CUDA graphs, chunked prefill)",
        ("vllm",),
        families=_SERVER_FAMILIES,
        min_family_rows=20,
        params=VLLM_PARAMS,
        family_params=VLLM_FAMILY_PARAMS,
        base_prior_weight=0.2,
        unfitted_moe_ttft=True,
        caveats=(
            "Caveats: fitted on vLLM rows only: the aic set's vLLM 0.12-0.19 closed loops on "
            "H100/H200/B200/B300 (dense Llama-3.1-70B, Qwen3-32B; MoE Kimi-K2.5 and "
            "MiniMax-M2.5 with their EP/DP layouts; the Llama-3.1-8B H200 and Qwen3-235B H200 "
            "campaigns of vLLM 0.12 are skipped, calibration.bounds and aic.AIC_CONTRADICTED) "
            "and the public set's 8 small-batch latencies plus 4 offline rows (MI300X TP8 FP8, "
            "H200 bf16). AMD MI300X has no override (9 rows of one source): its constants are "
            "the default's, an assumption. A weak Gaussian prior (weight 0.2) pulls the "
            "constants towards engineering defaults (calibration.BASE_EFFICIENCY). "
            "MoE rows' TTFT is not fitted (MOE_TTFT_NOTE) and prefill_overhead_ms is held at "
            "5 ms, an assumption (VLLM_PARAMS). " + _AIC_NOTE + " " + _THROUGHPUT_NOTE
        ),
    ),
    "sglang": Recipe(
        "sglang",
        "SGLang (continuous batching, RadixAttention, chunked prefill)",
        ("sglang",),
        families=_SERVER_FAMILIES,
        min_family_rows=20,
        params=SGLANG_PARAMS,
        family_params=SERVER_FAMILY_PARAMS,
        base_prior_weight=0.2,
        wave_share_from=("vllm", "trtllm"),
        caveats=(
            "Caveats: fitted on the aic set's SGLang rows only (0.5.x, H100/H200/B200/B300; "
            "the public set has none). The aic prompts are random tokens, so RadixAttention's "
            "prefix reuse plays no part; the model does not credit prefix-cache hits. " + _AIC_NOTE
        ),
    ),
    "trtllm": Recipe(
        "trtllm",
        "TensorRT-LLM (in-flight batching, FP8/FP4 ModelOpt checkpoints)",
        ("trtllm",),
        families=_SERVER_FAMILIES,
        min_family_rows=20,
        params=TRTLLM_PARAMS,
        family_params=TRTLLM_FAMILY_PARAMS,
        base_prior_weight=0.2,
        caveats=(
            "Caveats: fitted on TensorRT-LLM rows: the aic set's 1.0-1.3 closed loops (mostly "
            "H100 1.0.0rc3, plus H200, B200, GB200) and the public tables (v0.5/v0.6 of 2023 "
            "static batches and v1.0 max-throughput points; A100/L40S rows use the default). "
            "KV dtype FP8 assumed for FP8/FP4 checkpoints. " + _AIC_NOTE + " " + _THROUGHPUT_NOTE
        ),
    ),
    "llamacpp": Recipe(
        "llamacpp",
        "llama.cpp (GGUF, single stream, llama-bench)",
        ("llamacpp",),
        families=("ada", "ampere", "hopper"),
        min_family_rows=3,
        params=FIT_PARAMS[:6],  # batch-1 rows without serving: none of #10's three terms
        family_params=("eta_mem", "step_overhead_ms"),
        caveats=(
            "Caveats: llama-bench of May 2024 (llama.cpp commit not stated) on RunPod, batch "
            "1: tg 512 from an empty context (input_len 1) for TPOT, pp 512 for TTFT. Single "
            "source, so cross-validated by leaving one GPU out. eta_compute_decode and "
            "allreduce_latency_us are not seen at batch 1 without TP. Multi-GPU rows split "
            "layers (not TP) and are not fitted. GDDR Ada cards reach a larger fraction of "
            "their bandwidth at batch 1 than HBM A100/H100 (family overrides of eta_mem and "
            "step overhead). Prefill: the RTX 4090 is 2x faster than predicted because "
            "llama.cpp's FP16 GEMMs run at the GeForce FP16-accumulate rate (330 TFLOPS) "
            "while the catalog lists the FP32-accumulate 165; on H100 llama.cpp's prefill "
            "reaches ~17% of the dense peak, below the 0.3 bound, and the 18.8 ms prefill "
            "overhead absorbs part of that."
        ),
    ),
}


# issue #10 (t10v): the model predicts MoE prefill fast in every engine (TTFT log error about
# -0.4 on vLLM's Kimi-K2.5 and MiniMax-M2.5 rows before the MoE prefill terms).
# Fitted to them, vLLM's shared TTFT constants (per-request latency, prefill efficiency) move
# to cover the miss and dense TTFT goes from 17% to 27% (median, in sample), so the vLLM fit
# leaves MoE rows' TTFT out (TPOT and throughput stay in). The MoE prefill terms
# (perf/moe_prefill.py) have since narrowed the miss (vLLM MoE TTFT log error -0.44 -> -0.28
# with the refit). Re-tested in session 35 with those terms: fitting MoE TTFT too gives 5 / 19 /
# 5% in sample (4 / 19 / 4% without) and leaving a GPU family out 7 / 28 / 7%, p90 TTFT 77%
# (7 / 28 / 6%, p90 65% without; benchmarks/results/accuracy-s35-vllm-moe-ttft-fitted-*.txt).
MOE_TTFT_NOTE = "ttft: MoE prefill physics incomplete (not fitted for vllm)"


def without_moe_ttft(measurements: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """`measurements` with meas_ttft blanked (and a metric_skips note) on MoE-model rows."""
    moe_ids = {m for m, model in catalog.models.items() if model.moe is not None}
    out = measurements.copy()
    sel = out["model_id"].isin(moe_ids) & out["meas_ttft"].notna()
    out.loc[sel, "meas_ttft"] = np.nan
    notes = out.loc[sel, "metric_skips"].fillna("")
    out.loc[sel, "metric_skips"] = np.where(
        notes == "", MOE_TTFT_NOTE, notes + "; " + MOE_TTFT_NOTE
    )
    return out


def fit_recipe(
    measurements: pd.DataFrame,
    catalog: Catalog,
    recipe: Recipe,
    row_filter: Callable[[pd.DataFrame], pd.Series] | None = None,
    n_starts: int = 3,
    start: EngineProfile | None = None,
) -> tuple[EngineProfile, dict]:
    """Fit one recipe (default + family overrides) from BASE_EFFICIENCY (or warm from
    `start`); a recipe with a prior first fits the prior recipe on the same rows filter."""
    prior, weight = None, 1.0
    base = with_harness_wave_share(recipe.base_profile(), recipe, catalog)
    if recipe.unfitted_moe_ttft:
        measurements = without_moe_ttft(measurements, catalog)
    if recipe.prior is not None:
        prior, _ = fit_recipe(measurements, catalog, RECIPES[recipe.prior], row_filter, n_starts)
    elif recipe.base_prior_weight > 0:
        prior, weight = base, recipe.base_prior_weight
    return fit_profile(
        measurements,
        catalog,
        base,
        engine_filter=recipe.engines,
        params=recipe.params,
        families=recipe.families,
        min_family_rows=recipe.min_family_rows,
        n_starts=n_starts,
        row_filter=row_filter,
        prior_profile=prior,
        prior_weight=weight,
        family_params=recipe.family_params,
        start=start,
    )


def harness_wave_share(recipe: Recipe, catalog: Catalog) -> float | None:
    """The mean benchmark_wave_share of the shipped profiles `recipe` takes it from (None
    when it fits its own)."""
    if not recipe.wave_share_from:
        return None
    missing = [r for r in recipe.wave_share_from if r not in catalog.engines]
    if missing:
        raise ValueError(f"{recipe.id} takes its wave share from {missing}: not in the catalog")
    shares = [catalog.engines[r].default.benchmark_wave_share for r in recipe.wave_share_from]
    return float(np.mean(shares))


def with_harness_wave_share(
    profile: EngineProfile, recipe: Recipe, catalog: Catalog
) -> EngineProfile:
    """`profile` with the harness's wave share in its default and every family override, for
    a recipe that takes it from others (unchanged otherwise)."""
    share = harness_wave_share(recipe, catalog)
    if share is None:
        return profile
    update = {"benchmark_wave_share": share}
    return profile.model_copy(
        update={
            "default": profile.default.model_copy(update=update),
            "families": {k: v.model_copy(update=update) for k, v in profile.families.items()},
        }
    )


def fold_profile(
    measurements: pd.DataFrame,
    catalog: Catalog,
    recipe: Recipe,
    group_col: str,
    group: object,
    n_starts: int = 3,
    start: EngineProfile | None = None,
    donors: Mapping[str, EngineProfile] | None = None,
    min_models: int = TRANSFER_MIN_MODELS,
) -> tuple[EngineProfile, str]:
    """One fold of `cross_validate`: the recipe fitted without `group`'s rows (and, leaving a
    GPU family out with `donors`, that family's constants taken from them when the fold has
    fewer than `min_models` models), with a note of the constants the fit could not see and
    any that moved from the donors."""
    rows = usable(measurements)
    rows = rows[rows["engine"].isin(recipe.engines)]

    def others(r: pd.DataFrame) -> pd.Series:
        return r[group_col] != group

    profile, report = fit_recipe(
        measurements, catalog, recipe, row_filter=others, n_starts=n_starts, start=start
    )
    note = ", ".join(report["default"]["not_identified"])
    n_models = rows.loc[rows[group_col] != group, "model_id"].nunique()
    if (
        donors
        and group_col == "gpu_family"
        and needs_transfer(profile, str(group), n_models, min_models)
    ):
        params = recipe.family_params or recipe.params
        donor_params = {
            k: RECIPES[k].family_params or RECIPES[k].params for k in donors if k in RECIPES
        }
        profile, moved = transfer_family(profile, str(group), donors, params, donor_params)
        note = "; ".join(x for x in (note, moved) if x)
    return profile, note


def cross_validate(
    measurements: pd.DataFrame,
    catalog: Catalog,
    recipe: Recipe,
    group_col: str = "source_key",
    n_starts: int = 3,
    start: EngineProfile | None = None,
    donors: Mapping[str, EngineProfile] | None = None,
    min_models: int = TRANSFER_MIN_MODELS,
) -> pd.DataFrame:
    """Leave one group out (a source by default): fit the recipe on the other groups,
    predict the held-out group's rows. Returns the held-out predictions of every group,
    with `held_out` naming the group and `fit_note` the constants the fit could not see.
    `start` warm-starts every fold's fit (the optimiser's starting point only).

    `donors` (leaving a GPU family out only): other engines' profiles fitted on their own
    rows, the left-out family's among them. A fold whose rows cover fewer than `min_models`
    models takes the left-out family's constants from them (calibration.transfer), as a user
    would whose engine has no rows of that family while other engines have; `fit_note` says
    so. Without donors (or when no donor has the family) the fold is strict: the family's
    rows of every engine are out of what predicts it."""
    rows = usable(measurements)
    rows = rows[rows["engine"].isin(recipe.engines)]
    parts = []
    for group in sorted(rows[group_col].dropna().unique()):
        profile, note = fold_profile(
            measurements, catalog, recipe, group_col, group, n_starts, start, donors, min_models
        )
        held = measurements[
            measurements["row_id"].isin(rows.loc[rows[group_col] == group, "row_id"])
        ]
        pred = predict(held, catalog, profile)
        pred["held_out"] = group
        pred["fit_note"] = note
        parts.append(pred)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _fmt_constants(eff: Efficiency, sd: Mapping[str, float], params: Sequence[str]) -> str:
    out = []
    for name in params:
        value = getattr(eff, name)
        sigma = sd.get(name)
        out.append(f"{name} {value:.3g}" + (f" +/- {sigma:.2g}" if sigma is not None else ""))
    return "; ".join(out)


def id_ranges(ids: Sequence[int]) -> str:
    """Row ids as sorted ranges: 1-5, 7, 9-12."""
    out: list[str] = []
    for i in sorted(set(int(x) for x in ids)):
        if out and out[-1].split("-")[-1] == str(i - 1):
            out[-1] = out[-1].split("-")[0] + f"-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


def describe_fit(
    recipe: Recipe,
    profile: EngineProfile,
    report: dict,
    as_of: str,
    catalog: Catalog | None = None,
    data_file: str = (
        "data/calibration/measured_public.csv and data/calibration/aic_silicon_public.csv"
    ),
) -> tuple[str, str]:
    """The `source` and `notes` texts of a fitted profile: exactly what was fitted on what."""
    sources = ", ".join(f"{k} {v}" for k, v in sorted(report["sources"].items()))
    ids = report["row_ids"]
    source = (
        f"Fitted {as_of} by planner.calibration.fit_recipe('{recipe.id}') on {data_file} "
        f"(verbatim copies of the public sets described in data/calibration/SOURCES.md): "
        f"{len(ids)} rows of engines {', '.join(recipe.engines)} ({sources}; row_id "
        f"{id_ranges(ids)}; aic row_id = {AIC_ROW_OFFSET} + its line in the CSV). "
        f"Least squares (scipy.optimize.least_squares) on log(predicted/measured) of TPOT, "
        f"TTFT, throughput and end-to-end latency, rows weighted 1/sqrt(rows of their "
        f"source), constants bounded (eta 0.3-1, allreduce 1-100 us, overheads 0-20 ms, "
        f"per-sequence step cost 0-200 us, per-request latency 0-500 ms, wave share 0-1)"
        + (
            f"; default pooled towards the '{recipe.prior}' fit (same rows filter) with a "
            f"Gaussian prior"
            if recipe.prior
            else ""
        )
        + (
            f"; {'/'.join(recipe.families)} overrides of "
            f"{', '.join(recipe.family_params or recipe.params)} fitted on that family's rows "
            f"(>= {recipe.min_family_rows}) with a prior towards the default"
            if recipe.families
            else "; no GPU-family overrides"
        )
        + "."
    )
    rep = report["default"]
    notes = [
        f"default (+/- 1 sigma from the Jacobian of the log residuals): "
        f"{_fmt_constants(profile.default, rep.get('sd', {}), recipe.params)}; weighted rms "
        f"log error {rep.get('rms_log_after', float('nan')):.3f}."
    ]
    if rep.get("not_identified"):
        notes.append(
            f"Not identified by these rows (kept at the pre-calibration value): "
            f"{', '.join(rep['not_identified'])}."
        )
    if rep.get("at_bound"):
        notes.append(f"At a bound: {', '.join(rep['at_bound'])}.")
    for fam, fam_rep in report["families"].items():
        if "values" in fam_rep:
            notes.append(
                f"{fam} override ({fam_rep['rows']} rows): "
                f"{_fmt_constants(profile.families[fam], fam_rep['sd'], fam_rep['fitted'])}."
            )
        else:
            notes.append(f"{fam}: no override ({fam_rep.get('rows', 0)} rows).")
    unfitted = "" if "eta_kv" in recipe.params else f"eta_kv {profile.default.eta_kv}, "
    if "step_seq_layer_us" in recipe.params and "step_per_seq_us" not in recipe.params:
        unfitted += (
            f"step_per_seq_us {profile.default.step_per_seq_us:g} (a sequence's decode cost "
            "is fitted per layer, step_seq_layer_us: calibration.recipes.TRTLLM_PARAMS), "
        )
    share = harness_wave_share(recipe, catalog) if catalog is not None else None
    if share is not None:
        note = WAVE_SHARE_NOTE.format(share=share, donors=", ".join(recipe.wave_share_from))
        unfitted += note + "; "
    notes.append(
        f"Not fitted: {unfitted}mem_util {profile.default.mem_util}"
        + (
            " (SGLang's own fallback: the fraction is derived per GPU and layout, "
            "perf.engine_memory)"
            if profile.default.mem_util_by_gpu
            else ""
        )
        + ", "
        f"runtime_reserve_gb {profile.default.runtime_reserve_gb}, kv_budget_of_free "
        f"{profile.default.kv_budget_of_free}, activations_in_budget "
        f"{profile.default.activations_in_budget}, prefill_chunk_tokens "
        f"{profile.default.prefill_chunk_tokens}, kv_reserve_output "
        f"{profile.default.kv_reserve_output}, mixes_prefill {profile.mixes_prefill}, "
        f"chunked_prefill {profile.chunked_prefill}"
        + (
            f", scheduler_lag_steps {profile.default.scheduler_lag_steps:g} (the step an "
            "overlap scheduler launched ahead of an arrival, in its TTFT)"
            if profile.default.scheduler_lag_steps
            else ""
        )
        + " (the engine's documented memory budget, scheduler and chunk by GPU memory, see "
        "calibration.recipes.ENGINE_MEMORY, ENGINE_SETTINGS and ENGINE_SCHEDULER)."
    )
    draft = profile.default.draft_forward_ms
    if draft is not None:  # issue #11 (t10s)
        notes.append(
            f"Not fitted: draft_forward_ms {draft:g} (each draft forward's fixed cost, derived "
            "from SpecDecode-Bench, see calibration.recipes.ENGINE_SPECULATION)."
        )
    if recipe.caveats:
        notes.append(recipe.caveats)
    return source, " ".join(notes)


def fit_shipped_profiles(
    measurements: pd.DataFrame,
    catalog: Catalog,
    as_of: str,
    n_starts: int = 2,
    only: tuple[str, ...] | None = None,
) -> dict[str, tuple[EngineProfile, dict]]:
    """Fit every recipe of RECIPES; the profiles carry their source, notes and date.

    The log-error surface has shallow, nearly equivalent minima along eta_mem vs
    step_overhead_ms (the roofline max() has kinks): 8 starts find the best of them; fewer
    starts move the constants within about one sigma. `only` limits the refit to those
    recipes (the others' profiles are left as shipped)."""
    out = {}
    for rid in fit_order(RECIPES):
        recipe = RECIPES[rid]
        if only is not None and rid not in only:
            continue
        profile, report = fit_recipe(measurements, catalog, recipe, n_starts=n_starts)
        source, notes = describe_fit(recipe, profile, report, as_of, catalog)
        fitted = profile.model_copy(update={"source": source, "notes": notes, "as_of": as_of})
        out[rid] = (fitted, report)
        # a later recipe that takes a constant from this one sees the new fit
        catalog = replace(catalog, engines={**catalog.engines, rid: fitted})
    return out


def fit_order(recipes: Mapping[str, Recipe]) -> list[str]:
    """Recipe ids with every recipe after those it takes its wave share from."""
    first = [rid for rid, r in recipes.items() if not r.wave_share_from]
    return first + [rid for rid in recipes if rid not in first]
