"""Records of a plan: request classes as planned, fleet lines, totals and API quotes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestClassPlan:
    """One request class as planned: its demand, shape and the SLA it was held to."""

    name: str
    requests_per_second: float
    input_tokens: int
    output_tokens: int
    tpot_ms: float | None
    ttft_ms: float | None
    statistic: str
    prefix_cached_tokens: int = 0  # issue #11: prompt tokens served from the prefix cache


@dataclass(frozen=True)
class Deployment:
    """One line of the fleet: a candidate and how many replicas of it to run."""

    gpu: str
    tp: int
    quant: str
    kv_dtype: str
    batch: int
    replicas: int
    gpus: int
    price_usd_per_gpu_hour: float
    price_provider: str
    cost_per_hour_usd: float
    requests_per_s: float
    capacity_requests_per_s: float
    load_by_class: dict[str, float]
    tpot_ms: float
    ttft_ms: float
    tpot_ms_by_class: dict[str, float]
    ttft_ms_by_class: dict[str, float]
    # issue #11: speculative decoding of this line (off: k 0, acceptance 0)
    speculative: str = "off"
    spec_tokens: int = 0
    spec_acceptance: float = 0.0
    role: str = "aggregated"  # or the prefill / decode pool of a disaggregated fleet (#11)
    # multi-node replicas, expert parallel, DP attention (issue #11 parts 1-2)
    pp: int = 1
    ep: int = 1
    dp_attention: int = 1
    gpus_per_replica: int = 0  # 0: tp (a line built before layouts existed)
    nodes_per_replica: int = 1
    # a pool's KV link: scale-out, or scale-up within one node (issue #11; none: aggregated)
    kv_link: str = "none"


@dataclass(frozen=True)
class FleetSummary:
    """A solved fleet and its totals."""

    status: str
    deployments: tuple[Deployment, ...]
    total_cost_per_hour_usd: float
    total_gpus: int
    cost_per_1k_output_tokens_usd: float
    cost_per_1m_tokens_usd: float
    lower_bound_per_hour_usd: float
    gap: float
    solve_seconds: float

    @property
    def monthly_cost_usd(self) -> float:
        from planner.units import HOURS_PER_MONTH

        return self.total_cost_per_hour_usd * HOURS_PER_MONTH


@dataclass(frozen=True)
class ApiQuote:
    """One API offering priced at the scenario's demand."""

    provider: str
    provider_model_id: str
    input_usd_per_1m: float
    output_usd_per_1m: float
    cost_per_hour_usd: float
    monthly_cost_usd: float
    cost_per_1k_output_tokens_usd: float
    source: str
    as_of: str
    # issue #11: the cached-input price billed for prefix-cached tokens (None: not listed,
    # so cached tokens are billed at the input price)
    cached_input_usd_per_1m: float | None = None
