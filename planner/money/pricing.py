"""Prices: which $/GPU-hour each GPU costs in a scenario, and what an API would charge."""

from __future__ import annotations

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


def api_usd_per_hour(
    input_usd_per_1m: float,
    output_usd_per_1m: float,
    input_tokens_per_s: float,
    output_tokens_per_s: float,
) -> float:
    """$/h an API bills for a token stream at its per-1M input and output prices."""
    per_s = input_tokens_per_s * input_usd_per_1m + output_tokens_per_s * output_usd_per_1m
    return per_s / TOKENS_PER_1M * SECONDS_PER_HOUR


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
        cached_price = offer.cached_input_usd_per_1m
        per_hour = api_usd_per_hour(
            offer.input_usd_per_1m, offer.output_usd_per_1m, tokens_in, tokens_out
        )
        if cached_price is not None:  # the cached tokens' discount from the input price
            per_hour -= api_usd_per_hour(
                offer.input_usd_per_1m - cached_price, 0.0, tokens_cached, 0.0
            )
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
                cached_input_usd_per_1m=cached_price,
            )
        )
    return tuple(sorted(quotes, key=lambda q: (q.cost_per_hour_usd, q.provider)))
