"""Evaluate the candidate grid: memory, decode step, prefill, serving rate, TTFT and cost.

One pass of numpy over the grid built by `candidates.build_grid`; returns the same frame
with the columns of `columns.MODEL_COLUMNS` added, built by that declaration.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from planner.perf import columns
from planner.perf import memory as mem
from planner.perf import queueing as q
from planner.perf import roofline as rf
from planner.schema.model import Model
from planner.schema.quant import KV_BYTES

GB = 1e9


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    return df[name].to_numpy(dtype=float)


def _bound(t_memory: np.ndarray, t_compute: np.ndarray) -> pd.Categorical:
    """Which roofline bound holds, as a categorical column (codes, not a string per row)."""
    return pd.Categorical.from_codes(rf.roofline_bound(t_memory, t_compute), rf.BOUNDS)


def bytes_weights_per_step(model: Model, df: pd.DataFrame, tokens: np.ndarray) -> np.ndarray:
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


def flops_prefill_per_request(model: Model, input_len: np.ndarray) -> np.ndarray:
    """2 N_active I for the matmuls (LM head once) plus causal attention 4 h d_h pairs."""
    window = model.sliding_window.window if model.sliding_window else 0
    body = model.params_active_matmul - (model.params_lm_head or model.params_embedding)
    pairs = rf.attention_pairs_prefill(
        input_len, model.n_global_layers, model.n_sliding_layers, window
    )
    head = model.vocab_size * model.hidden_size
    return (
        2.0 * body * input_len
        + 2.0 * head
        + 4.0 * model.num_attention_heads * (model.head_dim * pairs)
    )


def kv_pool_bytes(
    df: pd.DataFrame, weights: np.ndarray, workspace: np.ndarray, reserve: np.ndarray
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


def _memory(model: Model, df: pd.DataFrame, out: dict) -> None:
    """Weights, activations and the KV pool per GPU; a paged KV cache holds what is in flight,
    I + O/2 tokens per sequence on average, so the batch that fits is pool / that."""
    tp, batch = _col(df, "tp"), _col(df, "batch")
    i_len, o_len = _col(df, "input_len"), _col(df, "output_len")
    kv_b = df["kv_dtype"].map(KV_BYTES).to_numpy(dtype=float)
    split = mem.kv_split(model, tp)
    weights = (
        mem.bytes_weights_total(
            model, _col(df, "weight_bytes_per_param"), _col(df, "embedding_bytes_per_param")
        )
        / tp
    )
    kv_seq = mem.bytes_kv_cache_per_sequence(model, i_len + o_len / 2.0, kv_b) / split
    chunk = _col(df, "eff_prefill_chunk_tokens")
    act = mem.bytes_activations_per_gpu(model, i_len, batch, tp, chunk)
    workspace = mem.bytes_activations_per_gpu(model, i_len, 0 * batch, tp, chunk)
    reserve = _col(df, "eff_runtime_reserve_gb") * GB
    pool = kv_pool_bytes(df, weights, workspace, reserve)
    per_seq = kv_seq + model.vocab_size * mem.LOGIT_BYTES / tp
    total = weights + batch * kv_seq + act + reserve
    usable = weights + workspace + reserve + np.maximum(pool, 0.0)
    out.update(
        weights_per_gpu_gb=weights / GB,
        kv_cache_per_gpu_gb=batch * kv_seq / GB,
        activations_per_gpu_gb=act / GB,
        memory_per_gpu_gb=total / GB,
        memory_usable_gb=usable / GB,
        fits=batch * per_seq <= pool,
        memory_shortfall_gb=np.maximum(batch * per_seq - pool, 0.0) / GB,
        max_batch=mem.max_batch_that_fits(pool, per_seq),
    )
    out["_kv_bytes"] = kv_b
    out["_split"] = split


def _decode(model: Model, df: pd.DataFrame, out: dict) -> None:
    """One decode step. GEMMs (weights) and attention (KV cache) are separate kernels, each
    bound by its own roofline: max(t_weights, t_gemm) + max(t_kv, t_attention)."""
    tp, batch = _col(df, "tp"), _col(df, "batch")
    context = _col(df, "input_len") + _col(df, "output_len") / 2.0
    bw, peak = _col(df, "bandwidth_bytes_per_s"), _col(df, "peak_flops")
    w_bytes = bytes_weights_per_step(model, df, batch) / tp
    kv_bytes = batch * mem.bytes_kv_cache_per_sequence(model, context, out["_kv_bytes"])
    kv_bytes = kv_bytes / out["_split"]
    gemm_flops = 2.0 * model.params_active_matmul * batch / tp
    attn_flops = attention_flops_decode(model, batch, context) / tp
    eta_mem, eta_c = _col(df, "eff_eta_mem"), _col(df, "eff_eta_compute_decode")
    t_w = rf.latency_memory(w_bytes, bw, eta_mem)
    t_kv = rf.latency_memory(kv_bytes, bw, eta_mem * _col(df, "eff_eta_kv"))
    t_gemm = rf.latency_compute(gemm_flops, peak, eta_c)
    t_attn = rf.latency_compute(attn_flops, _col(df, "peak_flops_attention"), eta_c)
    t_comm = rf.latency_allreduce(
        tp,
        model.num_hidden_layers,
        batch,
        model.hidden_size,
        _col(df, "link_bytes_per_s"),
        _col(df, "eff_allreduce_latency_us") * 1e-6,
    )
    t_oh = _col(df, "eff_step_overhead_ms") * 1e-3
    step = np.maximum(t_w, t_gemm) + np.maximum(t_kv, t_attn) + t_comm + t_oh
    flops = gemm_flops + attn_flops
    out.update(
        bytes_weights_per_step_gb=w_bytes / GB,
        bytes_kv_per_step_gb=kv_bytes / GB,
        flops_per_step_tflop=flops / 1e12,
        t_weights_ms=t_w * 1e3,
        t_kv_ms=t_kv * 1e3,
        t_memory_ms=(t_w + t_kv) * 1e3,
        t_compute_ms=(t_gemm + t_attn) * 1e3,
        t_comm_ms=t_comm * 1e3,
        t_overhead_ms=t_oh * 1e3,
        tpot_step_ms=step * 1e3,
        bound=_bound(t_w + t_kv, t_gemm + t_attn),
        intensity_flop_per_byte=rf.arithmetic_intensity(flops, w_bytes + kv_bytes),
        ridge_flop_per_byte=peak / bw,
    )
    out["_step_s"] = step


def _prefill(model: Model, df: pd.DataFrame, out: dict) -> None:
    """Prefill of one request, alone (its TTFT on an idle replica) and as its share of the
    chunked prefill passes of a busy replica (what it costs the decode loop).

    Alone: max(FLOPs / (F eta_pf), W / (BW eta_mem)) + all-reduces + overhead.
    Shared: the prompt rides in passes of C = min(chunk, B I) tokens (the engine's chunk), so
    the weight read, collective latencies and fixed overhead of a pass are split over C tokens:
    max(FLOPs / (F eta_pf), W / (BW eta_mem) * I / C) + payload + (alpha + overhead) * I / C.
    """
    tp, i_len, batch = _col(df, "tp"), _col(df, "input_len"), _col(df, "batch")
    flops = flops_prefill_per_request(model, i_len) / tp
    chunk = np.minimum(_col(df, "eff_prefill_chunk_tokens"), batch * i_len)
    share = i_len / chunk  # passes this prompt accounts for: 1/B when B prompts share one
    t_c = rf.latency_compute(flops, _col(df, "peak_flops"), _col(df, "eff_eta_compute_prefill"))
    bw, eta_mem = _col(df, "bandwidth_bytes_per_s"), _col(df, "eff_eta_mem")
    t_m = rf.latency_memory(bytes_weights_per_step(model, df, i_len) / tp, bw, eta_mem)
    t_m_pass = rf.latency_memory(bytes_weights_per_step(model, df, chunk) / tp, bw, eta_mem)
    link, alpha = _col(df, "link_bytes_per_s"), _col(df, "eff_allreduce_latency_us") * 1e-6
    layers, d = model.num_hidden_layers, model.hidden_size
    t_comm = rf.latency_allreduce(tp, layers, i_len, d, link, alpha)
    payload = rf.latency_allreduce(tp, layers, i_len, d, link, 0.0 * alpha)
    overhead = _col(df, "eff_prefill_overhead_ms") * 1e-3
    t_pf = np.maximum(t_c, t_m) + t_comm + overhead
    fixed = (t_comm - payload) + overhead
    t_share = np.maximum(t_c, t_m_pass * share) + payload + fixed * share
    out["prefill_ms"] = t_pf * 1e3
    out["prefill_share_ms"] = t_share * 1e3
    out["prefill_bound"] = _bound(t_m, t_c)
    out["_prefill_s"] = t_pf
    out["_prefill_share_s"] = t_share


def _serving(df: pd.DataFrame, out: dict, utilisation: float, statistic: str) -> None:
    """Continuous batching: rate, TPOT with prefill interference, TTFT with queueing, cost."""
    batch, o_len = _col(df, "batch"), _col(df, "output_len")
    step, t_pf, t_share = out["_step_s"], out["_prefill_s"], out["_prefill_share_s"]
    rate = rf.serving_rate(batch, o_len, step, t_share)
    tpot = rf.tpot_with_prefill(step, batch, o_len, t_share)
    load = utilisation * rate
    ttft_idle = t_pf + step / 2.0  # an idle replica starts the prefill at the next step
    if statistic == "none":
        wait = np.zeros_like(rate)
    else:
        wait = q.wait_for_slot(batch, utilisation, o_len * tpot, statistic)
        wait = wait + q.wait_for_prefill(load, t_share, statistic)
    price = _col(df, "price_usd_per_gpu_hour")
    cost_h = price * _col(df, "tp")
    out.update(
        tpot_ms=tpot * 1e3,
        ttft_ms=(ttft_idle + wait) * 1e3,
        ttft_unloaded_ms=ttft_idle * 1e3,
        requests_per_s=rate,
        capacity_requests_per_s=load,
        throughput_tok_s=rate * o_len,
        total_tok_s=rate * (o_len + _col(df, "input_len")),
        cost_per_hour_usd=cost_h,
        cost_per_request_usd=cost_h / (3600.0 * load),
        cost_per_1k_output_tokens_usd=cost_h / (3600.0 * load * o_len) * 1e3,
    )


def ttft_ms_at(rows: pd.DataFrame, utilisation: float, statistic: str) -> np.ndarray:
    """The TTFT (ms) of evaluated rows at another statistic, from their own columns (the
    same queueing terms as `_serving`, without evaluating the rows again)."""
    batch, o_len = _col(rows, "batch"), _col(rows, "output_len")
    tpot_s = _col(rows, "tpot_ms") / 1e3
    wait = q.wait_for_slot(batch, utilisation, o_len * tpot_s, statistic)
    wait = wait + q.wait_for_prefill(
        _col(rows, "capacity_requests_per_s"), _col(rows, "prefill_share_ms") / 1e3, statistic
    )
    return _col(rows, "ttft_unloaded_ms") + wait * 1e3


def evaluate_arrays(
    model: Model, grid: pd.DataFrame, utilisation: float = 0.8, statistic: str = "mean"
) -> dict[str, np.ndarray]:
    """`evaluate`'s output columns as arrays, without building the frame (calibration fits
    evaluate the same grid hundreds of times)."""
    out: dict[str, np.ndarray] = {}
    _memory(model, grid, out)
    _decode(model, grid, out)
    _prefill(model, grid, out)
    _serving(grid, out, utilisation, statistic)
    return {k: v for k, v in out.items() if not k.startswith("_")}


def evaluate(
    model: Model, grid: pd.DataFrame, utilisation: float = 0.8, statistic: str = "mean"
) -> pd.DataFrame:
    """Add every output column (`columns.MODEL_COLUMNS`) to the grid; rows keep their order.
    `statistic` is the TTFT statistic (mean, p50, p90, p95, p99), or "none" to leave
    queueing out (calibration)."""
    if grid.empty:
        return pd.concat([grid, columns.empty(columns.MODEL_COLUMNS)], axis=1)
    outputs = columns.frame(
        _chunked(model, grid.reset_index(drop=True), utilisation, statistic),
        columns.MODEL_COLUMNS,
    )
    return pd.concat([grid.reset_index(drop=True), outputs], axis=1)


CHUNK_ROWS = 262_144  # issue 16: rows evaluated at once, so intermediates stay bounded


def _chunked(
    model: Model, grid: pd.DataFrame, utilisation: float, statistic: str
) -> dict[str, np.ndarray]:
    """`evaluate_arrays` over slices of the grid (every formula is row by row), written into
    one array per output: the temporaries of a sweep of millions of rows are a slice's."""
    if len(grid) <= CHUNK_ROWS:
        return evaluate_arrays(model, grid, utilisation, statistic)
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(grid), CHUNK_ROWS):
        part = evaluate_arrays(model, grid.iloc[start : start + CHUNK_ROWS], utilisation, statistic)
        for name, values in part.items():
            if name not in out:
                out[name] = _like(values, len(grid))
            out[name][start : start + len(values)] = values
    return out


def _like(values: np.ndarray | pd.Categorical, n: int) -> Any:
    """An unfilled column of `n` rows like a chunk's (a categorical keeps its categories)."""
    if isinstance(values, pd.Categorical):
        return pd.Categorical.from_codes(np.zeros(n, dtype=values.codes.dtype), values.categories)
    return np.empty(n, dtype=np.asarray(values).dtype)
