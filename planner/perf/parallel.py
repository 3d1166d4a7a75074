"""Multi-GPU layouts of one replica: pipeline stages, expert parallel, attention data parallel.

A replica is `pp` pipeline stages; each stage holds `tp * dp` GPUs (`dp` = `dp_attention`,
the attention data-parallel ranks, each a `tp`-way tensor-parallel group inside one scale-up
domain). Experts of an MoE layer are split over `ep` ranks (`ep` divides the stage width;
the remaining `width / ep` ways split each expert tensor-parallel). Pure numpy formulas, SI
units; `pp = ep = dp = 1` reduces every term to the single-group tensor-parallel model.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.perf.roofline import ACTIVATION_BYTES

Array = NDArray[np.float64]

# Expert load imbalance under EP: the busiest EP rank's tokens over the mean (the step waits
# for it). The straggler factor max/mean quoted for DeepSeek-V3 wide-EP serving ranges from
# 1.05 (well balanced) to 1.3+ (heavy skew): impala-blog "Wide-EP part 3"
# (https://impala-blog.pages.dev/blog/wide-ep-part-3-balancing-portability, read 2026-12-01).
# The low end is taken because the public measurements prefer it: on the 144 AIC EP/DP rows
# the median |TPOT error| is 26% at 1.0, 30% at 1.1, 34% at 1.3 (benchmarks/aic_layouts.py).
EP_IMBALANCE = 1.05

# Fixed cost per MoE layer of expert parallel across scale-up domains (nodes), beyond the
# all-to-all's bandwidth and NIC latency: fitted, not physics. It is 2 x 203 us, the median
# over the 9 TensorRT-LLM wide-EP rows of DeepSeek-V3 (attention DP 16 and 64, 2 and 8 nodes
# of B200/H200) in data/calibration/aic_silicon_public.csv of measured TPOT minus the
# physics-only prediction, per dispatch or combine (benchmarks/aic_layouts.py). At those
# tiny batches it absorbs synchronisation and kernel costs the formula leaves out.
EP_CROSS_NODE_LAYER_S = 406e-6


def stage_width(tp: ArrayLike, dp: ArrayLike) -> Array:
    """GPUs per pipeline stage: tp GPUs per attention rank times dp ranks."""
    return np.asarray(tp, float) * np.asarray(dp, float)


def imbalance(ep: ArrayLike, factor: float = EP_IMBALANCE) -> Array:
    """The expert-load straggler factor: `factor` under EP (ep > 1), 1 otherwise."""
    return np.where(np.asarray(ep, float) > 1, factor, 1.0)


def micro_batches(pp: ArrayLike, batch: ArrayLike) -> Array:
    """Micro-batches in flight at decode: one per stage, at most one per sequence."""
    return np.maximum(np.minimum(np.asarray(pp, float), np.asarray(batch, float)), 1.0)


def pipeline_bubble(pp: ArrayLike, batch: ArrayLike) -> Array:
    """Fraction of stage time idle at decode: 1 - m / pp with m micro-batches."""
    pp = np.asarray(pp, float)
    return 1.0 - micro_batches(pp, batch) / pp


def latency_p2p(tokens: ArrayLike, hidden: int, link_bw: ArrayLike, latency_s: ArrayLike) -> Array:
    """One stage-to-stage send of `tokens x hidden` 16-bit activations: alpha + bytes / B."""
    payload = np.asarray(tokens, float) * hidden * ACTIVATION_BYTES
    return np.asarray(latency_s, float) + payload / np.asarray(link_bw, float)


def decode_period(stage_s: ArrayLike, p2p_s: ArrayLike, pp: ArrayLike) -> Array:
    """Time between two tokens of a sequence: its micro-batch crosses every stage and every
    stage boundary, pp * t_stage + (pp - 1) * t_p2p (with m <= pp micro-batches in flight the
    stages overlap other micro-batches, so this is also the period of the whole batch)."""
    pp = np.asarray(pp, float)
    return pp * np.asarray(stage_s, float) + (pp - 1.0) * np.asarray(p2p_s, float)


def prefill_pipelined(
    stage_s: ArrayLike, p2p_s: ArrayLike, pp: ArrayLike, n_micro: ArrayLike
) -> Array:
    """One prompt through pp stages in n_micro chunks (micro-batched prefill): the first
    stage's whole time plus (pp - 1) chunk-stage times and boundary sends on the critical
    path, t_s (1 + (pp - 1) / n) + (pp - 1) t_p2p(chunk)."""
    pp, n = np.asarray(pp, float), np.maximum(np.asarray(n_micro, float), 1.0)
    return np.asarray(stage_s, float) * (1.0 + (pp - 1.0) / n) + (pp - 1.0) * np.asarray(
        p2p_s, float
    )


def latency_alltoall(
    tokens_per_gpu: ArrayLike,
    top_k: int,
    hidden: int,
    ep: ArrayLike,
    local_fraction: ArrayLike,
    scaleup_bw: ArrayLike,
    scaleout_bw: ArrayLike,
    alpha_s: ArrayLike,
    skew: ArrayLike = 1.0,
) -> Array:
    """Dispatch plus combine of one MoE layer under EP; 0 when ep = 1.

    Each GPU sends its tokens' hidden states to the k experts' ranks, (ep - 1)/ep of them
    off-rank, 16-bit both ways: payload = tokens * k * d * 2 * (ep - 1)/ep * skew (the
    busiest rank receives `skew` times the mean). The share `local_fraction` of peers in the
    GPU's scale-up domain goes over that link, the rest over the scale-out NIC, in parallel:
    t = 2 * (alpha + max(f P / B_up, (1 - f) P / B_out)).
    """
    ep = np.asarray(ep, float)
    f = np.asarray(local_fraction, float)
    payload = (
        np.asarray(tokens_per_gpu, float) * top_k * hidden * ACTIVATION_BYTES * (ep - 1.0) / ep
    ) * np.asarray(skew, float)
    up = f * payload / np.asarray(scaleup_bw, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(f < 1.0, (1.0 - f) * payload / np.asarray(scaleout_bw, float), 0.0)
    one = np.asarray(alpha_s, float) + np.maximum(up, out)
    return np.where(ep > 1, 2.0 * one, 0.0)


def local_fraction(width: ArrayLike, domain: ArrayLike) -> Array:
    """Share of a stage's EP peers inside one GPU's scale-up domain: min(width, domain)/width."""
    w = np.asarray(width, float)
    return np.minimum(w, np.asarray(domain, float)) / w
