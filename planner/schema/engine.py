"""Engine profiles: the fitted efficiency constants of the performance model."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from planner.schema.bounded import EntryId, between
from planner.schema.common import Strict

FP8_KV_CHECKPOINTS = ("fp8", "fp4")  # quant ids whose ModelOpt checkpoints quantize the KV too

Share = between(0, 1, low_open=True)


def _up_to(high: float, unit: str) -> BeforeValidator:
    return between(0, high, unit=unit)


def _optional_up_to(high: float, unit: str) -> BeforeValidator:
    """`_up_to`, with None (not given) let through."""
    check = _up_to(high, unit).func

    def optional(value: Any) -> float | None:
        return None if value is None else check(value)  # type: ignore[call-arg]

    return BeforeValidator(optional)


class Efficiency(Strict):
    """Achievable fractions of peak and fixed costs for one engine on one GPU family."""

    eta_mem: Annotated[float, Share, Field(description="achieved fraction of HBM bandwidth")]
    eta_compute_decode: Annotated[
        float, Share, Field(description="fraction of dense peak in decode")
    ]
    eta_compute_prefill: Annotated[float, Share, Field(description="fraction of peak in prefill")]
    eta_kv: Annotated[
        float, Share, Field(description="attention kernels' KV read efficiency vs GEMV")
    ] = 1.0
    allreduce_latency_us: Annotated[
        float, _up_to(1000, "us"), Field(description="per collective, alpha")
    ]
    step_overhead_ms: Annotated[
        float, _up_to(100, "ms"), Field(description="per decode step fixed cost")
    ]
    prefill_overhead_ms: Annotated[float, _up_to(1000, "ms")] = 0.0
    mem_util: Annotated[
        float,
        Share,
        Field(
            description="the engine's memory fraction: vLLM gpu_memory_utilization (of total), "
            "SGLang mem_fraction_static (of total, weights + KV), TensorRT-LLM "
            "kv_cache_free_gpu_mem_fraction (of the memory free after weights)"
        ),
    ] = 0.9
    runtime_reserve_gb: Annotated[
        float,
        _up_to(10_000, "GB"),
        Field(description="runtime memory on top of the engine's own budget"),
    ] = 0.0
    kv_budget_of_free: bool = Field(
        default=False,
        description="mem_util is a fraction of the memory left after weights and activations "
        "(TensorRT-LLM), not of the total",
    )
    mem_util_by_gpu: bool = Field(
        default=False,
        description="mem_util is the engine's own default for each GPU and layout (SGLang's "
        "mem_fraction_static from the GPU's memory, perf.engine_memory); the profile's "
        "mem_util is then only its fallback",
    )
    activations_in_budget: bool = Field(
        default=True,
        description="activation workspace comes out of the mem_util budget (vLLM profiles "
        "it inside gpu_memory_utilization); False for SGLang's static pool",
    )
    prefill_chunk_tokens: int = Field(
        default=8192,
        ge=256,
        le=1_048_576,
        description="tokens per chunked-prefill pass (max_num_batched_tokens)",
    )
    # --- issue #10 (fidelity): per-sequence step cost, per-request latency, benchmark waves
    step_per_seq_us: Annotated[
        float,
        _up_to(10_000, "us"),
        Field(description="decode step cost per sequence in the batch (sampling, scheduling)"),
    ] = 0.0
    request_overhead_ms: Annotated[
        float,
        _up_to(10_000, "ms"),
        Field(description="per-request latency in TTFT (HTTP, tokenisation, admission)"),
    ] = 0.0
    benchmark_wave_share: Annotated[
        float,
        between(0, 1),
        Field(
            description="share of a closed-loop benchmark's requests that arrive together "
            "(its first round); calibration only, plans use the steady state"
        ),
    ] = 0.0
    # --- issue #10 (fidelity, remaining): admission reserves the whole output's KV
    kv_reserve_output: bool = Field(
        default=False,
        description="a sequence is admitted only with KV for all of I + O tokens (TensorRT-LLM's "
        "default GUARANTEED_NO_EVICT capacity scheduler), not the I + O/2 a paged cache holds "
        "on average",
    )
    # --- issue #10 (s39): an overlap scheduler's launched step, in TTFT
    scheduler_lag_steps: Annotated[
        float,
        between(0, 4, unit="steps"),
        Field(
            description="engine iterations a new request waits beyond the one in flight: 1 "
            "where an overlap scheduler launches step n+1 before it processes step n's outputs "
            "(TensorRT-LLM's PyTorch backend, on by default), so an arrival joins the step "
            "after the launched one"
        ),
    ] = 0.0
    # --- issue #10 (s40): a sequence's decode cost in every layer, not once a step
    step_seq_layer_us: Annotated[
        float,
        _up_to(1_000, "us"),
        Field(
            description="decode step cost per sequence per layer of the stage (attention and "
            "KV-append work a sequence costs each layer beyond its KV bytes); TensorRT-LLM's, "
            "whose overlap scheduler hides the per-step host work step_per_seq_us stands for"
        ),
    ] = 0.0
    # --- issue #10 (t10v, vLLM MoE decode): fixed cost per MoE layer a decode step
    moe_layer_us: Annotated[
        float,
        _up_to(10_000, "us"),
        Field(
            description="decode step cost per MoE layer beyond its bytes and FLOPs (router, "
            "top-k, token permute and grouped-GEMM launches; 0 for dense models)"
        ),
    ] = 0.0
    # --- issue #10 (ep-lead): expert parallel across scale-up domains, per engine
    ep_cross_node_layer_us: Annotated[
        float,
        _up_to(10_000, "us"),
        Field(
            description="fixed cost per MoE layer when the EP group spans scale-up domains "
            "(nodes), beyond the all-to-all's NIC latency and bytes; paid by decode steps and "
            "prefill passes (406: the median over TensorRT-LLM's wide-EP rows, "
            "perf.parallel.EP_CROSS_NODE_LAYER_S)"
        ),
    ] = 406.0
    ep_cross_node_token_us: Annotated[
        float,
        _up_to(10_000, "us"),
        Field(
            description="decode cost per MoE layer and per token of the stage's micro-batch "
            "(all attention-DP ranks' tokens) when the EP group spans nodes; 0 unless fitted"
        ),
    ] = 0.0
    # --- issue #11 (t10s): the fixed cost of one more forward pass inside a decode step
    draft_forward_ms: Annotated[
        float | None,
        _optional_up_to(100, "ms"),
        Field(
            description="fixed cost of each draft forward a speculative decode step runs "
            "(CUDA-graph replay, its input and attention-metadata preparation, its sampling); "
            "the step's scheduling, output processing and the target's forward stay in "
            "step_overhead_ms, paid once a step. At most step_overhead_ms (a part of it). "
            "None: no per-forward figure sourced for the engine, a draft forward pays the "
            "whole step_overhead_ms. Not fitted (no speculative rows in the calibration sets)"
        ),
    ] = None
    # --- issue #10 (t10p): host-bound eager prefill passes
    prefill_layer_us: Annotated[
        float,
        _up_to(100_000, "us"),
        Field(
            description="host time per layer of a prefill (context or mixed) pass the engine "
            "runs eagerly, without a CUDA graph: a pass takes at least layers x this, "
            "whatever its GPU work (0: the pass is GPU-bound, e.g. piecewise CUDA graphs)"
        ),
    ] = 0.0
    # --- issue #10 (t10g): GEMM efficiency by the per-GPU shape (perf/gemm_shape.py)
    gemm_k0_ridge: Annotated[
        float,
        between(0, 10),
        Field(
            description="prefill GEMMs run at eta_compute_prefill x K / (K + k0) in their "
            "per-GPU K (row-parallel layers: K / tp), k0 this x the card's ridge F / BW "
            "(DeepGEMM FP8 on H800: 1.22); 0: every GEMM at eta_compute_prefill"
        ),
    ] = 0.0


GIB = 2**30


class ChunkTier(Strict):
    """One step of an engine's batch defaults by device memory (issue #10): GPUs with at
    least `min_memory_gib` GiB (and not of `except_families`) prefill `tokens` a pass and,
    where given, run up to `max_num_seqs` sequences (vLLM: 1024 on 70 GiB and more)."""

    min_memory_gib: Annotated[float, between(0, 100_000, unit="GiB")]
    tokens: int = Field(ge=256, le=1_048_576)
    except_families: tuple[str, ...] = ()
    max_num_seqs: int | None = Field(
        default=None, ge=1, description="the engine's default on these GPUs, else the profile's"
    )


class ErrorStat(Strict):
    """Absolute % error of one metric over the rows of one evaluation: median, 90th
    percentile and how many rows; and the margin that covers the prediction's unsafe side in
    90% of them (what `search.prediction_margin: p90` plans to)."""

    median_pct: float = Field(ge=0)
    p90_pct: float = Field(ge=0)
    rows: int = Field(ge=1)
    margin_p90_pct: float = Field(
        ge=0,
        description="90th percentile of the unsafe ratio less 1, in %, floored at 0: of "
        "measured / predicted for a latency (TPOT, TTFT: a measurement over its prediction), "
        "of predicted / measured for throughput (a prediction over its measurement); so in 90% "
        "of rows a latency measured at most predicted x (1 + m) and a throughput at least "
        "predicted / (1 + m)",
    )


class FoldErrors(Strict):
    """One evaluation's errors per metric (None: no row of it measures the metric)."""

    tpot: ErrorStat | None = None
    ttft: ErrorStat | None = None
    throughput: ErrorStat | None = None


