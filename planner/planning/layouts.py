"""The layout axes a scenario searches (pp, ep, dp_attention) and what one node can hold.

Default ("auto"): a model whose weights fit in one node of some allowed GPU searches the
single-node layouts only (pp = ep = dp_attention = 1: the grid, and the solve time, stay as
they were); one that fits no node also searches pipeline stages and, for MoE models,
expert parallel with DP attention across nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.perf import memory as mem
from planner.schema.hardware import Gpu
from planner.schema.model import Model
from planner.schema.quant import Quant
from planner.schema.scenario import Search

AUTO_PP = (1, 2, 4)
AUTO_EP = (1, 8, 16, 32)
AUTO_DP = (1, 2, 4, 8, 16, 32)
NODE_FILL = 0.9  # weights may take at most this share of a node's memory to "fit one node"


@dataclass(frozen=True)
class Axes:
    """The layout values the grid crosses."""

    pps: tuple[int, ...]
    eps: tuple[int, ...]
    dp_attentions: tuple[int, ...]


def node_gpus(gpu: Gpu) -> int:
    """GPUs of one node for the fit test: the server, at most the scale-up domain."""
    return min(gpu.gpus_per_node or gpu.scaleup_domain_gpus, gpu.scaleup_domain_gpus)


def weights_bytes(model: Model, quant: Quant) -> float:
    """All weights of the model at this quant."""
    return float(
        mem.bytes_weights_total(
            model,
            np.asarray(quant.weight_bytes_per_param),
            np.asarray(quant.embedding_bytes_per_param),
        )
    )


def fits_one_node(model: Model, gpus: Sequence[Gpu], quants: Sequence[Quant]) -> bool:
    """Whether some allowed (GPU, quant) holds the weights in one node with room for KV."""
    return any(
        weights_bytes(model, q) <= NODE_FILL * node_gpus(g) * g.memory_bytes
        for g in gpus
        for q in quants
    )


def search_axes(search: Search, model: Model, gpus: Sequence[Gpu], quants: Sequence[Quant]) -> Axes:
    """The scenario's pp / ep / dp_attention lists, each defaulting by `fits_one_node`."""
    multi = not fits_one_node(model, gpus, quants)
    moe = model.moe is not None and multi
    return Axes(
        pps=tuple(search.pp or (AUTO_PP if multi else (1,))),
        eps=tuple(search.ep or (AUTO_EP if moe else (1,))),
        dp_attentions=tuple(search.dp_attention or (AUTO_DP if moe else (1,))),
    )


def min_gpus_for_weights(model: Model, gpu: Gpu, quant: Quant) -> int:
    """The fewest GPUs whose memory (at NODE_FILL) holds the weights alone."""
    return int(np.ceil(weights_bytes(model, quant) / (NODE_FILL * gpu.memory_bytes)))
