"""The finance section of a scenario: demand over time and pricing tiers."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from planner.schema.common import Strict

Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
UsdPerHour = dict[str, Annotated[float, Field(gt=0, allow_inf_nan=False)]]


class DemandProfile(Strict):
    """Demand by hour as fractions of the peak (24 values for a day, 168 for a week), or a
    CSV of `timestamp,requests_per_second` averaged by hour of week."""

    hourly: list[Fraction] | None = None
    csv: str | None = None
    by_class: dict[str, list[Fraction]] = {}

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
    """Reserved or committed-use capacity, paid every hour of the horizon."""

    term: Literal["1y", "3y"] = "1y"
    usd_per_gpu_hour: UsdPerHour = {}
    discount_vs_on_demand: float | None = Field(default=None, gt=0, lt=1)


class Spot(Strict):
    """Interruptible capacity: cheaper, may vanish, so it may serve only a share of traffic."""

    enabled: bool = True
    max_share: Fraction = 0.3
    preemption_overhead: float = Field(default=0.1, ge=0, lt=1)
    usd_per_gpu_hour: UsdPerHour = {}


class Owned(Strict):
    """Bought hardware: amortised purchase, power at TDP x PUE, hosting."""

    purchase_usd_per_gpu: float = Field(gt=0, allow_inf_nan=False)
    amortisation_months: int = Field(default=36, gt=0, le=120)
    pue: float = Field(default=1.3, ge=1, le=3)
    electricity_usd_per_kwh: float = Field(default=0.12, ge=0, le=5)
    hosting_usd_per_gpu_month: float = Field(default=0.0, ge=0)
    utilisation_of_tdp: float = Field(default=0.8, gt=0, le=1)


class Finance(Strict):
    """Plan over a horizon: hourly profile, growth, and which tiers may be bought."""

    horizon_months: int = Field(default=12, gt=0, le=60)
    growth_per_month: float = Field(default=0.0, ge=-0.5, le=2, allow_inf_nan=False)
    profile: DemandProfile
    slots: int = Field(default=4, ge=1, le=24, description="demand levels to plan for")
    months_per_period: int = Field(
        default=3,
        ge=1,
        le=12,
        description="months planned together, each block sized for its last (busiest) month",
    )
    reserved: Reserved | None = Reserved()
    spot: Spot | None = Spot()
    owned: dict[str, Owned] = {}


class Energy(Strict):
    """Facility and grid for energy and carbon per token: the fleet's GPUs draw their TDP
    x the planned utilisation, the facility PUE times that, the grid emits per kWh."""

    pue: float = Field(default=1.3, ge=1, le=3, description="facility power / IT power")
    grid_g_co2_per_kwh: float | None = Field(
        default=None, ge=0, le=2000, allow_inf_nan=False, description="grid carbon intensity"
    )
