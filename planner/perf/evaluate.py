"""Evaluate the candidate grid: memory, decode step, prefill, serving rate, TTFT and cost.

One pass of numpy over the grid built by `candidates.build_grid`; returns the same frame
with the output columns of `columns.OUTPUT_COLUMNS`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.perf import memory as mem
from planner.perf import queueing as q
from planner.perf import roofline as rf
from planner.schema.model import Model
from planner.schema.quant import KV_BYTES

GB = 1e9


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    return df[name].to_numpy(dtype=float)


def bytes_weights_per_step(model: Model, df: pd.DataFrame, tokens: np.ndarray) -> np.ndarray:
    """Weight bytes one forward pass of `tokens` tokens reads, whole model: every block
    weight, only the experts those tokens touch, and the LM head (not the input table)."""
    wb, eb = _col(df, "weight_bytes_per_param"), _col(df, "embedding_bytes_per_param")
    block = model.params_total - model.params_embedding - model.params_lm_head
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


def _memory(model: Model, df: pd.DataFrame, out: dict) -> None:
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
    kv_seq = mem.bytes_kv_cache_per_sequence(model, i_len + o_len, kv_b) / split
    act = mem.bytes_activations_per_gpu(model, i_len, batch, tp)
    reserve = _col(df, "eff_runtime_reserve_gb") * GB
    usable = _col(df, "memory_bytes") * _col(df, "eff_mem_util")
    total = weights + batch * kv_seq + act + reserve
    per_seq = kv_seq + model.vocab_size * mem.LOGIT_BYTES / tp
    free = usable - weights - reserve - mem.bytes_activations_per_gpu(model, i_len, 0 * batch, tp)
    out.update(
        weights_per_gpu_gb=weights / GB,
        kv_cache_per_gpu_gb=batch * kv_seq / GB,
        activations_per_gpu_gb=act / GB,
        memory_per_gpu_gb=total / GB,
        memory_usable_gb=usable / GB,
        fits=total <= usable,
        memory_shortfall_gb=np.maximum(total - usable, 0.0) / GB,
        max_batch=mem.max_batch_that_fits(free, per_seq),
    )
    out["_kv_bytes"] = kv_b
    out["_split"] = split


def _decode(model: Model, df: pd.DataFrame, out: dict) -> None:
    tp, batch = _col(df, "tp"), _col(df, "batch")
    context = _col(df, "input_len") + _col(df, "output_len") / 2.0
    bw, peak = _col(df, "bandwidth_bytes_per_s"), _col(df, "peak_flops")
    w_bytes = bytes_weights_per_step(model, df, batch) / tp
    kv_bytes = batch * mem.bytes_kv_cache_per_sequence(model, context, out["_kv_bytes"])
    kv_bytes = kv_bytes / out["_split"]
    flops = (
        2.0 * model.params_active_matmul * batch + attention_flops_decode(model, batch, context)
    ) / tp
    eta_mem = _col(df, "eff_eta_mem")
    t_w = rf.latency_memory(w_bytes, bw, eta_mem)
    t_kv = rf.latency_memory(kv_bytes, bw, eta_mem * _col(df, "eff_eta_kv"))
    t_c = rf.latency_compute(flops, peak, _col(df, "eff_eta_compute_decode"))
    t_comm = rf.latency_allreduce(
        tp,
        model.num_hidden_layers,
        batch,
        model.hidden_size,
        _col(df, "link_bytes_per_s"),
        _col(df, "eff_allreduce_latency_us") * 1e-6,
    )
    t_oh = _col(df, "eff_step_overhead_ms") * 1e-3
    step = np.maximum(t_w + t_kv, t_c) + t_comm + t_oh
    out.update(
        bytes_weights_per_step_gb=w_bytes / GB,
        bytes_kv_per_step_gb=kv_bytes / GB,
        flops_per_step_tflop=flops / 1e12,
        t_weights_ms=t_w * 1e3,
        t_kv_ms=t_kv * 1e3,
        t_memory_ms=(t_w + t_kv) * 1e3,
        t_compute_ms=t_c * 1e3,
        t_comm_ms=t_comm * 1e3,
        t_overhead_ms=t_oh * 1e3,
        tpot_step_ms=step * 1e3,
        bound=rf.roofline_bound(t_w + t_kv, t_c),
        intensity_flop_per_byte=rf.arithmetic_intensity(flops, w_bytes + kv_bytes),
        ridge_flop_per_byte=peak / bw,
    )
    out["_step_s"] = step


def _prefill(model: Model, df: pd.DataFrame, out: dict) -> None:
    tp, i_len = _col(df, "tp"), _col(df, "input_len")
    flops = flops_prefill_per_request(model, i_len) / tp
    w_bytes = bytes_weights_per_step(model, df, i_len) / tp
    t_c = rf.latency_compute(flops, _col(df, "peak_flops"), _col(df, "eff_eta_compute_prefill"))
    t_m = rf.latency_memory(w_bytes, _col(df, "bandwidth_bytes_per_s"), _col(df, "eff_eta_mem"))
    t_comm = rf.latency_allreduce(
        tp,
        model.num_hidden_layers,
        i_len,
        model.hidden_size,
        _col(df, "link_bytes_per_s"),
        _col(df, "eff_allreduce_latency_us") * 1e-6,
    )
    t_pf = np.maximum(t_c, t_m) + t_comm + _col(df, "eff_prefill_overhead_ms") * 1e-3
    out["prefill_ms"] = t_pf * 1e3
    out["prefill_bound"] = rf.roofline_bound(t_m, t_c)
    out["_prefill_s"] = t_pf


def _serving(df: pd.DataFrame, out: dict, utilisation: float, statistic: str) -> None:
    batch, o_len = _col(df, "batch"), _col(df, "output_len")
    step, t_pf = out["_step_s"], out["_prefill_s"]
    rate = rf.serving_rate(batch, o_len, step, t_pf)
    tpot = rf.tpot_with_prefill(step, batch, o_len, t_pf)
    load = utilisation * rate
    wait = q.wait_for_slot(batch, utilisation, o_len * tpot, statistic)
    wait = wait + q.wait_for_prefill(load, t_pf, statistic)
    ttft_idle = t_pf + step / 2.0  # an idle replica starts the prefill at the next step
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


def evaluate(
    model: Model, grid: pd.DataFrame, utilisation: float = 1.0, statistic: str = "mean"
) -> pd.DataFrame:
    """Add every output column to the grid; rows keep their order."""
    if grid.empty:
        return grid.copy()
    out: dict[str, np.ndarray] = {}
    _memory(model, grid, out)
    _decode(model, grid, out)
    _prefill(model, grid, out)
    _serving(grid, out, utilisation, statistic)
    public = {k: v for k, v in out.items() if not k.startswith("_")}
    return pd.concat([grid.reset_index(drop=True), pd.DataFrame(public)], axis=1)
