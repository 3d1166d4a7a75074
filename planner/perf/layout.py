"""Which multi-GPU layouts of a replica are valid, and the grid columns each one fixes.

A layout is (tp, pp, ep, dp_attention): `pp` pipeline stages of `tp * dp_attention` GPUs,
experts over `ep` ranks of a stage. Tensor parallelism stays inside one scale-up domain
(`check_tp`); a replica larger than the domain needs the GPU's scale-out link.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from planner.perf.parallel import EP_IMBALANCE
from planner.schema.hardware import Gpu
from planner.schema.model import Model

LAYOUT_COLUMNS = ("pp", "ep", "dp_attention")


class InvalidLayout(ValueError):
    """A (tp, pp, ep, dp_attention) that cannot run; the message says why."""


def layouts(
    tps: Sequence[int], pps: Sequence[int], eps: Sequence[int], dps: Sequence[int]
) -> Iterator[tuple[int, tuple[int, int, int]]]:
    """Every (tp, (pp, ep, dp_attention)) of the grid spec, tp outermost."""
    for tp in tps:
        for pp in pps:
            for dp in dps:
                for ep in eps:
                    yield int(tp), (int(pp), int(ep), int(dp))


def gpus_per_replica(tp: int, pp: int, dp: int) -> int:
    """tp GPUs per attention rank, dp ranks per stage, pp stages."""
    return tp * dp * pp


def check_layout(model: Model, gpu: Gpu, tp: int, pp: int, ep: int, dp: int) -> None:
    """Raise InvalidLayout (a ValueError the grid reports) unless this layout can run."""
    if min(pp, ep, dp) < 1:
        raise InvalidLayout(f"pp, ep and dp_attention must be >= 1, got {pp}, {ep}, {dp}")
    if pp > model.num_hidden_layers:
        raise InvalidLayout(f"pp {pp} exceeds the {model.num_hidden_layers} layers")
    width = tp * dp
    if (ep > 1 or dp > 1) and model.moe is None:
        raise InvalidLayout(
            f"ep/dp_attention need an MoE model; {model.id} is dense (more replicas do that)"
        )
    if dp > 1 and ep == 1:
        raise InvalidLayout("dp_attention > 1 needs expert parallel (ep > 1)")
    if ep > 1 and (width % ep or model.moe.n_routed_experts % ep):  # type: ignore[union-attr]
        raise InvalidLayout(
            f"ep {ep} must divide the stage's {width} GPUs (tp x dp_attention) and the "
            f"{model.moe.n_routed_experts} experts"  # type: ignore[union-attr]
        )
    total = gpus_per_replica(tp, pp, dp)
    if total > gpu.scaleup_domain_gpus and not gpu.scaleout_link_gb_per_s:
        raise InvalidLayout(
            f"{total} GPUs per replica span more than one {gpu.scaleup_domain_gpus}-GPU "
            f"scale-up domain and the catalog has no scale-out link for {gpu.id}"
        )


def layout_columns(gpu: Gpu, tp: int, pp: int, ep: int, dp: int) -> dict:
    """The grid columns a valid layout fixes on this GPU."""
    total = gpus_per_replica(tp, pp, dp)
    per_node = gpu.gpus_per_node or gpu.scaleup_domain_gpus
    out_bw = gpu.scaleout_link_gb_per_s
    return {
        "pp": pp,
        "ep": ep,
        "dp_attention": dp,
        "gpus_per_replica": total,
        "nodes_per_replica": math.ceil(total / per_node),
        "scaleup_domain_gpus": gpu.scaleup_domain_gpus,
        "scaleout_link_bytes_per_s": out_bw * 1e9 if out_bw else np.nan,
        "scaleout_latency_us": gpu.scaleout_latency_us or 0.0,
        "ep_imbalance": EP_IMBALANCE if ep > 1 else 1.0,
    }
