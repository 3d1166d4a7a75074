"""Evaluate the candidate grid: memory, decode step, prefill, serving rate, TTFT and cost.

One pass of numpy over the grid built by `candidates.build_grid`; returns the same frame
with the columns of `columns.MODEL_COLUMNS` added, built by that declaration.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.perf import collectives, columns, disagg
from planner.perf import gemm_shape as gs
from planner.perf import memory as mem
from planner.perf import moe_prefill as moe
from planner.perf import parallel as par
from planner.perf import queueing as q
from planner.perf import roofline as rf
from planner.perf import sharding as sh
from planner.perf import speculative as sp
from planner.perf.table import Coded, Frame, Table, mapped, values
from planner.schema.model import Model
from planner.schema.quant import KV_BYTES

GB = 1e9


def _col(df: Frame, name: str) -> np.ndarray:
    return values(df, name, float)


def collective_alpha_s(df: Frame) -> np.ndarray:
    """Per-collective latency (s): the engine's base plus the ring hops of the link (#10)."""
    return collectives.allreduce_latency_s(
        _col(df, "tp"), _col(df, "eff_allreduce_latency_us"), _col(df, "link_hop_latency_us")
    )


def _bound(t_memory: np.ndarray, t_compute: np.ndarray) -> Coded:
    """Which roofline bound holds, as a coded column (codes, not a string per row)."""
    return Coded(rf.roofline_bound(t_memory, t_compute), np.asarray(rf.BOUNDS, dtype=object))


def bytes_weights_per_step(model: Model, df: Frame, tokens: np.ndarray) -> np.ndarray:
    """Weight bytes one forward pass of `tokens` tokens reads, whole model: every block
    weight, only the experts those tokens touch, and the LM head (not the input table)."""
    wb, eb = _col(df, "weight_bytes_per_param"), _col(df, "embedding_bytes_per_param")
    block: float | np.ndarray = model.params_total - model.params_embedding - model.params_lm_head
    if model.moe is not None:
        all_experts = model.n_moe_layers * model.moe.n_routed_experts * model.params_per_expert
        touched = rf.experts_touched(
            model.moe.n_routed_experts, model.moe.num_experts_per_tok, tokens
        )
        block = block - all_experts + model.n_moe_layers * touched * model.params_per_expert
    head = model.params_lm_head or model.params_embedding
    return block * wb + head * eb


def attention_flops_decode(model: Model, batch: np.ndarray, context: np.ndarray) -> np.ndarray:
    """Score and value products of one decode step: 4 * B * h * d_h * positions."""
    window = model.sliding_window.window if model.sliding_window else 0
    pos = rf.kv_positions(context, model.n_global_layers, model.n_sliding_layers, window)
    return 4.0 * batch * model.num_attention_heads * model.head_dim * pos


def flops_prefill_per_request(
    model: Model, input_len: np.ndarray, cached: np.ndarray | float = 0.0
) -> np.ndarray:
    """2 N_active (I - P) for the matmuls (LM head once) plus causal attention 4 h d_h pairs
    of the new tokens; `cached` P prompt tokens come from the prefix cache (issue #11)."""
    window = model.sliding_window.window if model.sliding_window else 0
    body = model.params_active_matmul - (model.params_lm_head or model.params_embedding)
    pairs = sp.attention_pairs_after_prefix(
        input_len, cached, model.n_global_layers, model.n_sliding_layers, window
    )
    head = model.vocab_size * model.hidden_size
    per_head, width = attention_pair_flops(model)
    return (
        2.0 * body * sp.new_prefill_tokens(input_len, cached)
        + 2.0 * head
        + per_head * model.num_attention_heads * (width * pairs)
    )


def attention_pair_flops(model: Model) -> tuple[float, int]:
    """(c, w) with c h w the FLOPs of one query-key pair of prefill attention: 2 h d_qk for
    the scores plus 2 h d_v for the values, 4 h d_h when they match. MLA prefills without
    absorption (the latent up-projected to 128 heads of qk 192 and v 128 for DeepSeek-V3, #10),
    so c = 2 and w = d_qk + d_v there."""
    if model.mla is None:
        return 4.0, model.head_dim
    mla = model.mla
    return 2.0, mla.qk_nope_head_dim + mla.qk_rope_head_dim + mla.v_head_dim


def attention_flops_prefill(
    model: Model, input_len: np.ndarray, cached: np.ndarray | float = 0.0
) -> np.ndarray:
    """The causal-attention part of `flops_prefill_per_request`: 4 h d_h (MLA: 2 h (d_qk +
    d_v), `attention_pair_flops`) x the query-key pairs of the new tokens (all I when nothing
    is cached)."""
    window = model.sliding_window.window if model.sliding_window else 0
    pairs = sp.attention_pairs_after_prefix(
        input_len, cached, model.n_global_layers, model.n_sliding_layers, window
    )
    per_head, width = attention_pair_flops(model)
    return per_head * model.num_attention_heads * (width * pairs)


