"""API offerings: per-token prices of a hosted model, with their source and date."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from planner.schema import limits
from planner.schema.bounded import EntryId, between, whole
from planner.schema.common import Strict

UsdPer1M = Annotated[float, between(0, limits.MAX_USD_PER_1M_TOKENS, unit="USD per 1M tokens")]


class ApiOffering(Strict):
    """One provider's price for one model, USD per 1M tokens."""

    model: str = Field(description="catalog model id this endpoint serves")
    provider_model_id: str
    input_usd_per_1m: UsdPer1M
    output_usd_per_1m: UsdPer1M
    cached_input_usd_per_1m: UsdPer1M | None = None
    # issue #12: a batch (offline) price, only where the provider publishes one, with its source
    batch_input_usd_per_1m: UsdPer1M | None = None
    batch_output_usd_per_1m: UsdPer1M | None = None
    context_tokens: (
        Annotated[int, whole(0, limits.MAX_CONTEXT, unit="tokens", low_open=True)] | None
    ) = None
    source: str = Field(min_length=3)
    as_of: str = Field(min_length=4)
    notes: str | None = None


class ApiProvider(Strict):
    """One file of catalogs/apis/: a provider and its offerings."""

    id: EntryId
    name: str
    offerings: tuple[ApiOffering, ...] = Field(min_length=1)
