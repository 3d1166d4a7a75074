"""Engine profiles: the fitted efficiency constants of the performance model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import BeforeValidator, Field

from planner.schema.bounded import EntryId, between
from planner.schema.common import Strict

FP8_KV_CHECKPOINTS = ("fp8", "fp4")  # quant ids whose ModelOpt checkpoints quantize the KV too

Share = between(0, 1, low_open=True)


def _up_to(high: float, unit: str) -> BeforeValidator:
    return between(0, high, unit=unit)


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

    def default_kv_dtype(self, quant_id: str, quant_default: str, allowed: Sequence[str]) -> str:
        """The KV dtype this engine uses for a checkpoint when none is asked for."""
        fp8_checkpoint = quant_id in FP8_KV_CHECKPOINTS and "fp8" in allowed
        if self.fp8_kv_with_fp8_checkpoint and fp8_checkpoint:
            return "fp8"
        return quant_default

    def for_family(self, family: str) -> Efficiency:
        """The constants for a GPU family, falling back to the default."""
        return self.families.get(family, self.default)