def prefill_compute_s(
    model: Model,
    df: Frame,
    input_len: np.ndarray,
    prompts: np.ndarray | float = 1.0,
    cached: np.ndarray | float = 0.0,
    attention_ranks: np.ndarray | float = 1.0,
    pass_tokens: np.ndarray | float | None = None,
) -> np.ndarray:
    """Compute time of `prompts` prefills of `input_len` tokens (`cached` of them from the
    prefix cache) per GPU: the GEMMs at the quant's peak split over the layout (`sharding`),
    attention (FlashAttention in 16-bit whatever the weights, #10) at the 16-bit peak over
    tp x `attention_ranks` x pp, both at the prefill efficiency. MoE (#10, `moe_prefill`):
    the routed GEMMs' tile padding at passes of `pass_tokens` (default: one pass of all the
    new tokens) and the experts' activation traffic; zero for a dense model."""
    eta = _col(df, "eff_eta_compute_prefill")
    attn = prompts * attention_flops_prefill(model, input_len, cached)
    gemm = prompts * flops_prefill_per_request(model, input_len, cached) - attn
    new = prompts * sp.new_prefill_tokens(input_len, cached)
    gemm = sh.split_flops(model, df, gemm, new, attention_ranks + 0.0 * new)
    attn = attn / (_col(df, "tp") * attention_ranks * _col(df, "pp"))
    t_c = rf.latency_compute(gemm, _col(df, "peak_flops"), eta) + rf.latency_compute(
        attn, _col(df, "peak_flops_attention"), eta
    )
    t_c = t_c + gemm_short_k_s(model, df, new, attention_ranks)  # #10 (t10g)
    if model.moe is None:
        return t_c
    return t_c + moe_prefill_s(model, df, new, new if pass_tokens is None else pass_tokens)


def gemm_short_k_s(
    model: Model, df: Frame, tokens: np.ndarray, attention_ranks: np.ndarray | float
) -> np.ndarray:
    """Seconds the short per-GPU K of `tokens` prefill tokens' linear layers adds per GPU
    (`gemm_shape`, #10 t10g): eta_pf K / (K + k0) per layer, k0 = `gemm_k0_ridge` x the
    card's F / BW, i.e. k0_ridge x their 16-bit outputs at BW x eta_pf (0: off)."""
    c = _col(df, "eff_gemm_k0_ridge")
    if not c.any():
        return np.zeros(len(c))
    tp, pp, ep = _col(df, "tp"), _col(df, "pp"), _col(df, "ep")
    out = gs.output_bytes_per_gpu(model, tokens, tp, attention_ranks, pp)
    out = out + gs.routed_output_bytes_per_gpu(
        model, tokens, ep, sh.width(df) / ep, _col(df, "ep_imbalance"), pp
    )
    bw, eta = _col(df, "bandwidth_bytes_per_s"), _col(df, "eff_eta_compute_prefill")
    return gs.short_k_s(out, bw, eta, c)


def moe_prefill_s(
    model: Model, df: Frame, tokens: np.ndarray, pass_tokens: np.ndarray | float
) -> np.ndarray:
    """Seconds the routed experts of `tokens` prefill tokens (passes of `pass_tokens`) add
    per GPU beyond the roofline (#10): tile-padding FLOPs at the prefill efficiency, split
    like the routed GEMMs, plus the activation traffic at the memory efficiency."""
    ep, imbalance, pp = _col(df, "ep"), _col(df, "ep_imbalance"), _col(df, "pp")
    pad = moe.padding_flops(model, tokens, pass_tokens) * imbalance / (sh.width(df) * pp)
    t_pad = rf.latency_compute(pad, _col(df, "peak_flops"), _col(df, "eff_eta_compute_prefill"))
    act = moe.activation_bytes_per_gpu(model, tokens, ep, sh.width(df) / ep, imbalance, pp)
    bw, eta_mem = _col(df, "bandwidth_bytes_per_s"), _col(df, "eff_eta_mem")
    return t_pad + rf.latency_memory(act, bw, eta_mem)


