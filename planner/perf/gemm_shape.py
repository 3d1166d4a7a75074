"""GEMM efficiency by the per-GPU GEMM shape: prefill GEMMs with a short K (issue #10, t10g).

A tensor-parallel linear layer of a prefill pass is one GEMM per GPU of M tokens x N outputs
x K inputs: column-parallel layers (QKV, gate/up) cut N by tp, row-parallel ones (attention
output, down) cut K by tp and write the full N-wide partial sums that the all-reduce then
adds. A Hopper GEMM kernel runs the whole K loop of an output tile on the tensor cores, then
stores the tile (the epilogue: scaling, conversion, the store of M x N 16-bit outputs); the
part of that per-tile cost not hidden under the main loop makes a short-K GEMM run below
the rate of a long-K one of the same FLOPs. With k0 = c F / BW (c in units of the card's
ridge, F the GEMM's dense peak, BW its HBM bandwidth):

    eta(K) = eta_pf K / (K + k0)
    t = 2 M N K / (F eta_pf) + c (2 M N) / (BW eta_pf)      (the same time, additively)

The added time is c x the 16-bit output bytes at the prefill efficiency of the bandwidth,
whatever the compute dtype, so it weighs twice as much against an FP8 GEMM's main loop as
a BF16 one's. N and M do not enter: with thousands of prompt tokens a pass fills every SM
(tile and wave quantisation are left out; they would make a larger GEMM slower per FLOP at
some sizes). A row-parallel layer at tp 8 has K / 8: Llama-3.1-8B's attention output 512,
its down projection 1,792; Qwen3-32B's 1,024 and 3,200.

c is sourced, not fitted to the serving rows: DeepGEMM's README (deepseek-ai/DeepGEMM,
February 2025, "Normal GEMMs for dense models", FP8 with fine-grained scaling, BF16 output,
H800 with NVCC 12.8: the H100 SXM's 1,979 TFLOP/s dense FP8 and 3.35 TB/s HBM3; the table as
quoted verbatim in charliedream1/ai_wiki 31_LLM/05_训练/11_加速/03_deepseek/
03_deepGemm_MOE_fp8.md, since the current README no longer carries it) measures at
M = 4096: K 512 (N 32768) 590 TFLOPS, K 1536 (N 24576) 990, K 2048 (N 7168) 1,025,
K 7168 (N 4096) 1,304, K 16384 (N 7168) 1,358. A least-squares fit of a K / (K + k0) in log
gives a = 1,422 TFLOPS (72% of peak) and k0 = 720 FLOP/byte, every point within 3%:
c = 720 / (1979 / 3.35) = 1.22 (GEMM_K0_RIDGE). The N = 2112 row (1,058 TFLOPS at K 7168)
shows a further N effect at small N that is left out.

Routed experts take the same factor (`routed_output_bytes_per_gpu`): an expert split s ways
(moe_tp) has K = f / s in its down projection, 192 for Qwen3-235B's 1,536-wide experts at
moe_tp 8, where K / (K + k0) is 0.21 in FP8 (an extrapolation below the table's K 512).
Their activations' traffic between kernels stays in `moe_prefill.activation_bytes_per_gpu`.
The LM head runs on one token a prompt: left out.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.perf import roofline as rf
from planner.schema.model import Model

Array = NDArray[np.float64]

# k0 / (F / BW) of DeepGEMM's FP8 normal GEMMs on H800 (module docstring): 720 / 590.7.
GEMM_K0_RIDGE = 1.22
GEMM_K0_SOURCE = (
    "DeepGEMM README (Feb 2025), normal FP8 GEMMs on H800 at M 4096, K 512-16384: "
    "TFLOPS = 1422 K / (K + 720), k0 = 1.22 x F/BW"
)


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


def output_bytes_per_gpu(
    model: Model, tokens: ArrayLike, tp: ArrayLike, attention_ranks: ArrayLike, pp: ArrayLike
) -> Array:
    """16-bit output bytes the linear layers of `tokens` prefill tokens write on one GPU of
    a stage: the tokens split over the attention ranks, the layers over pp stages."""
    n = np.asarray(tokens, dtype=float) / np.asarray(attention_ranks, dtype=float)
    per_token = output_elements_per_token(model, tp)
    out: Array = rf.ACTIVATION_BYTES * n * per_token / np.asarray(pp, dtype=float)
    return out


def routed_output_bytes_per_gpu(
    model: Model,
    tokens: ArrayLike,
    ep: ArrayLike,
    expert_tp: ArrayLike,
    skew: ArrayLike,
    pp: ArrayLike,
) -> Array:
    """16-bit output bytes the routed experts' GEMMs of `tokens` prefill tokens write on the
    busiest GPU of a stage: k T skew / ep routed rows, each (gate x f / s) wide out of the
    gate/up GEMM and d wide (partial sums) out of the down GEMM; 0 for a dense model."""
    tokens = np.asarray(tokens, dtype=float)
    if model.moe is None:
        return np.zeros_like(tokens)
    gate = 2 if model.gated_ffn else 1
    f, k = model.moe.moe_intermediate_size, model.moe.num_experts_per_tok
    rows = k * tokens * np.asarray(skew, dtype=float) / np.asarray(ep, dtype=float)
    width = gate * f / np.asarray(expert_tp, dtype=float) + model.hidden_size
    out: Array = rf.ACTIVATION_BYTES * model.n_moe_layers * rows * width / np.asarray(pp, float)
    return out


def short_k_s(
    out_bytes: ArrayLike, bandwidth: ArrayLike, eta_prefill: ArrayLike, k0_ridge: ArrayLike
) -> Array:
    """Seconds a GEMM's short K adds beyond 2 M N K / (F eta_pf): c (2 M N) / (BW eta_pf),
    `out_bytes` = 2 M N, c = `k0_ridge` (0: off)."""
    c = np.asarray(k0_ridge, dtype=float)
    return c * rf.latency_memory(out_bytes, bandwidth, eta_prefill)


def shape_efficiency(k_per_gpu: ArrayLike, ridge: ArrayLike, k0_ridge: ArrayLike) -> Array:
    """The factor K / (K + k0) on the prefill efficiency of one GEMM with `k_per_gpu` inputs
    a GPU, k0 = `k0_ridge` x `ridge` (F / BW, FLOP/byte): what `short_k_s` adds, as a rate."""
    k = np.asarray(k_per_gpu, dtype=float)
    out: Array = k / (k + np.asarray(k0_ridge, float) * np.asarray(ridge, float))
    return out
