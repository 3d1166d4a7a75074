"""A batch of prompts prefilled together, and a wave of requests that reach an idle replica
at once: the timings a benchmark's first round (and a static batch) sees.

`batch_prefill_ms` is B prompts run in chunked passes; `serving_wave_ms` the mean TTFT and
TPOT of a wave of B equal requests; `first_round_ms` a closed loop's first round, with the
per-request latency and the wait for a slot. `planner estimate --num-prompts` and the
calibration (`calibration.prediction`, which compares them with batched, serving-benchmark
and closed-loop rows) share them. They read a `Table` or a DataFrame alike (`table.values`),
so `estimate` needs no pandas (issue 16).
"""

from __future__ import annotations

import numpy as np

from planner.perf import evaluate as ev
from planner.perf import roofline as rf
from planner.perf import sharding as sh
from planner.perf.memory import PREFILL_CHUNK_TOKENS
from planner.perf.table import Frame, values
from planner.schema.model import Model


def _col(frame: Frame, name: str) -> np.ndarray:
    return values(frame, name, float)


def batch_prefill_ms(
    model: Model,
    frame: Frame,
    batch: np.ndarray | None = None,
    input_len: np.ndarray | None = None,
    chunk_tokens: np.ndarray | float | None = None,
) -> np.ndarray:
    """Prefill of `batch` requests of `input_len` tokens, B*I tokens run in passes of at
    most `chunk_tokens` (default: the row's engine chunk, `eff_prefill_chunk_tokens`, #10).

    Per pass, the same terms as `evaluate`'s per-request prefill: compute at the prefill
    efficiency, the weights read once (MoE: the experts the pass's tokens touch), two
    all-reduces per layer, the fixed prefill overhead, at least the host floor of an eager
    pass (`evaluate.prefill_host_floor_s`, #10 t10p). Compute and all-reduce payload scale
    with B*I; weight reads, collective latencies and the overhead with the number of passes.
    For B = 1 and I <= chunk_tokens it equals `prefill_ms`. `frame` holds a grid's deployment
    and eff_* columns; batch and input_len default to its `batch` and `input_len` columns.

    Layouts (issue #10, `perf.sharding`): the B prompts spread over the dp_attention ranks,
    which prefill side by side, so the busiest rank's ceil(B / dp) prompts set the passes,
    its dense GEMMs and its collectives; the experts see every rank's tokens of a pass, read
    as the layout holds them (over the stage's width). Attention all-reduces run over tp;
    MoE layers under EP add the all-to-all of the rank's tokens instead of all-reducing.
    """
    b = _col(frame, "batch") if batch is None else np.asarray(batch, dtype=float)
    i_len = _col(frame, "input_len") if input_len is None else np.asarray(input_len, float)
    dp = layout_col(frame, "dp_attention")
    chunk_tokens = prefill_chunk(frame) if chunk_tokens is None else chunk_tokens
    rank_prompts = np.ceil(b / dp)  # on the busiest attention rank
    passes = prefill_passes(frame, rank_prompts, i_len, chunk_tokens)
    pass_tokens = b * i_len / passes  # over all dp ranks: what one pass's expert GEMMs see
    all_bytes = ev.bytes_weights_per_step(model, frame, pass_tokens)
    w_bytes = passes * _weights_per_gpu(model, frame, all_bytes, pass_tokens)
    busy_ranks = b / rank_prompts  # dense GEMMs: the busiest rank's prompts over its tp GPUs
    t_c = ev.prefill_compute_s(model, frame, i_len, b, 0.0, busy_ranks, pass_tokens)
    t_m = rf.latency_memory(
        w_bytes, _col(frame, "bandwidth_bytes_per_s"), _col(frame, "eff_eta_mem")
    )
    t_comm = passes * _pass_comm_s(model, frame, rank_prompts * i_len / passes)
    overhead = passes * _col(frame, "eff_prefill_overhead_ms")
    host = ev.prefill_host_floor_s(model, frame, passes)  # eager passes, #10 (t10p)
    return np.maximum(np.maximum(t_c, t_m) + t_comm, host) * 1e3 + overhead


def layout_col(frame: Frame, name: str) -> np.ndarray:
    """A layout column (pp, ep, dp_attention) as floats, 1 where a frame has none."""
    return _col(frame, name) if name in frame else np.ones(len(frame))