def kv_pool_bytes(
    df: Frame, weights: np.ndarray, workspace: np.ndarray, reserve: np.ndarray
) -> np.ndarray:
    """KV-cache pool per GPU as each engine sizes it from the device's memory M:

    * vLLM: gpu_memory_utilization u of the total, minus weights and profiled activations:
      u M - W - A (`activations_in_budget`);
    * SGLang: mem_fraction_static u of the total holds weights and KV: u M - W;
    * TensorRT-LLM: kv_cache_free_gpu_mem_fraction u of what is free after weights and
      activations: u (M - W - A) (`kv_budget_of_free`).
    """
    m, u = _col(df, "memory_bytes"), _col(df, "eff_mem_util")
    in_budget = _col(df, "eff_activations_in_budget")
    of_free = _col(df, "eff_kv_budget_of_free") > 0.5
    of_total = u * m - weights - in_budget * workspace - reserve
    return np.where(of_free, u * (m - weights - workspace - reserve), of_total)


def memory_terms(model: Model, df: Frame) -> dict[str, np.ndarray]:
    """Weights, activations and the KV pool per GPU, in bytes; a paged KV cache holds what is
    in flight, I + O/2 tokens per sequence on average, so the batch that fits is pool / that;
    an engine that admits a sequence only with KV for its whole output (TensorRT-LLM's
    GUARANTEED_NO_EVICT, `kv_reserve_output`, #10) holds I + O per sequence. Under DP
    attention each of the dp ranks holds its own ceil(B / dp) sequences' KV; a stage holds
    1/pp of the layers (`sharding`).

    `needed` is what the fit test weighs against `usable`: the KV pool is sized after a
    full prefill chunk's workspace is held back, so it counts that workspace (not only this
    prompt's activations, `total`) and every sequence's logits; the row fits exactly when
    needed <= usable, short by needed - usable otherwise (`planning.estimate` shows it)."""
    tp, batch = _col(df, "tp"), _col(df, "batch")
    dp, pp = _col(df, "dp_attention"), _col(df, "pp")
    rank_batch = np.ceil(batch / dp)  # sequences on the busiest attention rank
    i_len, o_len = _col(df, "input_len"), _col(df, "output_len")
    kv_b = mapped(df, "kv_dtype", KV_BYTES)
    split = mem.kv_split(model, tp)
    weights = sh.weights_per_gpu(model, df)
    cached = _col(df, "prefix_cached_tokens")  # issue #11: the shared prefix, held once
    # only global layers share the prefix: a sliding window holds each sequence's own tokens
    prefix = cached * model.n_global_layers * model.kv_elements_per_token_per_layer * kv_b
    prefix = prefix / split / pp
    held = i_len + np.where(_col(df, "eff_kv_reserve_output") > 0.5, o_len, o_len / 2.0)
    kv_seq = mem.bytes_kv_cache_per_sequence(model, held, kv_b) / split / pp
    kv_seq = kv_seq - prefix
    draft_w, draft_seq = _draft_memory(df, held, kv_b, split)
    chunk = _col(df, "eff_prefill_chunk_tokens")
    act = mem.bytes_activations_per_gpu(model, i_len, rank_batch, tp, chunk)
    # issue #10 (KV pool): vLLM and TensorRT-LLM size the pool after profiling one forward
    # pass of a full chunk (max_num_batched_tokens / max_num_tokens dummy tokens), whatever
    # the prompts served later, so the workspace they hold back is that of a full chunk
    workspace = mem.bytes_activations_per_gpu(model, chunk + 0 * i_len, 0 * batch, tp, chunk)
    reserve = _col(df, "eff_runtime_reserve_gb") * GB
    pool = kv_pool_bytes(df, weights + draft_w, workspace, reserve) - prefix
    logits = model.vocab_size * mem.LOGIT_BYTES / tp  # fp32, per sequence
    per_seq = kv_seq + draft_seq + logits
    total = weights + draft_w + prefix + rank_batch * (kv_seq + draft_seq) + act + reserve
    fixed = weights + draft_w + prefix + workspace + reserve
    # the engine's budget; where the weights leave no pool it is that budget (at most the
    # card), not the weights plus a clipped pool (a 405B model on a 24 GB card read
    # "410.8 GB usable")
    usable = np.where(
        pool >= 0.0, fixed + pool, np.clip(fixed + pool, 0.0, _col(df, "memory_bytes"))
    )
    return {
        "rank_batch": rank_batch, "weights": weights, "draft_weights": draft_w,
        "prefix": prefix, "kv_seq": kv_seq, "draft_seq": draft_seq, "logits": logits,
        "per_seq": per_seq, "activations": act, "workspace": workspace, "reserve": reserve,
        "pool": pool, "total": total, "needed": fixed + rank_batch * per_seq, "usable": usable,
        "kv_bytes": kv_b, "split": split,
    }  # fmt: skip


