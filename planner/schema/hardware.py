"""GPU catalog entries: memory, bandwidth, dense FLOPS per dtype, fabric, power, prices."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from planner.schema import limits
from planner.schema.bounded import EntryId, between, whole
from planner.schema.common import Provenance, Strict

ComputeDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "fp4"]
PriceTier = Literal[
    "on_demand",
    "spot",
    "reserved_1y",
    "reserved_3y",
    "capacity_block",
    "committed",
    "marketplace",
    "serverless",
    "owned",
]


Bandwidth = between(0, limits.MAX_BANDWIDTH_GB_PER_S, unit="GB/s", low_open=True)
Tflops = between(0, limits.MAX_TFLOPS, unit="TFLOPS", low_open=True)


class GpuPrice(Strict):
    """One published price per GPU-hour with its provider, tier, date and source."""

    provider: str
    tier: PriceTier = "on_demand"
    usd_per_gpu_hour: Annotated[
        float, between(0, limits.MAX_USD_PER_GPU_HOUR, unit="USD per GPU-hour", low_open=True)
    ]
    offering: str | None = None
    region: str | None = None
    as_of: str = Field(min_length=4)
    source: str = Field(min_length=3)
    notes: str | None = None


class DeviceMemory(Strict):
    """The bytes the device itself reports (nvidia-smi "memory.total"), with its source: a
    card sold as "80 GB" holds about 80 GiB, not 80e9 bytes."""

    mib: float = Field(gt=0, description="total device memory as reported, MiB (2^20 bytes)")
    source: str = Field(min_length=3)
    as_of: str = Field(min_length=4)


class Gpu(Strict):
    """One accelerator package (per GPU, per OAM); numbers are dense peaks, never sparse."""

    id: EntryId
    name: str
    vendor: str
    family: str = Field(description="efficiency family in engine profiles, e.g. hopper")
    memory_gb: Annotated[float, between(0, limits.MAX_MEMORY_GB, unit="GB", low_open=True)]
    memory_device: DeviceMemory | None = Field(
        default=None, description="bytes the device reports; the model uses them when known"
    )
    hbm_bandwidth_gb_per_s: Annotated[float, Bandwidth]
    dense_tflops: dict[ComputeDtype, Annotated[float, Tflops]] = Field(
        description="dense tensor peak per compute dtype; a dtype absent means unsupported"
    )
    scaleup_link_gb_per_s: Annotated[float, Bandwidth, Field(description="per GPU, one direction")]
    scaleup_domain_gpus: Annotated[
        int, whole(0, limits.MAX_DOMAIN_GPUS, unit="GPUs", low_open=True)
    ]
    interconnect: str
    # multi-node replicas (issue #11 parts 1-2): the node and its scale-out NIC per GPU
    gpus_per_node: (
        Annotated[int, whole(0, limits.MAX_DOMAIN_GPUS, unit="GPUs", low_open=True)] | None
    ) = Field(default=None, description="GPUs per server (an NVL72 tray holds 4)")
    scaleout_link_gb_per_s: Annotated[float, Bandwidth] | None = Field(
        default=None, description="scale-out (InfiniBand/RoCE/EFA) bandwidth per GPU, one direction"
    )
    scaleout_latency_us: Annotated[float, between(0, 1e6, unit="us")] | None = Field(
        default=None, description="latency of one scale-out transfer or collective step"
    )
    scaleout_link: str | None = None
    scaleout_spec: Provenance | None = Field(
        default=None, description="where the scale-out figures come from"
    )
    # issue #10: a fully connected fabric (one link per peer) instead of a switch
    scaleup_mesh_peers: (
        Annotated[
            int,
            whole(1, limits.MAX_DOMAIN_GPUS, unit="peers"),
            Field(
                description="direct links to this many peers, each 1/peers of the bandwidth "
                "(MI300X Infinity Fabric: 7); absent for a switched fabric (NVSwitch)"
            ),
        ]
        | None
    ) = None
    tdp_w: Annotated[float, between(0, limits.MAX_WATTS, unit="W", low_open=True)] | None = None
    spec: Provenance
    prices: tuple[GpuPrice, ...] = ()

    @field_validator("dense_tflops")
    @classmethod
    def _positive_tflops(cls, value: dict[str, float]) -> dict[str, float]:
        bad = {k: v for k, v in value.items() if not v > 0}
        if bad:
            raise ValueError(f"TFLOPS must be > 0, got {bad}")
        if not value:
            raise ValueError("at least one compute dtype is needed")
        return value

    @property
    def memory_bytes(self) -> float:
        """Device memory in bytes: the reported MiB where sourced, else the label as 1e9 B."""
        if self.memory_device is not None:
            return self.memory_device.mib * 2.0**20
        return self.memory_gb * 1e9

    def price(self, tier: str = "on_demand", provider: str | None = None) -> GpuPrice | None:
        """The price used: the cheapest in that tier (of the given provider, if one is named)."""
        rows = [p for p in self.prices if p.tier == tier]
        if provider is not None:
            rows = [p for p in rows if p.provider.lower() == provider.lower()]
        if not rows:
            return None
        return min(rows, key=lambda p: (p.usd_per_gpu_hour, p.provider))
