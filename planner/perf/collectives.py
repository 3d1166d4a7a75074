"""Interconnect-aware tensor-parallel collectives: bandwidth per GPU at a TP degree and the
wire latency of a ring all-reduce per link type (issue #10).

A switched fabric (NVSwitch) gives each GPU its full scale-up bandwidth towards any peer; a
fully connected mesh (AMD Infinity Fabric, Gaudi's on-die RoCE) gives one direct link per
peer, so a TP group of t GPUs uses t - 1 of a GPU's `scaleup_mesh_peers` links:
B(t) = B_link * min(t - 1, peers) / peers (MI300X at TP2: 448 / 7 = 64 GB/s, not 448).

Latency of a ring all-reduce on t ranks, NCCL's own tuning model (src/graph/tuning.cc,
NVIDIA/nccl commit 01afd20a, protocol LL): base + 2 (t - 1) hops, hop latency 0.47 us on
NVLink and 1.0 us on PCIe. The base (and every kernel-launch cost) is the engine's fitted
`allreduce_latency_us`; this module adds the part that grows with t.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from planner.schema.hardware import Gpu

# Ring all-reduce latency per hop (us), NCCL tuning.cc hwLat[.][Ring][LL] (commit 01afd20a).
# Infinity Fabric (RCCL) and Gaudi RoCE (HCCL) have no published per-hop figure found: the
# NVLink and PCIe values stand in for them, an explicit assumption.
HOP_LATENCY_US: dict[str, float] = {"nvlink": 0.47, "pcie": 1.0, "xgmi": 0.47, "roce": 1.0}
HOP_LATENCY_SOURCE = "NCCL src/graph/tuning.cc hwLat (Ring, LL), NVIDIA/nccl commit 01afd20a"


def link_kind(gpu: Gpu) -> str:
    """The scale-up link type, read from the catalog's interconnect text."""
    text = gpu.interconnect.lower()
    if gpu.scaleup_domain_gpus > 1 and "nvlink" in text:
        return "nvlink"
    if "infinity fabric" in text or "xgmi" in text:
        return "xgmi"
    if "roce" in text:
        return "roce"
    return "pcie"


def link_bandwidth_bytes_per_s(gpu: Gpu, tp: int) -> float:
    """Bandwidth per GPU for a TP group of `tp`: all of it on a switch, t - 1 links of a mesh."""
    full = gpu.scaleup_link_gb_per_s * 1e9
    peers = gpu.scaleup_mesh_peers
    if not peers or tp <= 1:
        return full
    return full * min(tp - 1, peers) / peers


def allreduce_latency_s(tp: ArrayLike, engine_alpha_us: ArrayLike, hop_us: ArrayLike) -> NDArray:
    """Per-collective latency (s): the engine's fitted base plus 2 (t - 1) ring hops; zero in
    ideal mode (engine alpha 0) and at t = 1."""
    t = np.asarray(tp, dtype=float)
    alpha = np.asarray(engine_alpha_us, dtype=float)
    total = alpha + 2.0 * np.maximum(t - 1.0, 0.0) * np.asarray(hop_us, dtype=float)
    return np.where(alpha > 0, total, 0.0) * 1e-6