def _memory(model: Model, df: Frame, out: dict) -> None:
    """The memory columns of `memory_terms`: per GPU, what fits and the largest batch."""
    t = memory_terms(model, df)
    rank_batch, per_seq, pool = t["rank_batch"], t["per_seq"], t["pool"]
    out.update(
        weights_per_gpu_gb=t["weights"] / GB,
        kv_cache_per_gpu_gb=rank_batch * t["kv_seq"] / GB,
        activations_per_gpu_gb=t["activations"] / GB,
        memory_per_gpu_gb=t["total"] / GB,
        memory_usable_gb=t["usable"] / GB,
        fits=rank_batch * per_seq <= pool,
        memory_shortfall_gb=np.maximum(rank_batch * per_seq - pool, 0.0) / GB,
        max_batch=mem.max_batch_that_fits(pool, per_seq)
        * _col(df, "dp_attention").astype(np.int64),
        draft_per_gpu_gb=(t["draft_weights"] + rank_batch * t["draft_seq"]) / GB,
        prefix_cache_per_gpu_gb=t["prefix"] / GB,
    )
    out["_kv_bytes"] = t["kv_bytes"]
    out["_split"] = t["split"]


def moe_layer_overhead_s(model: Model, df: Frame) -> np.ndarray:
    """Fixed cost of a stage's MoE layers in one decode step: n_moe_layers / pp x the engine's
    per-layer cost (router, top-k, permute and grouped-GEMM launches that a small batch's
    bytes do not cover; issue #10, t10v). Zero for a dense model."""
    return model.n_moe_layers / _col(df, "pp") * _col(df, "eff_moe_layer_us") * 1e-6


def per_sequence_step_s(model: Model, df: Frame) -> np.ndarray:
    """What one more sequence adds to a stage's decode step (s): the engine's cost once a step
    (sampling and scheduling on the host, `step_per_seq_us`) plus its cost in each of the
    stage's n_layers / pp layers (`step_seq_layer_us`, issue #10 s40: an engine whose overlap
    scheduler hides the host's per-step work still pays each layer's attention and KV-append
    work per sequence)."""
    layers = model.num_hidden_layers / _col(df, "pp")
    per_step = _col(df, "eff_step_per_seq_us")
    return (per_step + layers * _col(df, "eff_step_seq_layer_us")) * 1e-6


def prefill_host_floor_s(model: Model, df: Frame, passes: np.ndarray) -> np.ndarray:
    """The least time `passes` prefill passes of one pipeline stage take on the host (#10,
    t10p): an engine that runs context and mixed passes eagerly (no CUDA graph; TensorRT-LLM
    and SGLang capture graphs for decode-only steps by default) launches every kernel of a
    pass from the CPU, so a pass takes at least n_layers / pp x `prefill_layer_us`,
    however little GPU work it holds. Zero where the profile's constant is 0."""
    per_pass = model.num_hidden_layers / _col(df, "pp") * _col(df, "eff_prefill_layer_us")
    return passes * per_pass * 1e-6