class ProfileAccuracy(Strict):
    """How well the profile predicts public measurements, in and out of sample (issue #10),
    as `benchmarks/accuracy.py --record` measured it; the digests tie the record to the
    constants and the data it was measured with, so a refit without a new record is caught."""

    as_of: str = Field(min_length=4)
    source: str = Field(min_length=3)
    constants_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    data_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    models: tuple[str, ...] = Field(description="catalog models of the rows it is fitted on")
    gpus: tuple[str, ...] = Field(description="catalog GPUs of the rows it is fitted on")
    in_sample: FoldErrors
    leave_one_model_out: FoldErrors | None = None
    leave_one_gpu_out: FoldErrors | None = None
    leave_one_family_out: FoldErrors | None = Field(
        default=None, description="a whole GPU family left out (strict: no engine's rows of it)"
    )

    def evaluations(self) -> dict[str, FoldErrors | None]:
        """Each evaluation by the name the folds go by (None: not measured)."""
        return {
            "in sample": self.in_sample,
            "leave-one-model-out": self.leave_one_model_out,
            "leave-one-GPU-out": self.leave_one_gpu_out,
            "leave-one-GPU-family-out": self.leave_one_family_out,
        }


class EngineProfile(Strict):
    """A serving engine's constants per GPU family, with a default for unknown families."""

    id: EntryId
    name: str
    source: str = Field(min_length=3)
    as_of: str = Field(min_length=4)
    notes: str | None = None
    max_num_seqs: int = Field(
        default=256, ge=1, description="sequences the scheduler runs at once (engine default)"
    )
    fp8_kv_with_fp8_checkpoint: bool = Field(
        default=False,
        description="an FP8/FP4 checkpoint brings an FP8 KV cache by default (ModelOpt "
        "checkpoints on TensorRT-LLM); else the KV cache is 16-bit unless asked",
    )
    default: Efficiency
    families: dict[str, Efficiency] = {}
    # --- issue #10 (fidelity, remaining): scheduler facts of the engine, not fitted
    mixes_prefill: bool = Field(
        default=True,
        description="prefill chunks ride in the decode steps (vLLM V1, TensorRT-LLM); SGLang "
        "runs prefill batches on their own, pausing decode, so a closed loop's rounds stay "
        "in step",
    )
    chunked_prefill: bool = Field(
        default=True,
        description="a pass may hold part of a prompt (chunked prefill: vLLM V1, SGLang); "
        "TensorRT-LLM's enable_chunked_prefill defaults to false, so a pass packs whole "
        "prompts only",
    )
    prefill_chunk_tiers: tuple[ChunkTier, ...] = Field(
        default=(),
        description="the engine's default prefill chunk by GPU memory; empty: the constants' "
        "prefill_chunk_tokens",
    )
    gpu_families: tuple[str, ...] = Field(
        default=(),
        description="the GPU families (catalogs/gpus `family`) the engine runs on, from its "
        "own documentation; empty: every family",
    )
    gpu_families_source: str | None = Field(
        default=None, description="where the engine documents the hardware it runs on"
    )
    quants: tuple[str, ...] = Field(
        default=(),
        description="the quantizations (catalogs/quants ids) whose checkpoints the engine "
        "loads and runs, from its own documentation; empty: every quant",
    )
    quants_source: str | None = Field(
        default=None, description="where the engine documents the formats it loads"
    )
    accuracy: ProfileAccuracy | None = Field(
        default=None,
        description="its measured prediction error (None: never measured, e.g. a profile "
        "`planner calibrate` wrote, which prints its own in-sample error)",
    )

    def constants_sha256(self) -> str:
        """A digest of the fitted constants (default and families), which the accuracy
        record names: another digest means the constants changed after it was measured."""
        doc = {
            "default": self.default.model_dump(mode="json"),
            "families": {k: v.model_dump(mode="json") for k, v in self.families.items()},
        }
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def runs_on(self, family: str) -> bool:
        """Whether the engine runs on GPUs of this family (TensorRT-LLM: NVIDIA only)."""
        return not self.gpu_families or family in self.gpu_families

    def hardware(self) -> str:
        """The GPU families the engine documents running on, and where (for messages)."""
        families = ", ".join(self.gpu_families)
        return self._documented(f"runs on the {families} GPU families", self.gpu_families_source)

    def runs_quant(self, quant_id: str) -> bool:
        """Whether the engine loads checkpoints of this quant (llama.cpp: GGUF only)."""
        return not self.quants or quant_id in self.quants

    def formats(self) -> str:
        """The quants the engine documents loading, and where (for messages)."""
        return self._documented(f"runs the {', '.join(self.quants)} quants", self.quants_source)

    def _documented(self, what: str, source: str | None) -> str:
        """'<engine> <what> (<where its documentation says so>)', for messages."""
        return f"{self.name.split(' (')[0]} {what} ({(source or '').split(' ')[0]})"

    def default_kv_dtype(self, quant_id: str, quant_default: str, allowed: Sequence[str]) -> str:
        """The KV dtype this engine uses for a checkpoint when none is asked for."""
        fp8_checkpoint = quant_id in FP8_KV_CHECKPOINTS and "fp8" in allowed
        if self.fp8_kv_with_fp8_checkpoint and fp8_checkpoint:
            return "fp8"
        return quant_default

    def for_family(self, family: str) -> Efficiency:
        """The constants for a GPU family, falling back to the default."""
        return self.families.get(family, self.default)

    def _tier(self, memory_bytes: float, family: str) -> ChunkTier | None:
        """The highest tier a GPU of `memory_bytes` reaches and its family is not excluded
        from (None: no tier applies)."""
        found: ChunkTier | None = None
        for tier in self.prefill_chunk_tiers:
            reached = memory_bytes >= tier.min_memory_gib * GIB
            higher = found is None or tier.min_memory_gib > found.min_memory_gib
            if reached and family not in tier.except_families and higher:
                found = tier
        return found

    def chunk_tokens(self, memory_bytes: float, family: str, fallback: int) -> int:
        """The engine's default prefill chunk on a GPU of `memory_bytes` (issue #10): its
        tier's, else `fallback`."""
        tier = self._tier(memory_bytes, family)
        return fallback if tier is None else tier.tokens

    def max_num_seqs_on(self, memory_bytes: float, family: str) -> int:
        """The engine's default max_num_seqs on a GPU of `memory_bytes`: its tier's where the
        tier sets one (vLLM's get_batch_defaults: 1024 on 70 GiB and more, not A100), else
        the profile's."""
        tier = self._tier(memory_bytes, family)
        if tier is None or tier.max_num_seqs is None:
            return self.max_num_seqs
        return tier.max_num_seqs

    def for_gpu(self, family: str, memory_bytes: float) -> Efficiency:
        """The family's constants with the engine's prefill chunk for that GPU's memory."""
        eff = self.for_family(family)
        chunk = self.chunk_tokens(memory_bytes, family, eff.prefill_chunk_tokens)
        if chunk == eff.prefill_chunk_tokens:
            return eff
        return eff.model_copy(update={"prefill_chunk_tokens": chunk})
