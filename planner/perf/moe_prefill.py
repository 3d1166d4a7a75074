"""Routed-expert costs of an MoE prefill pass that the plain roofline leaves out (issue #10).

Two terms, both zero for a dense model, so dense predictions are unchanged:

* **Grouped-GEMM tile padding.** An MoE prefill pass runs each routed expert's tokens as one
  group of a grouped GEMM whose rows are computed in whole tiles of `BLOCK_M` rows: vLLM's
  `moe_align_block_size` pads every expert's token count up to a multiple of the kernel's
  BLOCK_SIZE_M (its buffer is `numel + E (block - 1)` rows,
  vllm/model_executor/layers/fused_moe/moe_align_block_size.py), and DeepGEMM's contiguous
  grouped GEMM (used by SGLang and vLLM for DeepSeek-style FP8 MoE on Hopper) requires every
  expert segment aligned to `get_mk_alignment_for_contiguous_layout()`, 128 rows (its SM90
  heuristics, csrc/jit_kernels/heuristics/sm90.hpp, as quoted by users of the kernel). With
  256 experts, top-8 and a 1,024-token prompt an expert sees about 32 tokens, so the tensor
  cores run 4x the useful rows. A pass of T tokens routes T k rows to E_t(T) touched experts
  (`roofline.experts_touched`), m = T k / E_t a touched expert on average. A small count
  computes one whole tile; a larger one wastes half a tile on average, its remainder modulo
  the tile being spread by routing: E_t max(BLOCK_M, m + BLOCK_M / 2) rows. (The two meet at
  m = BLOCK_M / 2, so between half a tile and a tile this counts up to half a tile more than
  one tile; with routing spread some of those experts do run two.) The mean count rounded
  up, E_t BLOCK_M ceil(m / BLOCK_M), would make the cost per token a sawtooth in the pass
  size that the real spread of counts smooths out, and a larger batch could then cost less
  per token.
* **Expert activation traffic.** The routed tokens' activations stream through HBM between
  the kernels of an MoE layer: gather into expert order, the gate/up GEMM's input and
  output, the gated activation, the down GEMM's input and output, and the weighted combine,
  2 d + 4 k d + 6 k f elements a token (16-bit, f = expert FFN width), each kernel reading
  its input and writing its output once. A token's k d-wide rows are whole on every GPU
  that holds a slice of its experts (the down GEMM writes full-width partial sums), the
  f-wide ones split over the tensor-parallel ways of an expert. In a prefill pass of
  thousands of tokens these tensors are hundreds of MB, far beyond L2, and the time adds
  to the pass (separate kernels, bound by bandwidth). A decode step's (B k d x 2 bytes,
  15 MB for DeepSeek-V3 at B = 128) stay in L2, so decode does not carry this term.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.perf import roofline as rf
from planner.schema.model import Model

Array = NDArray[np.float64]

# Rows of a grouped-GEMM tile: DeepGEMM's contiguous-layout alignment (128) and the usual
# M of a 1-CTA Hopper / Blackwell MMA tile; vLLM's BLOCK_SIZE_M is tuned per shape and not
# modelled per engine (an assumption). 0 turns the padding term off.
BLOCK_M = 128

# Whether the expert activation traffic is counted (the experiments in
# benchmarks/moe_prefill_leads.py switch it).
ACTIVATION_TRAFFIC = True


def padded_rows(tokens: ArrayLike, n_experts: int, top_k: int, block_m: int) -> Array:
    """Rows the grouped GEMMs of one MoE layer compute for a pass of `tokens` tokens: each
    touched expert's mean share m = T k / E_t, at least one `block_m` tile, else plus half
    a tile of padding: E_t max(block_m, m + block_m / 2)."""
    tokens = np.asarray(tokens, dtype=float)
    rows = tokens * top_k
    if block_m <= 0:
        return rows
    touched = rf.experts_touched(n_experts, top_k, tokens)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(touched > 0, rows / touched, 0.0)
    return touched * np.maximum(float(block_m), per + block_m / 2.0)


def padding_flops(model: Model, tokens: ArrayLike, pass_tokens: ArrayLike) -> Array:
    """Whole-model FLOPs the tile padding adds to the routed experts of `tokens` prefill
    tokens run in passes of `pass_tokens`: 2 L_moe P_e (padded rows - rows) per pass."""
    n = np.asarray(tokens, dtype=float)
    if model.moe is None:
        return np.zeros_like(n)
    k, e = model.moe.num_experts_per_tok, model.moe.n_routed_experts
    size = np.maximum(np.asarray(pass_tokens, dtype=float), 1.0)
    extra_rows = padded_rows(size, e, k, BLOCK_M) - size * k
    out: Array = 2.0 * model.n_moe_layers * model.params_per_expert * extra_rows * (n / size)
    return out


def activation_bytes_per_gpu(
    model: Model,
    tokens: ArrayLike,
    ep: ArrayLike,
    expert_tp: ArrayLike,
    skew: ArrayLike,
    pp: ArrayLike,
) -> Array:
    """HBM bytes of the routed experts' activations for `tokens` prefill tokens on the
    busiest GPU of a stage: 2 bytes x L_moe / pp x [2 d T / ep + k T skew / ep x
    (4 d + 6 f / s)], with ep expert-parallel ranks and s = `expert_tp` ways per expert."""
    tokens = np.asarray(tokens, dtype=float)
    if model.moe is None or not ACTIVATION_TRAFFIC:
        return np.zeros_like(tokens)
    d, f, k = model.hidden_size, model.moe.moe_intermediate_size, model.moe.num_experts_per_tok
    ep, s = np.asarray(ep, dtype=float), np.asarray(expert_tp, dtype=float)
    rows = k * tokens * np.asarray(skew, dtype=float) / ep
    elements = 2.0 * d * tokens / ep + rows * (4.0 * d + 6.0 * f / s)
    return rf.ACTIVATION_BYTES * model.n_moe_layers * elements / np.asarray(pp, dtype=float)