def _decode(model: Model, df: Frame, out: dict) -> None:
    """One decode step. GEMMs (weights) and attention (KV cache) are separate kernels, each
    bound by its own roofline: max(t_weights, t_gemm) + max(t_kv, t_attention), plus the
    all-reduces, the EP all-to-all and the fixed overhead: one pipeline stage's time. With pp
    stages the batch runs as m = min(pp, B) micro-batches and a token takes
    pp * t_stage + (pp - 1) * t_p2p (`parallel.decode_period`)."""
    tp, batch = _col(df, "tp"), _col(df, "batch")
    pp, dp = _col(df, "pp"), _col(df, "dp_attention")
    micro = batch / par.micro_batches(pp, batch)  # sequences per micro-batch
    rank = micro / dp  # of them on one attention rank
    context = _col(df, "input_len") + _col(df, "output_len") / 2.0
    bw, peak = _col(df, "bandwidth_bytes_per_s"), _col(df, "peak_flops")
    verify = _col(df, "spec_tokens") + 1.0  # issue #11: the target verifies k + 1 a sequence
    micro_tokens, rank_tokens = micro * verify, rank * verify
    step_bytes = bytes_weights_per_step(model, df, micro_tokens)
    w_bytes = sh.step_weights_per_gpu(model, df, step_bytes, micro_tokens)
    kv_bytes = rank * mem.bytes_kv_cache_per_sequence(model, context, out["_kv_bytes"])
    kv_bytes = kv_bytes / out["_split"] / pp
    gemm_flops = 2.0 * model.params_active_matmul * micro_tokens
    gemm_flops = sh.split_flops(model, df, gemm_flops, micro_tokens, dp)
    attn_flops = attention_flops_decode(model, rank_tokens, context) / tp / pp
    eta_mem, eta_c = _col(df, "eff_eta_mem"), _col(df, "eff_eta_compute_decode")
    t_w = rf.latency_memory(w_bytes, bw, eta_mem)
    t_kv = rf.latency_memory(kv_bytes, bw, eta_mem * _col(df, "eff_eta_kv"))
    t_gemm = rf.latency_compute(gemm_flops, peak, eta_c)
    t_attn = rf.latency_compute(attn_flops, _col(df, "peak_flops_attention"), eta_c)
    t_ar = sh.allreduce_layers(model, df) * rf.latency_allreduce(
        tp,
        1,
        rank_tokens,
        model.hidden_size,
        _col(df, "link_bytes_per_s"),
        collective_alpha_s(df),
    )
    t_a2a = sh.alltoall_s(model, df, micro_tokens / sh.width(df))
    t_a2a = t_a2a + sh.cross_node_tokens_s(model, df, micro_tokens)  # #10 (ep-lead)
    # fixed cost per step plus a cost per sequence in the batch (sampling, scheduling, #10),
    # once a step or in each of the stage's layers (s40)
    per_seq = per_sequence_step_s(model, df)  # a stage steps one micro-batch
    t_oh = _col(df, "eff_step_overhead_ms") * 1e-3 + micro * per_seq
    t_oh = t_oh + moe_layer_overhead_s(model, df)  # issue #10 (t10v)
    stage = np.maximum(t_w, t_gemm) + np.maximum(t_kv, t_attn) + t_ar + t_a2a + t_oh
    p2p_bw, p2p_lat = sh.p2p_link(df)
    t_p2p = np.where(pp > 1, par.latency_p2p(rank_tokens, model.hidden_size, p2p_bw, p2p_lat), 0.0)
    step = par.decode_period(stage, t_p2p, pp)
    flops = gemm_flops + attn_flops
    # issue #10 (t10b): what the batch's decode tokens add to a pass that also prefills
    # (vLLM V1 runs a step's decode tokens and prefill chunks as one forward): their GEMM
    # FLOPs, their KV read or attention and their per-sequence cost; the weight read, the
    # collectives' latencies and the fixed step cost are the prefill pass's already
    rows = pp * (t_gemm + np.maximum(t_kv, t_attn) + micro * per_seq)
    out.update(
        t_decode_rows_ms=rows * 1e3,
        bytes_weights_per_step_gb=w_bytes / GB,
        bytes_kv_per_step_gb=kv_bytes / GB,
        flops_per_step_tflop=flops / 1e12,
        t_weights_ms=pp * t_w * 1e3,
        t_kv_ms=pp * t_kv * 1e3,
        t_memory_ms=pp * (t_w + t_kv) * 1e3,
        t_compute_ms=pp * (t_gemm + t_attn) * 1e3,
        t_comm_ms=(pp * (t_ar + t_a2a) + (pp - 1.0) * t_p2p) * 1e3,
        t_overhead_ms=pp * t_oh * 1e3,
        tpot_step_ms=step * 1e3,  # the verify step here; per output token after _speculation
        bound=_bound(t_w + t_kv, t_gemm + t_attn),
        intensity_flop_per_byte=rf.arithmetic_intensity(flops, w_bytes + kv_bytes),
        ridge_flop_per_byte=peak / bw,
        t_alltoall_ms=pp * t_a2a * 1e3,
        t_p2p_ms=(pp - 1.0) * t_p2p * 1e3,
        pipeline_bubble=par.pipeline_bubble(pp, batch),
    )
    out["_step_s"] = step


