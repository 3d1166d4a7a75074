"""Speculative decoding and prefix caching terms of the performance model (issue #11).

Speculation: a drafter (the model's own MTP module, or a small draft model) proposes k tokens
one at a time; the target verifies all k + 1 positions in one forward pass. With a per-token
acceptance a (independent, Leviathan et al. 2023), the tokens emitted per verify step are

    E(k, a) = 1 + a + a^2 + ... + a^k = (1 - a^(k+1)) / (1 - a)      (k + 1 when a = 1)

so the decode time per output token is (t_verify(B (k+1) tokens) + k t_draft(B)) / E.
The verify pass reads the weights once (the experts its B (k+1) tokens touch) and the KV cache
once, but does k + 1 times the GEMM and attention FLOPs: free while memory-bound, a loss once
compute-bound at large batches. The drafter holds its weights and its own KV cache. The k
draft forwards run inside the verify's engine step, so each pays the engine's fixed cost of
one forward (`draft_forward_ms`: CUDA-graph replay, input preparation, its sampling), not the
step's whole fixed cost (scheduling and output processing are paid once a step).

Prefix caching: P of a prompt's I tokens are served from the cache, so prefill computes only
the I - P new tokens (attending to all I) and the shared prefix's KV is held once per replica.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.perf import roofline as rf
from planner.schema.model import Model

Array = NDArray[np.float64]
MODES = ("off", "mtp", "draft")


@dataclass(frozen=True)
class SpecOption:
    """One speculation setting of the grid, with the drafter's size resolved to numbers."""

    mode: str = "off"  # off | mtp | draft
    spec_tokens: int = 0  # k: draft tokens per verify step
    acceptance: float = 0.0  # a: per-token acceptance rate
    draft_params_held: float = 0.0  # parameters the drafter keeps in memory
    draft_params_read: float = 0.0  # parameters one draft step reads (dense drafter)
    draft_layers: int = 0  # drafter layers (two all-reduces each under tp)
    draft_kv_elems_per_token: float = 0.0  # KV elements per token of the drafter, all layers


OFF = SpecOption()


def expected_tokens_per_step(spec_tokens: ArrayLike, acceptance: ArrayLike) -> Array:
    """E(k, a) = (1 - a^(k+1)) / (1 - a): tokens one verify step emits (1 when k = 0)."""
    k = np.asarray(spec_tokens, dtype=float)
    a = np.asarray(acceptance, dtype=float)
    near_one = np.abs(1.0 - a) < 1e-12
    safe = np.where(near_one, 0.5, a)
    return np.where(near_one, k + 1.0, (1.0 - safe ** (k + 1.0)) / (1.0 - safe))


def mtp_option(model: Model, spec_tokens: int, acceptance: float) -> SpecOption:
    """The model's own MTP module: one decoder layer (the average block layer, all its
    experts held) sharing the embedding and LM head; its KV is one layer's."""
    block = model.params_total - model.params_embedding - model.params_lm_head
    head = model.params_lm_head or model.params_embedding
    layer = block / model.num_hidden_layers
    return SpecOption(
        mode="mtp",
        spec_tokens=spec_tokens,
        acceptance=acceptance,
        draft_params_held=layer,
        draft_params_read=layer + head,  # dense read; MoE reads are per batch (evaluate)
        draft_layers=1,
        draft_kv_elems_per_token=float(model.kv_elements_per_token_per_layer),
    )


def draft_option(draft: Model, spec_tokens: int, acceptance: float) -> SpecOption:
    """A separate draft model: all its weights held and (but the input table) read per step."""
    read = draft.params_total - (draft.params_embedding if draft.params_lm_head else 0)
    positions = draft.n_global_layers + draft.n_sliding_layers  # per token, short contexts
    return SpecOption(
        mode="draft",
        spec_tokens=spec_tokens,
        acceptance=acceptance,
        draft_params_held=float(draft.params_total),
        draft_params_read=float(read),
        draft_layers=draft.num_hidden_layers,
        draft_kv_elems_per_token=float(positions * draft.kv_elements_per_token_per_layer),
    )


def new_prefill_tokens(input_len: ArrayLike, cached: ArrayLike) -> Array:
    """Prompt tokens prefill computes: I - P (at least 1, the token that emits the first)."""
    return np.maximum(np.asarray(input_len, float) - np.asarray(cached, float), 1.0)


def attention_pairs_after_prefix(
    input_len: ArrayLike, cached: ArrayLike, n_global: int, n_sliding: int, window: int
) -> Array:
    """Causal query-key pairs of the I - P new tokens against all I: pairs(I) - pairs(P)."""
    whole = rf.attention_pairs_prefill(input_len, n_global, n_sliding, window)
    return whole - rf.attention_pairs_prefill(cached, n_global, n_sliding, window)
