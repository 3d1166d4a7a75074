"""SGLang's default memory fraction by GPU and layout (issue #10: each engine's memory budget
as that engine computes it).

When `--mem-fraction-static` is not given, SGLang (python/sglang/srt/server_args.py,
`ServerArgs._handle_gpu_memory_settings`; sgl-project/sglang PR #10975, merged 2025-09-27, with
the 512 MiB base and tp x pp / 8 GiB of PR #11076) picks `chunked_prefill_size` and
`cuda_graph_max_bs` by the GPU's memory, reserves for activations and CUDA graphs

    512 MiB + 1.5 MiB x max(chunk, 2048) + 2 MiB x cuda_graph_max_bs + tp x pp / 8 GiB
    (+ 3 MiB x cuda_graph_max_bs x dp with attention DP, 1.5 MiB more above 300 sequences),
    at least 10 GiB on GPUs of more than 60 GiB,

and sets mem_fraction_static = (memory - reserve) / memory, rounded to 3 digits: 0.835 on
an H100 SXM at tp 1 (a user measured 0.828 with Qwen3-32B, sgl-project/sglang#29092), 0.907
on an H200, 0.857 on a B200. Before that PR SGLang took a table by tp (0.88 at tp 1, 0.81 at
tp 8), the flat 0.88 this project assumed until session 37.
"""

from __future__ import annotations

GIB_MIB = 1024.0
# (memory below GiB, chunked_prefill_size, cuda_graph_max_bs at tp < 4, at tp >= 4): the
# CUDA tiers of _handle_gpu_memory_settings (its NPU tiers are not planned here)
SGLANG_TIERS: tuple[tuple[float, int, int, int], ...] = (
    (20.0, 2048, 8, 8),  # T4, 4080
    (35.0, 2048, 24, 80),  # A10, 4090, 5090
    (60.0, 4096, 32, 160),  # A100 40GB, L40
    (160.0, 8192, 256, 512),  # H100, A100 80GB, H20, H200
    (float("inf"), 16384, 512, 512),  # B200, MI300
)
SGLANG_SOURCE = (
    "sgl-project/sglang python/sglang/srt/server_args.py "
    "ServerArgs._handle_gpu_memory_settings (PR #10975, 2025-09-27; PR #11076)"
)


def sglang_chunk_tiers() -> tuple[dict, ...]:
    """SGLang's chunked_prefill_size by GPU memory as an engine profile's
    `prefill_chunk_tiers` (the lowest GiB of each step and its tokens), from SGLANG_TIERS."""
    tiers: list[dict] = []
    low = 0.0
    for below_gib, chunk, _, _ in SGLANG_TIERS:
        if not tiers or tiers[-1]["tokens"] != chunk:
            tiers.append({"min_memory_gib": low, "tokens": chunk})
        low = below_gib
    return tuple(tiers)


def sglang_tier(memory_mib: float, tp: int) -> tuple[int, int]:
    """SGLang's default (chunked_prefill_size, cuda_graph_max_bs) on a GPU of `memory_mib`
    MiB for a worker of `tp` GPUs a pipeline stage."""
    for below_gib, chunk, graph_small, graph_large in SGLANG_TIERS:
        if memory_mib < below_gib * GIB_MIB:
            return chunk, graph_small if tp < 4 else graph_large
    raise AssertionError("the last tier has no upper bound")


def sglang_reserve_mib(memory_mib: float, tp: int, pp: int = 1, dp: int = 1) -> float:
    """MiB SGLang keeps outside mem_fraction_static for activations and CUDA graphs; `tp` is
    SGLang's tp_size (every GPU of a pipeline stage, attention-DP ranks included) and `dp`
    its attention-DP size (1 without)."""
    chunk, graphs = sglang_tier(memory_mib, tp)
    reserve = 512.0 + max(chunk, 2048) * 1.5 + graphs * 2.0 + tp * pp / 8.0 * GIB_MIB
    if dp > 1:
        reserve += graphs * dp * 3.0
        if graphs > 300:
            reserve += graphs * dp * 1.5
    if memory_mib > 60 * GIB_MIB:
        reserve = max(reserve, 10 * GIB_MIB)
    return reserve


def sglang_mem_fraction(memory_bytes: float, tp: int, pp: int = 1, dp: int = 1) -> float:
    """SGLang's default mem_fraction_static on a GPU of `memory_bytes` (the device's own
    total, as torch reports it) for a replica of tp x dp GPUs a stage and pp stages; 0 where
    the reserve exceeds the card (wide attention-DP layouts: SGLang would not start without
    a --mem-fraction-static of the user's, which plans do not take)."""
    memory_mib = memory_bytes / 2.0**20
    reserve = sglang_reserve_mib(memory_mib, tp * dp, pp, dp)
    return max(round((memory_mib - reserve) / memory_mib, 3), 0.0)
