"""API offerings: per-token prices of a hosted model, with their source and date."""

from __future__ import annotations

from pydantic import Field

from planner.schema.common import Strict


class ApiOffering(Strict):
    """One provider's price for one model, USD per 1M tokens."""

    model: str = Field(description="catalog model id this endpoint serves")
    provider_model_id: str
    input_usd_per_1m: float = Field(ge=0)
    output_usd_per_1m: float = Field(ge=0)
    cached_input_usd_per_1m: float | None = Field(default=None, ge=0)
    context_tokens: int | None = Field(default=None, gt=0)
    source: str = Field(min_length=3)
    as_of: str = Field(min_length=4)
    notes: str | None = None


class ApiProvider(Strict):
    """One file of catalogs/apis/: a provider and its offerings."""

    id: str
    name: str
    offerings: tuple[ApiOffering, ...] = Field(min_length=1)
