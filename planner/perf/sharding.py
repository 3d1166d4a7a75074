"""How weights, FLOPs and collectives divide over a replica's layout (tp, pp, ep, dp).

Non-expert weights (attention, dense FFN, shared experts, embeddings) are split tp ways and
replicated over the dp attention ranks; routed experts are split over all `tp * dp` GPUs of
a stage (`ep` ranks, each expert further `width / ep` ways); layers divide evenly over the
`pp` stages (the embedding and LM head are counted as if spread too: a simplification).
With tp = width and pp = 1 every function here is the plain tensor-parallel split.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.perf import memory as mem
from planner.perf import parallel
from planner.perf import roofline as rf
from planner.perf.table import Frame, values
from planner.schema.model import Model

Array = NDArray[np.float64]


def col(df: Frame, name: str) -> Array:
    """A grid column as floats."""
    return values(df, name, float)


def width(df: Frame) -> Array:
    """GPUs per pipeline stage: tp x dp_attention."""
    return col(df, "tp") * col(df, "dp_attention")


def expert_bytes_total(model: Model, weight_bytes: Array) -> Array | float:
    """Bytes of every routed expert of the model (0 for a dense model)."""
    if model.moe is None:
        return 0.0
    return model.n_moe_layers * model.moe.n_routed_experts * model.params_per_expert * weight_bytes


def expert_bytes_step(model: Model, weight_bytes: Array, tokens: Array) -> Array | float:
    """Bytes of the experts `tokens` tokens touch in one pass, whole model."""
    if model.moe is None:
        return 0.0
    touched = rf.experts_touched(model.moe.n_routed_experts, model.moe.num_experts_per_tok, tokens)
    return model.n_moe_layers * touched * model.params_per_expert * weight_bytes


def routed_active_params(model: Model) -> float:
    """Routed-expert parameters one token multiplies with: L_moe * k * params per expert."""
    if model.moe is None:
        return 0.0
    return float(model.n_moe_layers * model.moe.num_experts_per_tok * model.params_per_expert)


def weights_per_gpu(model: Model, df: Frame) -> Array:
    """Weights one GPU holds: (non-expert / tp + experts / width) / pp."""
    wb = col(df, "weight_bytes_per_param")
    total = mem.bytes_weights_total(model, wb, col(df, "embedding_bytes_per_param"))
    experts = expert_bytes_total(model, wb)
    return ((total - experts) / col(df, "tp") + experts / width(df)) / col(df, "pp")


def step_weights_per_gpu(model: Model, df: Frame, all_bytes: Array, tokens: Array) -> Array:
    """Weight bytes one GPU reads in a pass of `tokens` tokens (`all_bytes`: the whole
    model's read at that many tokens). Under EP the busiest rank reads `ep_imbalance` times
    its share of the touched experts, at most all of its own."""
    wb = col(df, "weight_bytes_per_param")
    touched = expert_bytes_step(model, wb, tokens)
    busiest = np.minimum(touched * col(df, "ep_imbalance"), expert_bytes_total(model, wb))
    return ((all_bytes - touched) / col(df, "tp") + busiest / width(df)) / col(df, "pp")


def split_flops(
    model: Model, df: Frame, flops: Array, tokens: Array, attention_ranks: Array
) -> Array:
    """FLOPs per GPU of a pass of `tokens` tokens whose whole-model FLOPs are `flops`:
    the non-expert part over tp x `attention_ranks` GPUs, the routed experts over the
    stage's width times the EP imbalance; / pp."""
    routed = 2.0 * routed_active_params(model) * np.asarray(tokens, float)
    dense = (flops - routed) / (col(df, "tp") * attention_ranks)
    return (dense + routed * col(df, "ep_imbalance") / width(df)) / col(df, "pp")


def allreduce_layers(model: Model, df: Frame) -> Array:
    """Layer-equivalents of the two-all-reduce-per-layer formula per stage: attention always
    all-reduces over tp, an MLP only where it is tensor-parallel (dense layers, MoE at ep 1)."""
    moe_tp = np.where(col(df, "ep") > 1, 0.0, float(model.n_moe_layers))
    layers = model.num_hidden_layers + model.n_dense_layers + moe_tp
    return layers / 2.0 / col(df, "pp")


def alltoall_alpha(df: Frame) -> Array:
    """Latency of one all-to-all: the scale-out one when the stage spans domains."""
    spans = width(df) > col(df, "scaleup_domain_gpus")
    return np.where(spans, col(df, "scaleout_latency_us"), col(df, "eff_allreduce_latency_us"))


def p2p_link(df: Frame) -> tuple[Array, Array]:
    """(bandwidth B/s, latency s) of a stage-to-stage send: scale-out once the replica spans
    more than one scale-up domain, else the scale-up link."""
    spans = col(df, "gpus_per_replica") > col(df, "scaleup_domain_gpus")
    bw = np.where(spans, col(df, "scaleout_link_bytes_per_s"), col(df, "link_bytes_per_s"))
    lat = np.where(spans, col(df, "scaleout_latency_us"), col(df, "eff_allreduce_latency_us"))
    return bw, lat * 1e-6


def alltoall_s(model: Model, df: Frame, tokens_per_gpu: Array, latency: bool = True) -> Array:
    """Seconds of EP dispatch + combine per stage for `tokens_per_gpu` tokens leaving each
    GPU (0 for a dense model or ep = 1); `latency=False` gives the payload term alone."""
    if model.moe is None:
        return np.zeros_like(np.asarray(tokens_per_gpu, float) * col(df, "tp"))
    alpha = alltoall_alpha(df) * 1e-6 * (1.0 if latency else 0.0)
    per_layer = parallel.latency_alltoall(
        tokens_per_gpu,
        model.moe.num_experts_per_tok,
        model.hidden_size,
        col(df, "ep"),
        parallel.local_fraction(width(df), col(df, "scaleup_domain_gpus")),
        col(df, "link_bytes_per_s"),
        col(df, "scaleout_link_bytes_per_s"),
        alpha,
        col(df, "ep_imbalance"),
    )
    spans = ep_spans_nodes(df) & latency
    fixed = np.where(spans, cross_node_layer_s(df), 0.0)
    return (per_layer + fixed) * model.n_moe_layers / col(df, "pp")


def ep_spans_nodes(df: Frame) -> NDArray[np.bool_]:
    """Expert parallel whose stage spans more than one scale-up domain (node)."""
    return (col(df, "ep") > 1) & (width(df) > col(df, "scaleup_domain_gpus"))


def cross_node_layer_s(df: Frame) -> Array:
    """The engine's fixed cost per MoE layer of EP across nodes (seconds): its profile's
    `ep_cross_node_layer_us`, else parallel.EP_CROSS_NODE_LAYER_S (frames without it)."""
    if "eff_ep_cross_node_layer_us" in df:
        return col(df, "eff_ep_cross_node_layer_us") * 1e-6
    return np.full_like(col(df, "ep"), parallel.EP_CROSS_NODE_LAYER_S)


def cross_node_tokens_s(model: Model, df: Frame, stage_tokens: ArrayLike) -> Array:
    """Decode cost of a stage's MoE layers that grows with the tokens of the step when EP spans
    nodes: n_moe_layers / pp x `ep_cross_node_token_us` x the micro-batch's tokens over all
    attention-DP ranks (vLLM's default all2all backend, allgather_reducescatter, gathers every
    DP rank's tokens onto every rank; docs.vllm.ai serving/expert_parallel_deployment). An
    empirical per-engine term (fitted on vLLM's EP16 rows), not transport physics: 0 for a
    dense model, within one node, or where the profile has no such constant."""
    if model.moe is None or "eff_ep_cross_node_token_us" not in df:
        return np.zeros_like(col(df, "ep"))
    per_token = col(df, "eff_ep_cross_node_token_us") * 1e-6
    tokens = np.asarray(stage_tokens, float)
    cost = per_token * tokens * model.n_moe_layers / col(df, "pp")
    return np.where(ep_spans_nodes(df), cost, 0.0)