def _weights_per_gpu(
    model: Model, frame: Frame, all_bytes: np.ndarray, tokens: np.ndarray
) -> np.ndarray:
    """Weight bytes a GPU reads in one pass: the layout's split (`sharding`) when the frame
    has layout columns, else the plain tensor-parallel all_bytes / tp."""
    if all(c in frame for c in ("pp", "ep", "dp_attention", "ep_imbalance")):
        return sh.step_weights_per_gpu(model, frame, all_bytes, tokens)
    return all_bytes / _col(frame, "tp")


def _pass_comm_s(model: Model, frame: Frame, rank_tokens: np.ndarray) -> np.ndarray:
    """Collectives of one prefill pass: two all-reduces per tensor-parallel layer over tp
    (`sharding.allreduce_layers`: all layers at ep 1) of each attention rank's tokens, plus
    the EP all-to-all of those tokens (`sharding.alltoall_s`, 0 at ep 1)."""
    link, alpha = _col(frame, "link_bytes_per_s"), ev.collective_alpha_s(frame)
    tp, d = _col(frame, "tp"), model.hidden_size
    if "ep" not in frame:
        return rf.latency_allreduce(tp, model.num_hidden_layers, rank_tokens, d, link, alpha)
    layers = sh.allreduce_layers(model, frame)
    t_ar = layers * rf.latency_allreduce(tp, 1, rank_tokens, d, link, alpha)
    return t_ar + sh.alltoall_s(model, frame, rank_tokens / tp)


def whole_prompts(frame: Frame) -> np.ndarray:
    """Whether each row's engine packs whole prompts only into a pass (no chunked prefill:
    TensorRT-LLM's default, #10 s39); default no."""
    if "_whole_prompts" in frame:
        return values(frame, "_whole_prompts", bool)
    return np.zeros(len(frame), dtype=bool)


def prompts_per_pass(i_len: np.ndarray | float, chunk: np.ndarray | float) -> np.ndarray:
    """Whole prompts of i_len tokens one pass of `chunk` tokens holds (at least one: a
    prompt longer than the budget runs alone)."""
    return np.maximum(np.floor(np.asarray(chunk, float) / i_len), 1.0)


def passes_for(
    whole: np.ndarray | bool,
    prompts: np.ndarray,
    i_len: np.ndarray | float,
    chunk: np.ndarray | float,
) -> np.ndarray:
    """Passes that prefill `prompts` prompts of i_len tokens: ceil(prompts I / C) in chunks,
    ceil(prompts / floor(C / I)) where `whole` (the engine packs whole prompts only)."""
    chunked = np.ceil(prompts * i_len / chunk)
    packed = np.ceil(prompts / prompts_per_pass(i_len, chunk))
    return np.maximum(np.where(whole, packed, chunked), 1.0)


def prefill_passes(
    frame: Frame, prompts: np.ndarray, i_len: np.ndarray, chunk: np.ndarray | float
) -> np.ndarray:
    """`passes_for` each row of `frame`, whole prompts where its engine packs them so."""
    return passes_for(whole_prompts(frame), prompts, i_len, chunk)


def prefill_chunk(frame: Frame) -> np.ndarray:
    """Each row's prefill chunk (tokens a pass): the engine's for that GPU (#10)."""
    if "eff_prefill_chunk_tokens" in frame:
        return _col(frame, "eff_prefill_chunk_tokens")
    return np.full(len(frame), float(PREFILL_CHUNK_TOKENS))