def _draft_memory(
    df: Frame, context: np.ndarray, kv_b: np.ndarray, split: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The drafter's weights per GPU (at the target's weight width, split over tp like the
    target) and its KV per sequence at `context` tokens (issue #11; zero when off)."""
    tp = _col(df, "tp")
    weights = _col(df, "draft_params_held") * _col(df, "weight_bytes_per_param") / tp
    kv = _col(df, "draft_kv_elems_per_token") * kv_b * context / split
    return weights, kv


def _draft_step(model: Model, df: Frame, out: dict) -> np.ndarray:
    """One draft forward of B tokens (seconds): max(weights / BW, 2 N_draft B / F) + its KV
    read + its all-reduces + the engine's fixed cost of one forward (`eff_draft_forward_ms`,
    issue #11 t10s: the k drafts run inside the verify's engine step, so each pays the
    per-forward part of the step cost, not the scheduling and output work the step pays once;
    the whole step cost where an engine has no per-forward figure). MTP reads 1/L of the
    target's block weights at this batch (the experts B tokens touch) and the shared LM head."""
    tp, batch = _col(df, "tp"), _col(df, "batch")
    wb, eb = _col(df, "weight_bytes_per_param"), _col(df, "embedding_bytes_per_param")
    head_params = model.params_lm_head or model.params_embedding
    head, layers = head_params * eb, model.num_hidden_layers
    mtp = values(df, "speculative") == "mtp"
    layer = (bytes_weights_per_step(model, df, batch) - head) / layers
    read = np.where(mtp, layer + head, _col(df, "draft_params_read") * wb) / tp
    active = (model.params_active_matmul - head_params) / layers + head_params
    flops = 2.0 * batch * np.where(mtp, active, _col(df, "draft_params_read")) / tp
    context = _col(df, "input_len") + _col(df, "output_len") / 2.0
    kv = batch * _draft_memory(df, context, out["_kv_bytes"], out["_split"])[1]
    bw, eta = _col(df, "bandwidth_bytes_per_s"), _col(df, "eff_eta_mem")
    t_w = rf.latency_memory(read, bw, eta)
    t_c = rf.latency_compute(flops, _col(df, "peak_flops"), _col(df, "eff_eta_compute_decode"))
    t_kv = rf.latency_memory(kv, bw, eta * _col(df, "eff_eta_kv"))
    t_comm = _col(df, "draft_layers") * rf.latency_allreduce(
        tp,
        1,
        batch,
        model.hidden_size,
        _col(df, "link_bytes_per_s"),
        collective_alpha_s(df),
    )
    return np.maximum(t_w, t_c) + t_kv + t_comm + _col(df, "eff_draft_forward_ms") * 1e-3


def _speculation(model: Model, df: Frame, out: dict) -> None:
    """Per output token: (verify step + k draft steps) / E(k, a) (issue #11; off: k = 0,
    E = 1, so the step is unchanged)."""
    k = _col(df, "spec_tokens")
    per_step = sp.expected_tokens_per_step(k, _col(df, "spec_acceptance"))
    verify = out["_step_s"]
    draft = np.where(k > 0, k * _draft_step(model, df, out), 0.0)
    step = (verify + draft) / per_step
    out.update(
        tokens_per_step=per_step,
        t_verify_ms=verify * 1e3,
        t_draft_ms=draft * 1e3,
        tpot_step_ms=step * 1e3,
    )
    out["_step_s"] = step
    out["_cycle_s"] = verify + draft


def _prefill(model: Model, df: Frame, out: dict) -> None:
    """Prefill of one request, alone (its TTFT on an idle replica) and as its share of the
    chunked prefill passes of a busy replica (what it costs the decode loop).

    Alone: max(FLOPs / (F eta_pf), W / (BW eta_mem)) + all-reduces + overhead, attention's
    FLOPs at the 16-bit peak (`prefill_compute_s`).
    Shared: the prompt rides in passes of C = min(chunk, B I) tokens (the engine's chunk), so
    the weight read, collective latencies and fixed overhead of a pass are split over C tokens:
    max(FLOPs / (F eta_pf), W / (BW eta_mem) * I / C) + payload + (alpha + overhead) * I / C.
    Host floor (#10, t10p): an eagerly run pass takes at least layers x prefill_layer_us
    (`prefill_host_floor_s`): alone, per pass of the prompt; shared, its share I / C of one.
    Layouts: a stage holds 1/pp of the work; alone, the prompt runs on one attention rank
    and crosses the pp stages in ceil(I / chunk) micro-batches (`parallel.prefill_pipelined`);
    shared, the dp ranks and the pp stages prefill concurrently, so the share is one stage's.
    """
    tp, i_len, batch = _col(df, "tp"), _col(df, "input_len"), _col(df, "batch")
    pp, dp, width = _col(df, "pp"), _col(df, "dp_attention"), sh.width(df)
    cached = _col(df, "prefix_cached_tokens")  # issue #11: prefill computes I - P tokens
    new = sp.new_prefill_tokens(i_len, cached)
    chunk = np.minimum(_col(df, "eff_prefill_chunk_tokens"), batch * new)
    alone_pass = new / np.maximum(np.ceil(new / _col(df, "eff_prefill_chunk_tokens")), 1.0)
    t_c = prefill_compute_s(model, df, i_len, 1.0, cached, 1.0, alone_pass)
    t_c_shared = prefill_compute_s(model, df, i_len, 1.0, cached, dp, chunk)
    i_len = new
    share = i_len / chunk  # passes this prompt accounts for: 1/B when B prompts share one
    bw, eta_mem = _col(df, "bandwidth_bytes_per_s"), _col(df, "eff_eta_mem")
    w_alone = sh.step_weights_per_gpu(model, df, bytes_weights_per_step(model, df, i_len), i_len)
    w_pass = sh.step_weights_per_gpu(model, df, bytes_weights_per_step(model, df, chunk), chunk)
    t_m = rf.latency_memory(w_alone, bw, eta_mem)
    t_m_pass = rf.latency_memory(w_pass, bw, eta_mem)
    link, alpha = _col(df, "link_bytes_per_s"), collective_alpha_s(df)
    d, ar_layers = model.hidden_size, sh.allreduce_layers(model, df)
    t_comm = ar_layers * rf.latency_allreduce(tp, 1, i_len, d, link, alpha)
    t_comm = t_comm + sh.alltoall_s(model, df, i_len / tp)
    payload = ar_layers * rf.latency_allreduce(tp, 1, i_len / dp, d, link, 0.0 * alpha)
    payload = payload + sh.alltoall_s(model, df, i_len / width, latency=False)
    fixed_comm = ar_layers * rf.latency_allreduce(tp, 1, 0.0 * i_len, d, link, alpha)
    fixed_comm = fixed_comm + sh.alltoall_s(model, df, 0.0 * i_len)
    overhead = _col(df, "eff_prefill_overhead_ms") * 1e-3
    n_micro = np.ceil(i_len / _col(df, "eff_prefill_chunk_tokens"))
    p2p_bw, p2p_lat = sh.p2p_link(df)
    p2p = np.where(pp > 1, par.latency_p2p(i_len / n_micro, d, p2p_bw, p2p_lat), 0.0)
    # an eager pass is host-bound below layers x prefill_layer_us (#10, t10p): alone, each
    # of the prompt's n_micro passes; shared, the prompt's share of the passes, as the weight
    # read and the fixed costs of a pass are shared (a prompt per pass instead, what the
    # dense aic closed loops suggest, made Qwen3-235B's short prompts 2x slow and leaving a
    # model out worse: TPOT 23 -> 27%; benchmarks/prefill_floor.py)
    gpu = np.maximum(np.maximum(t_c, t_m) + t_comm, prefill_host_floor_s(model, df, n_micro))
    t_pf = par.prefill_pipelined(gpu, p2p, pp, n_micro) + overhead
    fixed = fixed_comm + overhead
    t_share = np.maximum(t_c_shared, t_m_pass * share) + payload + fixed * share
    t_share = np.maximum(t_share, prefill_host_floor_s(model, df, share))
    out["prefill_ms"] = t_pf * 1e3
    out["prefill_share_ms"] = t_share * 1e3
    out["prefill_bound"] = _bound(t_m, t_c)
    out["_prefill_s"] = t_pf
    out["_prefill_share_s"] = t_share


def _serving(df: Frame, out: dict, utilisation: float, statistic: str) -> None:
    """Continuous batching: rate, TPOT with prefill interference, TTFT with queueing, cost."""
    batch, o_len = _col(df, "batch"), _col(df, "output_len")
    step, t_pf, t_share = out["_step_s"], out["_prefill_s"], out["_prefill_share_s"]
    rate = rf.serving_rate(batch, o_len, step, t_share)
    tpot = rf.tpot_with_prefill(step, batch, o_len, t_share)
    load = utilisation * rate
    cycle = out.get("_cycle_s", step)  # one whole decode step (verify + drafts, issue #11)
    # an idle replica starts the prefill at the next step; plus the per-request latency (#10)
    # and, under an overlap scheduler, the whole iteration it launched before the arrival
    # (a decode cycle with its share of the others' prefills, tpot - step; #10 s39)
    lag = _col(df, "eff_scheduler_lag_steps") * (cycle + tpot - step)
    ttft_idle = t_pf + cycle / 2.0 + lag + _col(df, "eff_request_overhead_ms") * 1e-3
    if statistic == "none":
        wait = np.zeros_like(rate)
    else:
        wait = q.wait_for_slot(batch, utilisation, o_len * tpot, statistic)
        wait = wait + q.wait_for_prefill(load, t_share, statistic)
    price = _col(df, "price_usd_per_gpu_hour")
    cost_h = price * _col(df, "gpus_per_replica")
    out.update(
        tpot_ms=tpot * 1e3,
        ttft_ms=(ttft_idle + wait) * 1e3,
        ttft_unloaded_ms=ttft_idle * 1e3,
        ttft_scheduler_lag_ms=lag * 1e3,
        requests_per_s=rate,
        capacity_requests_per_s=load,
        throughput_tok_s=rate * o_len,
        total_tok_s=rate * (o_len + _col(df, "input_len")),
        cost_per_hour_usd=cost_h,
        cost_per_request_usd=cost_h / (3600.0 * load),
        cost_per_1k_output_tokens_usd=cost_h / (3600.0 * load * o_len) * 1e3,
    )


def ttft_ms_at(rows: Frame, utilisation: float, statistic: str) -> np.ndarray:
    """The TTFT (ms) of evaluated rows at another statistic, from their own columns (the
    same queueing terms as `_serving`, without evaluating the rows again)."""
    batch, o_len = _col(rows, "batch"), _col(rows, "output_len")
    tpot_s = _col(rows, "tpot_ms") / 1e3
    wait = q.wait_for_slot(batch, utilisation, o_len * tpot_s, statistic)
    wait = wait + q.wait_for_prefill(
        _col(rows, "capacity_requests_per_s"), _col(rows, "prefill_share_ms") / 1e3, statistic
    )
    ttft = _col(rows, "ttft_unloaded_ms") + wait * 1e3
    return disagg.ttft_ms_at_roles(rows, ttft, utilisation, statistic)  # issue #11


def evaluate_arrays(
    model: Model, grid: Frame, utilisation: float = 0.8, statistic: str = "mean"
) -> dict[str, np.ndarray]:
    """`evaluate`'s output columns as arrays, without building the frame (calibration fits
    evaluate the same grid hundreds of times)."""
    out: dict[str, np.ndarray] = {}
    _memory(model, grid, out)
    _decode(model, grid, out)
    _speculation(model, grid, out)
    _prefill(model, grid, out)
    _serving(grid, out, utilisation, statistic)
    disagg.apply_roles(model, grid, out, utilisation, statistic)  # prefill/decode pools, #11
    return {k: v for k, v in out.items() if not k.startswith("_")}


def evaluate(model: Model, grid: Any, utilisation: float = 0.8, statistic: str = "mean") -> Any:
    """Add every output column (`columns.MODEL_COLUMNS`) to the grid; rows keep their order.
    `statistic` is the TTFT statistic (mean, p50, p90, p95, p99), or "none" to leave
    queueing out (calibration). A `Table` in gives a `Table` out, a DataFrame a DataFrame."""
    if isinstance(grid, Table):
        return evaluate_table(model, grid, utilisation, statistic)
    import pandas as pd

    grid = grid.reset_index(drop=True)
    outputs = evaluate_table(model, Table.from_pandas(grid), utilisation, statistic, False)
    return pd.concat([grid, columns.conform(outputs.to_pandas(), columns.MODEL_COLUMNS)], axis=1)


def evaluate_table(
    model: Model, grid: Table, utilisation: float = 0.8, statistic: str = "mean", keep: bool = True
) -> Table:
    """`evaluate` of a `Table`: the grid's columns (unless `keep` is false) and the outputs."""
    if grid.empty:
        outputs = columns.empty_table(columns.MODEL_COLUMNS)
    else:
        outputs = columns.table(
            _chunked(model, grid, utilisation, statistic), columns.MODEL_COLUMNS
        )
    if not keep:
        return outputs
    return Table(
        {
            **{c: grid.stored(c) for c in grid.columns},
            **{c: outputs.stored(c) for c in outputs.columns},
        },
        len(grid),
    )


CHUNK_ROWS = 65_536  # issue 16: rows evaluated at once, so intermediates stay bounded


def _chunked(model: Model, grid: Table, utilisation: float, statistic: str) -> dict[str, Any]:
    """`evaluate_arrays` over slices of the grid (every formula is row by row), written into
    one array per output: the temporaries of a sweep of millions of rows are a slice's."""
    if len(grid) <= CHUNK_ROWS:
        return evaluate_arrays(model, grid, utilisation, statistic)  # small: gathers are cheap
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(grid), CHUNK_ROWS):
        rows = _widened(grid.take(np.arange(start, min(start + CHUNK_ROWS, len(grid)))))
        part = evaluate_arrays(model, rows, utilisation, statistic)
        for name, column in part.items():
            if name not in out:
                out[name] = _like(column, len(grid), columns.BY_NAME[name].storage)
            _write(out[name], start, column)
    return out


def _write(column: Any, start: int, part: Any) -> None:
    """Write a chunk's values into the whole-grid column from row `start`."""
    if isinstance(column, Coded):
        column.codes[start : start + len(part)] = part.codes
    else:
        column[start : start + len(part)] = part


_SHARED = tuple(c.name for c in columns.GRID_COLUMNS if c.dtype == columns.SHARED)


def _widened(grid: Table) -> Table:
    """A slice with its per-deployment numbers (`columns.SHARED`, categoricals) gathered to
    float64 once: the formulas read each several times, and a categorical gathers per read."""
    return grid.assign(**{n: values(grid, n, float) for n in _SHARED if n in grid})


def _like(part: np.ndarray | Coded, n: int, storage: str) -> Any:
    """An unfilled column of `n` rows like a chunk's (a categorical keeps its categories),
    at the declared storage (float32 where declared: no whole-grid float64 copy, #16)."""
    if isinstance(part, Coded):
        return Coded(np.zeros(n, dtype=part.codes.dtype), part.categories)
    return np.empty(n, dtype=part.dtype if storage == "category" else storage)
