"""Engine profiles: the fitted efficiency constants of the performance model."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from planner.schema.common import Strict

FP8_KV_CHECKPOINTS = ("fp8", "fp4")  # quant ids whose ModelOpt checkpoints quantize the KV too


class Efficiency(Strict):
    """Achievable fractions of peak and fixed costs for one engine on one GPU family."""

    eta_mem: float = Field(gt=0, le=1, description="achieved fraction of HBM bandwidth")
    eta_compute_decode: float = Field(gt=0, le=1, description="fraction of dense peak in decode")
    eta_compute_prefill: float = Field(gt=0, le=1, description="fraction of peak in prefill")
    eta_kv: float = Field(
        default=1.0, gt=0, le=1, description="attention kernels' KV read efficiency vs GEMV"
    )
    allreduce_latency_us: float = Field(ge=0, le=1000, description="per collective, alpha")
    step_overhead_ms: float = Field(ge=0, le=100, description="per decode step fixed cost")
    prefill_overhead_ms: float = Field(default=0.0, ge=0, le=1000)
    mem_util: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="the engine's memory fraction: vLLM gpu_memory_utilization (of total), "
        "SGLang mem_fraction_static (of total, weights + KV), TensorRT-LLM "
        "kv_cache_free_gpu_mem_fraction (of the memory free after weights)",
    )
    runtime_reserve_gb: float = Field(
        default=0.0, ge=0, description="runtime memory on top of the engine's own budget"
    )
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
        default=8192, ge=256, description="tokens per chunked-prefill pass (max_num_batched_tokens)"
    )


class EngineProfile(Strict):
    """A serving engine's constants per GPU family, with a default for unknown families."""

    id: str
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