def serving_wave_ms(
    model: Model,
    grid: Frame,
    tpot_step_ms: np.ndarray,
    chunk_tokens: np.ndarray | float | None = None,
    decode_rows_ms: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean TTFT and mean TPOT of a wave of B equal requests that arrive together.

    `vllm bench serve --request-rate inf` without a concurrency limit sends every prompt at
    once, and a closed loop's clients send their first requests together (the first round of
    `closed_loop_benchmark_ms`): a wave on an idle replica. The B prompts are prefilled in
    n = ceil(B I / C) chunked passes (C = 8192 tokens, `batch_prefill_ms` P for the whole
    wave, p = P / n per pass); prompt j (1..B, packed in order) completes in pass
    k_j = ceil(j I / C), so its TTFT is k_j p. It then decodes one token per pass in the
    remaining n - k_j passes (decode tokens ride in the mixed prefill batches), and the rest
    at the decode step s(B):

        TTFT = mean_j(k_j) p
        TPOT = mean_j((m_j p + (O - 1 - m_j) s) / (O - 1)),  m_j = min(n - k_j, O - 1)

    B * O / (P + (O - 1) s), the throughput `predict` compares for every row, is this wave's
    output rate. Queueing for a slot is nil by construction (at most B in flight).
    Under attention DP (issue #10) B is each rank's ceil(B / dp) prompts: the ranks prefill
    side by side. An engine that does not mix prefill into decode steps (SGLang,
    `_mixes_prefill` false, #10) runs the wave's prefill passes first: prompt j waits out
    the other n - k_j passes without decoding, then decodes all its tokens:

        TPOT (no mixing) = mean_j(((n - k_j) p + (O - 1) s) / (O - 1))

    An engine that packs whole prompts only (TensorRT-LLM, `_whole_prompts`, #10 s39) fits
    q = max(floor(C / I), 1) of them a pass: n = ceil(B / q) passes, k_j = ceil(j / q).

    Fused passes (#10, t10b; mixing engines, when `decode_rows_ms` D, the decode work of
    all B sequences in one pass, is given): pass k also runs the decode tokens of the
    r_k = min(floor((k - 1) C / I), B) prompts already prefilled, so it takes
    p_k = p + D r_k / B, and the sums above run over p_k instead of k p and m p.
    """
    b = np.maximum(np.rint(_col(grid, "batch")), 1.0).astype(int)
    i_len = _col(grid, "input_len")
    o_len = _col(grid, "output_len")
    chunk = np.broadcast_to(prefill_chunk(grid) if chunk_tokens is None else chunk_tokens, b.shape)
    mixes = mixes_prefill(grid)
    total = batch_prefill_ms(model, grid, b.astype(float), i_len, chunk)
    # under attention DP each rank prefills its own ceil(B / dp) prompts side by side (#10)
    rank_b = np.ceil(b / layout_col(grid, "dp_attention")).astype(int)
    passes = prefill_passes(grid, rank_b.astype(float), i_len, chunk)
    whole = whole_prompts(grid)
    per_pass = total / passes
    rows_ms = np.zeros(len(b)) if decode_rows_ms is None else np.asarray(decode_rows_ms, float)
    ttft = np.empty(len(b))
    tpot = np.empty(len(b))
    for n, (bb, ii, oo, nn) in enumerate(zip(rank_b, i_len, o_len, passes, strict=True)):
        # the pass prompt j finishes in: the passes its first j prompts take (#10 s39)
        k = passes_for(whole[n], np.arange(1, bb + 1, dtype=float), ii, chunk[n])
        decode = max(oo - 1.0, 1.0)
        if mixes[n]:
            # pass time p_k with the decode rows of the prompts prefilled before it (t10b)
            done = np.searchsorted(k, np.arange(nn), side="right")  # prompts before pass
            ends = np.concatenate(([0.0], np.cumsum(per_pass[n] + rows_ms[n] * done / bb)))
            ttft[n] = ends[k.astype(int)].mean()
            m = np.minimum(nn - k, decode)
            riding = ends[(k + m).astype(int)] - ends[k.astype(int)]
            tpot[n] = np.mean(riding + (decode - m) * tpot_step_ms[n]) / decode
        else:  # waits out the other prompts' passes, then decodes all O - 1 tokens
            ttft[n] = k.mean() * per_pass[n]
            tpot[n] = np.mean((nn - k) * per_pass[n] + decode * tpot_step_ms[n]) / decode
    return ttft, tpot


def mixes_prefill(grid: Frame) -> np.ndarray:
    """Whether each row's engine mixes prefill chunks into decode steps (#10; default yes)."""
    if "_mixes_prefill" in grid:
        return values(grid, "_mixes_prefill", bool)
    return np.ones(len(grid), dtype=bool)


def first_round_ms(
    model: Model,
    grid: Frame,
    tpot_step_ms: np.ndarray,
    decode_rows_ms: np.ndarray,
    slot_ms: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray]:
    """TTFT and TPOT (ms) of a closed loop's first round: its prompts reach an idle replica
    as one wave (`serving_wave_ms`), each with the per-request latency, and clients beyond
    the batch wait `slot_ms` for a slot. Shared by `closed_loop_benchmark_ms` and
    `planner estimate --num-prompts`."""
    ttft, tpot = serving_wave_ms(model, grid, tpot_step_ms, None, decode_rows_ms)
    return ttft + _col(grid, "eff_request_overhead_ms") + slot_ms, tpot
