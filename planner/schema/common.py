"""Shared pieces of the strict schema: the frozen base model and sourced values."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    """Frozen, extra keys forbidden: the edge validates once, the core trusts the types."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class Provenance(Strict):
    """Where a fact comes from and the date (or period) it refers to."""

    source: str = Field(min_length=3)
    as_of: str = Field(min_length=4, description="date or period of the fact, e.g. 2026-09-20")
    notes: str | None = None
