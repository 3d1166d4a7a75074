"""Pure roofline formulas over numpy arrays: arrays in, arrays out, SI units (bytes, s, FLOP).

The names follow `<quantity>_<phase>_<scope>`. Every function is vectorised: any argument
may be a scalar or an array broadcastable against the others.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]

ACTIVATION_BYTES = 2.0  # all-reduces move 16-bit activations


def experts_touched(n_experts: float, top_k: float, tokens: ArrayLike) -> Array:
    """Expected distinct experts a batch of `tokens` routes to: E * (1 - (1 - k/E)^tokens)."""
    tokens = np.asarray(tokens, dtype=float)
    if n_experts <= 0:
        return np.zeros_like(tokens)
    return n_experts * (1.0 - np.power(1.0 - top_k / n_experts, tokens))


def kv_positions(context: ArrayLike, n_global: int, n_sliding: int, window: int) -> Array:
    """Layer-positions held in the KV cache for one sequence: global layers keep every token,
    sliding-window layers at most `window`."""
    context = np.asarray(context, dtype=float)
    return n_global * context + n_sliding * np.minimum(context, window)


def attention_pairs_prefill(length: ArrayLike, n_global: int, n_sliding: int, window: int) -> Array:
    """Query-key pairs of causal prefill summed over layers (I^2/2 per global layer; a window
    caps each query's keys at `window`)."""
    n = np.asarray(length, dtype=float)
    w = np.minimum(n, window)
    return n_global * n * n / 2.0 + n_sliding * (n * w - w * w / 2.0)


def latency_memory(bytes_read: ArrayLike, bandwidth: ArrayLike, efficiency: ArrayLike) -> Array:
    """Seconds to stream `bytes_read` at `bandwidth * efficiency` bytes/s."""
    return np.asarray(bytes_read, float) / (
        np.asarray(bandwidth, float) * np.asarray(efficiency, float)
    )


def latency_compute(flops: ArrayLike, peak: ArrayLike, efficiency: ArrayLike) -> Array:
    """Seconds to run `flops` at `peak * efficiency` FLOP/s."""
    return np.asarray(flops, float) / (np.asarray(peak, float) * np.asarray(efficiency, float))


def latency_allreduce(
    tp: ArrayLike,
    n_layers: int,
    tokens: ArrayLike,
    hidden: int,
    link_bandwidth: ArrayLike,
    alpha_s: ArrayLike,
) -> Array:
    """Two ring all-reduces per layer of `tokens x hidden` 16-bit activations; 0 when tp=1.

    t = 2 L (alpha + 2 (t-1)/t * tokens * d * 2 / B_link)
    """
    tp = np.asarray(tp, dtype=float)
    payload = 2.0 * (tp - 1.0) / tp * np.asarray(tokens, float) * hidden * ACTIVATION_BYTES
    per_layer = alpha_s + payload / np.asarray(link_bandwidth, float)
    return np.where(tp > 1, 2.0 * n_layers * per_layer, 0.0)


BOUNDS = ("compute", "memory")  # what the codes of `roofline_bound` stand for


def roofline_bound(t_memory: ArrayLike, t_compute: ArrayLike) -> NDArray[np.int8]:
    """Codes into BOUNDS: 1 ('memory') where streaming bytes takes longer than the math, else
    0 ('compute'); one byte a row instead of a string."""
    return (np.asarray(t_memory) >= np.asarray(t_compute)).astype(np.int8)


def arithmetic_intensity(flops: ArrayLike, bytes_read: ArrayLike) -> Array:
    """FLOPs per byte moved."""
    return np.asarray(flops, float) / np.maximum(np.asarray(bytes_read, float), 1.0)


def serving_rate(
    batch: ArrayLike, output_len: ArrayLike, tpot_step: ArrayLike, prefill: ArrayLike
) -> Array:
    """Requests/s of a replica holding `batch` sequences, prefill interleaved with decode:
    R = B / (O * TPOT(B) + B * t_pf)."""
    b = np.asarray(batch, float)
    return b / (np.asarray(output_len, float) * tpot_step + b * np.asarray(prefill, float))


def tpot_with_prefill(
    tpot_step: ArrayLike, batch: ArrayLike, output_len: ArrayLike, prefill: ArrayLike
) -> Array:
    """TPOT users see, as benchmarks define it ((latency - TTFT) / (O - 1)): the decode step
    plus the prefills of the *other* B - 1 sequences that interrupt a request's O - 1 decode
    steps (each slot starts one new request per request lifetime). A request's own prefill
    is in its TTFT, not its TPOT, so at B = 1 this is exactly the decode step.

    TPOT = TPOT(B) + (B - 1) t_pf / max(O - 1, 1)
    """
    b = np.asarray(batch, float)
    steps = np.maximum(np.asarray(output_len, float) - 1.0, 1.0)
    others = np.maximum(b - 1.0, 0.0) * np.asarray(prefill, float)
    return np.asarray(tpot_step, float) + others / steps


def decode_rows_in_prefill(
    decode_rows: ArrayLike, batch: ArrayLike, new_tokens: ArrayLike, chunk: ArrayLike
) -> Array:
    """What the other B - 1 sequences' decode tokens add to a prompt's TTFT on a busy
    replica whose engine runs a step's decode tokens and prefill chunks as one forward
    (vLLM V1: the running requests are scheduled first, a token of the step's budget each,
    and the waiting prompt's chunk takes what is left; issue #10, t10b). The prompt needs
    n = ceil(I / max(chunk - (B - 1), 1)) such passes, each carrying the others' decode work
    (`decode_rows` is that work for all B sequences: GEMM FLOPs, KV read or attention, the
    per-sequence cost; the weight read and fixed costs are the prefill's already):

        t = n x decode_rows x (B - 1) / B
    """
    b = np.maximum(np.asarray(batch, float), 1.0)
    others = b - 1.0
    budget = np.maximum(np.asarray(chunk, float) - others, 1.0)
    passes = np.ceil(np.asarray(new_tokens, float) / budget)
    return passes * np.asarray(decode_rows, float) * others / b
