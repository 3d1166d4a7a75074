"""Engine profiles: the fitted efficiency constants of the performance model."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field

from planner.schema.bounded import EntryId, between
from planner.schema.common import Strict

Share = between(0, 1, low_open=True)


def _up_to(high: float, unit: str) -> BeforeValidator:
    return between(0, high, unit=unit)


class Efficiency(Strict):
    """Achievable fractions of peak and fixed costs for one engine on one GPU family."""

    eta_mem: Annotated[float, Share, Field(description="achieved fraction of HBM bandwidth")]
    eta_compute_decode: Annotated[
        float, Share, Field(description="fraction of dense peak in decode")
    ]
    eta_compute_prefill: Annotated[float, Share, Field(description="fraction of peak in prefill")]
    eta_kv: Annotated[
        float, Share, Field(description="attention kernels' KV read efficiency vs GEMV")
    ] = 1.0
    allreduce_latency_us: Annotated[
        float, _up_to(1000, "us"), Field(description="per collective, alpha")
    ]
    step_overhead_ms: Annotated[
        float, _up_to(100, "ms"), Field(description="per decode step fixed cost")
    ]
    prefill_overhead_ms: Annotated[float, _up_to(1000, "ms")] = 0.0
    mem_util: Annotated[float, Share, Field(description="usable fraction of memory")] = 0.9
    runtime_reserve_gb: Annotated[
        float, _up_to(10_000, "GB"), Field(description="context, graphs, allocator")
    ] = 2.0


class EngineProfile(Strict):
    """A serving engine's constants per GPU family, with a default for unknown families."""

    id: EntryId
    name: str
    source: str = Field(min_length=3)
    as_of: str = Field(min_length=4)
    notes: str | None = None
    default: Efficiency
    families: dict[str, Efficiency] = {}

    def for_family(self, family: str) -> Efficiency:
        """The constants for a GPU family, falling back to the default."""
        return self.families.get(family, self.default)
