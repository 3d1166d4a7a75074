"""Engine profiles: the fitted efficiency constants of the performance model."""

from __future__ import annotations

from pydantic import Field

from planner.schema.common import Strict


class Efficiency(Strict):
    """Achievable fractions of peak and fixed costs for one engine on one GPU family."""

    eta_mem: float = Field(gt=0, le=1, description="achieved fraction of HBM bandwidth")
    eta_compute_decode: float = Field(gt=0, le=1, description="fraction of dense peak in decode")
    eta_compute_prefill: float = Field(gt=0, le=1, description="fraction of peak in prefill")
    eta_kv: float = Field(
        default=1.0, gt=0, le=1, description="attention kernels' KV read efficiency vs GEMV"
    )
    allreduce_latency_us: float = Field(ge=0, le=1000, description="per collective, alpha")
    step_overhead_ms: float = Field(ge=0, le=100, description="per decode step fixed cost")
    prefill_overhead_ms: float = Field(default=0.0, ge=0, le=1000)
    mem_util: float = Field(default=0.9, gt=0, le=1, description="usable fraction of memory")
    runtime_reserve_gb: float = Field(default=2.0, ge=0, description="context, graphs, allocator")


class EngineProfile(Strict):
    """A serving engine's constants per GPU family, with a default for unknown families."""

    id: str
    name: str
    source: str = Field(min_length=3)
    as_of: str = Field(min_length=4)
    notes: str | None = None
    default: Efficiency
    families: dict[str, Efficiency] = {}

    def for_family(self, family: str) -> Efficiency:
        """The constants for a GPU family, falling back to the default."""
        return self.families.get(family, self.default)
