"""The candidate table's columns, declared once: name -> (unit, meaning)."""

from __future__ import annotations

INPUT_COLUMNS: dict[str, tuple[str, str]] = {
    "gpu": ("id", "GPU catalog id"),
    "tp": ("GPUs", "tensor-parallel degree: GPUs per replica"),
    "quant": ("id", "weight quantization scheme"),
    "kv_dtype": ("id", "KV-cache dtype"),
    "compute_dtype": ("id", "dtype the matrix math runs at on this GPU"),
    "batch": ("sequences", "concurrent sequences per replica (max concurrency)"),
    "input_len": ("tokens", "prompt tokens per request"),
    "output_len": ("tokens", "generated tokens per request"),
    "price_usd_per_gpu_hour": ("$/GPU-h", "price per GPU-hour used"),
    "price_provider": ("name", "whose price it is"),
}

OUTPUT_COLUMNS: dict[str, tuple[str, str]] = {
    "weights_per_gpu_gb": ("GB", "weights held per GPU"),
    "kv_cache_per_gpu_gb": ("GB", "KV cache per GPU at this batch, full context"),
    "activations_per_gpu_gb": ("GB", "activation workspace and logits per GPU"),
    "memory_per_gpu_gb": ("GB", "total memory per GPU at this batch"),
    "memory_usable_gb": ("GB", "memory the engine may use (capacity x mem_util)"),
    "fits": ("bool", "the batch fits in memory"),
    "memory_shortfall_gb": ("GB", "how much memory is missing per GPU (0 if it fits)"),
    "max_batch": ("sequences", "largest batch that fits"),
    "bytes_weights_per_step_gb": ("GB", "weight bytes read per decode step, per GPU"),
    "bytes_kv_per_step_gb": ("GB", "KV bytes read per decode step, per GPU"),
    "flops_per_step_tflop": ("TFLOP", "FLOPs per decode step, per GPU"),
    "t_weights_ms": ("ms", "time to read the weights"),
    "t_kv_ms": ("ms", "time to read the KV cache"),
    "t_memory_ms": ("ms", "memory time: weights + KV"),
    "t_compute_ms": ("ms", "compute time of the decode step"),
    "t_comm_ms": ("ms", "tensor-parallel all-reduce time per step"),
    "t_overhead_ms": ("ms", "fixed per-step cost: launch, scheduling, sampling"),
    "tpot_step_ms": ("ms", "one decode step: max(memory, compute) + comm + overhead"),
    "bound": ("", "memory or compute: which roofline bound holds in decode"),
    "intensity_flop_per_byte": ("FLOP/B", "arithmetic intensity of the decode step"),
    "ridge_flop_per_byte": ("FLOP/B", "ridge point of this GPU at this dtype"),
    "prefill_ms": ("ms", "time to prefill one request alone"),
    "prefill_share_ms": ("ms", "one request's share of chunked prefill passes on a busy replica"),
    "prefill_bound": ("", "memory or compute: which bound holds in prefill"),
    "tpot_ms": ("ms", "TPOT users see: step time plus prefill interruptions"),
    "ttft_ms": ("ms", "time to first token at the planned utilisation (statistic as asked)"),
    "ttft_unloaded_ms": ("ms", "time to first token on an idle replica"),
    "requests_per_s": ("req/s", "requests per second per replica at full load"),
    "capacity_requests_per_s": ("req/s", "requests per second per replica at planned load"),
    "throughput_tok_s": ("tok/s", "output tokens per second per replica at full load"),
    "total_tok_s": ("tok/s", "input + output tokens per second per replica"),
    "cost_per_hour_usd": ("$/h", "replica cost per hour (tp x GPU price)"),
    "cost_per_request_usd": ("$", "cost per request at planned load"),
    "cost_per_1k_output_tokens_usd": ("$", "cost per 1K output tokens at planned load"),
}

ALL_COLUMNS: dict[str, tuple[str, str]] = {**INPUT_COLUMNS, **OUTPUT_COLUMNS}
