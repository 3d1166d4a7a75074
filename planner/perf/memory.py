"""Memory per GPU: weights, KV cache, activation workspace; the largest batch that fits."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from planner.perf import roofline as rf
from planner.schema.model import Model

Array = NDArray[np.float64]

PREFILL_CHUNK_TOKENS = 8192  # default max_num_batched_tokens; engines set their own
LOGIT_BYTES = 4.0  # fp32 logits per vocabulary entry per sequence


def bytes_weights_total(model: Model, weight_bytes: Array, embed_bytes: Array) -> Array:
    """All weights in memory: transformer blocks at the quant's width, embeddings 16-bit."""
    block = model.params_total - model.params_embedding - model.params_lm_head
    return block * weight_bytes + (model.params_embedding + model.params_lm_head) * embed_bytes


def bytes_kv_cache_per_sequence(model: Model, context: Array, kv_bytes: Array) -> Array:
    """KV bytes one sequence holds at `context` tokens, over all layers (whole model)."""
    window = model.sliding_window.window if model.sliding_window else 0
    positions = rf.kv_positions(context, model.n_global_layers, model.n_sliding_layers, window)
    return positions * model.kv_elements_per_token_per_layer * kv_bytes


def kv_split(model: Model, tp: Array) -> Array:
    """Ways the KV cache divides across tp GPUs: min(tp, KV heads); MLA's latent: 1."""
    return np.minimum(tp, model.kv_heads_splittable).astype(float)


def bytes_activations_per_gpu(
    model: Model,
    input_len: Array,
    batch: Array,
    tp: Array,
    chunk_tokens: Array | float = PREFILL_CHUNK_TOKENS,
) -> Array:
    """Activation workspace of one prefill chunk plus fp32 logits of the batch, per GPU."""
    chunk = np.minimum(input_len, chunk_tokens)
    inner = model.intermediate_size
    if model.moe is not None:
        inner = max(inner, model.moe.moe_intermediate_size * model.moe.num_experts_per_tok)
    workspace = chunk * (4.0 * model.hidden_size + 2.0 * inner / tp) * rf.ACTIVATION_BYTES
    logits = batch * model.vocab_size * LOGIT_BYTES / tp
    return workspace + logits


def max_batch_that_fits(free_bytes: Array, per_sequence_bytes: Array) -> Array:
    """floor(free / per-sequence), 0 where nothing is free."""
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.floor(free_bytes / per_sequence_bytes)
    return np.where(free_bytes > 0, np.maximum(n, 0), 0).astype(np.int64)
