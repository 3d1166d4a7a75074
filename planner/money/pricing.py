"""Prices: which $/GPU-hour each GPU costs in a scenario, and what an API would charge."""

from __future__ import annotations

from typing import Protocol

from planner.inputs.catalog import Catalog
from planner.perf.candidates import Price
from planner.schema.hardware import Gpu
from planner.schema.plan import ApiQuote, RequestClassPlan
from planner.schema.scenario import Pricing
from planner.units import HOURS_PER_MONTH, SECONDS_PER_HOUR, TOKENS_PER_1M


def gpu_price(gpu: Gpu, pricing: Pricing) -> Price | None:
    """The scenario's override, else the catalog's price in the chosen tier and provider."""
    if gpu.id in pricing.usd_per_gpu_hour:
        return Price(
            usd_per_gpu_hour=pricing.usd_per_gpu_hour[gpu.id],
            provider="scenario",
            source="scenario hardware.pricing.usd_per_gpu_hour (assumption)",
            as_of="scenario",
            assumption=True,
        )
    row = gpu.price(pricing.tier, pricing.provider)
    if row is None:
        return None
    return Price(row.usd_per_gpu_hour, row.provider, row.source, row.as_of)


class ApiPrices(Protocol):
    """What prices an API's tokens: a catalog offering or a quote made from one."""

    @property
    def input_usd_per_1m(self) -> float: ...
    @property
    def output_usd_per_1m(self) -> float: ...
    @property
    def cached_input_usd_per_1m(self) -> float | None: ...


def api_bill_usd(
    prices: ApiPrices, input_tokens: float, cached_tokens: float, output_tokens: float
) -> float:
    """$ an API bills for tokens, the one API price every caller uses: `cached_tokens` of the
    `input_tokens` (prefix-cached) at the cached-input price where one is listed, else at the
    input price (issue #11), the rest of the input and the output at their prices."""
    cached_price = prices.cached_input_usd_per_1m
    discount = 0.0 if cached_price is None else prices.input_usd_per_1m - cached_price
    usd = (
        input_tokens * prices.input_usd_per_1m
        - cached_tokens * discount
        + output_tokens * prices.output_usd_per_1m
    )
    return usd / TOKENS_PER_1M


def api_usd_per_hour(
    prices: ApiPrices,
    input_tokens_per_s: float,
    cached_tokens_per_s: float,
    output_tokens_per_s: float,
) -> float:
    """$/h an API bills for a token stream (`api_bill_usd` over an hour of it)."""
    return SECONDS_PER_HOUR * api_bill_usd(
        prices, input_tokens_per_s, cached_tokens_per_s, output_tokens_per_s
    )


def api_quotes(
    catalog: Catalog, model_id: str, classes: tuple[RequestClassPlan, ...]
) -> tuple[ApiQuote, ...]:
    """Every API offering of the model priced at the scenario's demand, cheapest first.
    Prefix-cached prompt tokens are billed at the offering's cached-input price where it
    lists one, else at its input price (issue #11)."""
    tokens_in = sum(c.requests_per_second * c.input_tokens for c in classes)
    tokens_cached = sum(c.requests_per_second * c.prefix_cached_tokens for c in classes)
    tokens_out = sum(c.requests_per_second * c.output_tokens for c in classes)
    quotes = []
    for provider, offer in catalog.api_offerings(model_id):
        per_hour = api_usd_per_hour(offer, tokens_in, tokens_cached, tokens_out)
        per_1k_out = per_hour / (SECONDS_PER_HOUR * tokens_out) * 1e3 if tokens_out else 0.0
        quotes.append(
            ApiQuote(
                provider=provider.name,
                provider_model_id=offer.provider_model_id,
                input_usd_per_1m=offer.input_usd_per_1m,
                output_usd_per_1m=offer.output_usd_per_1m,
                cost_per_hour_usd=per_hour,
                monthly_cost_usd=per_hour * HOURS_PER_MONTH,
                cost_per_1k_output_tokens_usd=per_1k_out,
                source=offer.source,
                as_of=offer.as_of,
                cached_input_usd_per_1m=offer.cached_input_usd_per_1m,
            )
        )
    return tuple(sorted(quotes, key=lambda q: (q.cost_per_hour_usd, q.provider)))
