"""The finance section of a scenario: demand over time and pricing tiers."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from planner.schema import limits
from planner.schema.bounded import Flag, Name, between, whole
from planner.schema.common import Strict

Fraction = Annotated[float, between(0, 1)]
UsdPerHour = dict[
    Name,
    Annotated[float, between(limits.MIN_USD, limits.MAX_USD_PER_GPU_HOUR, unit="USD per GPU-hour")],
]
Hourly = Annotated[list[Fraction], Field(max_length=168)]


class DemandProfile(Strict):
    """Demand by hour as fractions of the peak (24 values for a day, 168 for a week), or a
    CSV of `timestamp,requests_per_second` averaged by hour of week."""

    hourly: Hourly | None = None
    csv: str | None = Field(default=None, max_length=4096)
    by_class: dict[Name, Hourly] = {}

    @model_validator(mode="after")
    def _one_source(self) -> DemandProfile:
        if (self.hourly is None) == (self.csv is None):
            raise ValueError("give exactly one of 'hourly' (24 or 168 values) or 'csv'")
        for name, values in [("hourly", self.hourly), *self.by_class.items()]:
            if values is not None and len(values) not in (24, 168):
                raise ValueError(
                    f"{name}: needs 24 (a day) or 168 (a week) values, got {len(values)}"
                )
            if values is not None and max(values) <= 0:
                raise ValueError(f"{name}: at least one hour must have demand above 0")
        return self


class Reserved(Strict):
    """Reserved or committed-use capacity, held all horizon and paid for whole terms."""

    term: Literal["1y", "3y"] = "1y"
    usd_per_gpu_hour: UsdPerHour = {}
    discount_vs_on_demand: Annotated[float, between(0, 1, low_open=True, high_open=True)] | None = (
        None
    )


class Spot(Strict):
    """Interruptible capacity: cheaper, may vanish, so it may serve only a share of traffic."""

    enabled: Flag = True
    max_share: Fraction = 0.3
    preemption_overhead: Annotated[float, between(0, 1, high_open=True)] = 0.1
    usd_per_gpu_hour: UsdPerHour = {}


class Owned(Strict):
    """Bought hardware: amortised purchase, power at TDP x PUE, hosting."""

    purchase_usd_per_gpu: Annotated[
        float, between(limits.MIN_USD, limits.MAX_USD_PER_GPU, unit="USD")
    ]
    amortisation_months: Annotated[int, whole(0, 120, unit="months", low_open=True)] = 36
    pue: Annotated[float, between(1, 3)] = 1.3
    electricity_usd_per_kwh: Annotated[
        float, between(0, limits.MAX_USD_PER_KWH, unit="USD per kWh")
    ] = 0.12
    hosting_usd_per_gpu_month: Annotated[
        float, between(0, limits.MAX_USD_PER_GPU_HOUR * 730, unit="USD per GPU-month")
    ] = 0.0
    utilisation_of_tdp: Annotated[float, between(0, 1, low_open=True)] = 0.8


class Finance(Strict):
    """Plan over a horizon: hourly profile, growth, and which tiers may be bought."""

    horizon_months: Annotated[int, whole(0, 60, unit="months", low_open=True)] = 12
    growth_per_month: Annotated[float, between(-0.5, 2)] = 0.0
    profile: DemandProfile
    slots: Annotated[
        int, whole(0, 24, low_open=True), Field(description="demand levels to plan for")
    ] = 4
    months_per_period: Annotated[
        int,
        whole(0, 12, unit="months", low_open=True),
        Field(description="months planned together, each block sized for its last (busiest) month"),
    ] = 3
    reserved: Reserved | None = Reserved()
    spot: Spot | None = Spot()
    owned: dict[Name, Owned] = {}


class Energy(Strict):
    """Facility and grid for energy and carbon per token: the fleet's GPUs draw their TDP
    x the planned utilisation, the facility PUE times that, the grid emits per kWh."""

    pue: float = Field(default=1.3, ge=1, le=3, description="facility power / IT power")
    grid_g_co2_per_kwh: float | None = Field(
        default=None, ge=0, le=2000, allow_inf_nan=False, description="grid carbon intensity"
    )
