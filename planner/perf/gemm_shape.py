"""GEMM efficiency by the per-GPU GEMM shape: the output write of a linear layer (issue #10, t10g).

A tensor-parallel linear layer of a prefill pass is one GEMM per GPU of M tokens x N outputs
x K inputs: column-parallel layers (QKV, gate/up) cut N by tp, row-parallel ones (attention
output, down) cut K by tp and write the full N-wide partial sums that the all-reduce then
adds. A Hopper/Blackwell GEMM kernel computes an output tile over the whole K loop on the
tensor cores, then stores it (the epilogue); if the store of a tile is not hidden under the
next tile's main loop, the GEMM takes

    t = 2 M N K / (F eta_pf) + s M N b_out / (BW eta_mem)

(s: the share of the output write not overlapped, `gemm_epilogue`; b_out = 2 bytes of
BF16 output), i.e. an efficiency that saturates in the per-GPU K:

    eta(K) = eta_pf K / (K + k0),   k0 = s (F eta_pf / (BW eta_mem)) b_out / 2

N and M do not enter (with thousands of prompt tokens a pass fills every SM; tile and wave
quantisation are left out, they would make a larger GEMM slower per FLOP at some sizes).
A row-parallel layer at tp 8 has K / 8: Llama-3.1-8B's attention output 512, its down
projection 1,792; Qwen3-32B's 1,024 and 3,200.

Published evidence for the form and the size of k0 (FP8, H800: 1,979 TFLOP/s dense, 3.35 TB/s,
the H100 SXM's compute and HBM): DeepGEMM's README (deepseek-ai/DeepGEMM, Feb 2025 table
"Grouped GEMMs for MoE models (contiguous layout)", as quoted verbatim in
charliedream1/ai_wiki 31_LLM/05_训练/11_加速/03_deepseek/03_deepGemm_MOE_fp8.md) measures
M = 8192 x 4 groups at N 4096, K 7168: 1,297 TFLOPS and at N 7168, K 2048: 1,099 TFLOPS
(M = 4096 x 8: 1,288 and 1,093). K/(K + k0) gives that ratio (0.847) at k0 = 559, against the
card's ridge F/BW = 590 FLOP/byte; with eta(7168) = 1297/1979 the large-K efficiency is
0.71, and k0 = 559 then needs an HBM efficiency of 0.75 in the formula above: the write is
not overlapped (s = 1) at the bandwidth efficiency the decode fits find (0.75-0.81).

The routed experts' GEMM outputs are already counted, as bytes, in
`moe_prefill.activation_bytes_per_gpu`; this module covers the other linear layers (attention
projections, dense FFNs, shared experts). The LM head runs on one token a prompt: left out.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.perf import roofline as rf
from planner.schema.model import Model

Array = NDArray[np.float64]


def output_elements_per_token(model: Model, tp: ArrayLike) -> Array:
    """Output elements one GPU writes per prompt token over all layers' linear layers other
    than the routed experts: column-parallel outputs N / tp, row-parallel outputs N whole."""
    t = np.asarray(tp, dtype=float)
    d, h = model.hidden_size, model.num_attention_heads
    if model.mla is None:
        col = (h + 2 * model.num_key_value_heads) * model.head_dim  # fused QKV
    else:
        mla = model.mla
        qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        down = (mla.q_lora_rank or 0) + mla.kv_lora_rank + mla.qk_rope_head_dim
        up = h * qk + h * (mla.qk_nope_head_dim + mla.v_head_dim)
        col = down + up  # the low-rank maps counted as split, as the FLOP split does
    attention = model.num_hidden_layers * (col / t + d)  # + the output projection, row
    gate = 2 if model.gated_ffn else 1
    dense = model.n_dense_layers * (gate * model.intermediate_size / t + d)
    shared = 0.0 * t
    if model.moe is not None and model.moe.n_shared_experts > 0:
        inner = model.moe.shared_intermediate_size or model.moe.moe_intermediate_size
        width = model.moe.n_shared_experts * inner
        shared = model.n_moe_layers * (gate * width / t + d)
    out: Array = attention + dense + shared
    return out


def epilogue_bytes_per_gpu(
    model: Model, tokens: ArrayLike, tp: ArrayLike, attention_ranks: ArrayLike, pp: ArrayLike
) -> Array:
    """HBM bytes the linear layers of `tokens` prefill tokens write on one GPU of a stage:
    the tokens split over the attention ranks, the layers over pp stages, 16-bit outputs."""
    n = np.asarray(tokens, dtype=float) / np.asarray(attention_ranks, dtype=float)
    per_token = output_elements_per_token(model, tp)
    return rf.ACTIVATION_BYTES * n * per_token / np.asarray(pp, dtype=float)


def shape_efficiency(k_per_gpu: ArrayLike, ridge: ArrayLike, share: ArrayLike = 1.0) -> Array:
    """The factor K / (K + k0) on the prefill efficiency of one GEMM with `k_per_gpu` inputs
    a GPU, k0 = share x ridge x b_out / 2, `ridge` = F eta_pf / (BW eta_mem) FLOP/byte: the
    same time as the additive output write of `epilogue_bytes_per_gpu`."""
    k = np.asarray(k_per_gpu, dtype=float)
    k0 = np.asarray(share, float) * np.asarray(ridge, float) * rf.ACTIVATION_BYTES / 2.0
    out: Array = k / (k + k0)
    return out
