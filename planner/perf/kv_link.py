"""Which link a disaggregated pool moves its KV cache over (issue #11).

A prefill worker and a decode worker that sit in one scale-up domain (e.g. prefill tp 2 and
decode tp 4 on one 8-GPU NVLink node) pass the KV over the scale-up link; otherwise it crosses
the scale-out network (one NIC per GPU). `kv_link` is a grid column: "scale-out" or
"scale-up" on pool rows, "none" on aggregated ones. A scale-up pool row is valid only where
its worker leaves room in one domain for a partner worker, and a pool without a sourced
scale-out link may still be a scale-up pool. (`planner estimate` takes scale-up exactly when
the whole deployment fits one domain; a plan's grid offers it to workers of at most half a
domain, planning/pool_layouts.py.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from planner.perf.collectives import link_kind
from planner.perf.table import Frame, values
from planner.schema.hardware import Gpu

KV_LINKS = ("scale-out", "scale-up")
NONE = "none"
NO_ROOM = "leaves no room for its partner pool"


class InvalidKvLink(ValueError):
    """A (role, kv_link) a worker cannot use; the message says why."""


def role_links(roles: Sequence[str], links: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(role, kv_link) pairs: aggregated once with no link, each pool role once per link."""
    for role in roles:
        if role == "aggregated":
            yield role, NONE
        else:
            yield from ((role, link) for link in links)


def check_kv_link(gpu: Gpu, role: str, link: str, gpus_per_replica: int) -> None:
    """Raise InvalidKvLink unless a `role` worker of `gpus_per_replica` GPUs can use `link`
    (a missing scale-out link is `candidates.check_role`'s to report)."""
    if role == "aggregated":
        return
    if link not in KV_LINKS:
        raise InvalidKvLink(f"kv_link {link} is not one of {', '.join(KV_LINKS)}")
    if link == "scale-up" and link_kind(gpu) == "pcie":
        # PCIe cards run tensor parallel within a server (issue #10), but the pools' KV
        # transfer is modelled for GPU fabrics (NVLink, Infinity Fabric): not over PCIe
        raise InvalidKvLink(
            f"{gpu.id}'s GPUs share only PCIe in a server: its {role} pool would pass the KV "
            "over PCIe, which the model does not time; it needs a scale-out link"
        )
    if link == "scale-up" and gpus_per_replica >= domain_gpus(gpu):
        raise InvalidKvLink(
            f"a {role} worker of {gpus_per_replica} GPUs {NO_ROOM} in one "
            f"{domain_gpus(gpu)}-GPU scale-up domain of {gpu.id}: its KV crosses the scale-out link"
        )


def domain_gpus(gpu: Gpu) -> int:
    """GPUs of one scale-up domain inside one node: where both pools can share NVLink."""
    return min(gpu.scaleup_domain_gpus, gpu.gpus_per_node or gpu.scaleup_domain_gpus)


def link_bytes_per_s(df: Frame) -> np.ndarray:
    """Per-GPU bandwidth of each row's KV transfer: NVLink-class on scale-up rows."""
    up = values(df, "kv_link") == "scale-up"
    scaleup = values(df, "link_bytes_per_s", float)
    return np.where(up, scaleup, values(df, "scaleout_link_bytes_per_s", float))
