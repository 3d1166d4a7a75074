"""The scenario file: model, workload, SLAs, hardware, search space, constraints, solver."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from planner.schema import limits
from planner.schema.bounded import ListCap, Name, NoRepeats, between, whole
from planner.schema.common import Strict
from planner.schema.finance import Energy, Finance

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s|us|µs)?\s*$")
_TO_MS = {"ms": 1.0, None: 1.0, "s": 1e3, "us": 1e-3, "µs": 1e-3}


def _parse_ms(value: Any) -> Any:
    """Accept 50, 50.0, '50', '50ms', '50 ms', '0.05s': a number of milliseconds."""
    if isinstance(value, str):
        match = _DURATION.match(value)
        if not match:
            raise ValueError(
                f"expected a number of milliseconds such as 50 or '50ms' or '0.05s', got {value!r}"
            )
        return float(match.group(1)) * _TO_MS[match.group(2)]
    return value


Milliseconds = Annotated[
    float, between(0, limits.MAX_LATENCY_MS, unit="ms", low_open=True, parse=_parse_ms)
]
Statistic = Literal["mean", "p50", "p90", "p95", "p99"]
KvDtypeName = Literal["bf16", "fp16", "fp8"]
Rate = Annotated[
    float, between(limits.MIN_REQUESTS_PER_S, limits.MAX_REQUESTS_PER_S, unit="requests/s")
]
Tokens = Annotated[int, whole(0, limits.MAX_TOKENS, unit="tokens", low_open=True)]
Share = Annotated[float, between(1e-6, 1)]
Utilization = Annotated[float, between(0, 1, low_open=True, high_open=True)]
UsdPerGpuHour = Annotated[
    float, between(limits.MIN_USD, limits.MAX_USD_PER_GPU_HOUR, unit="USD per GPU-hour")
]
UsdPerMonth = Annotated[float, between(limits.MIN_USD, limits.MAX_USD_PER_MONTH, unit="USD")]
GpuCount = Annotated[int, whole(0, limits.MAX_GPU_COUNT, unit="GPUs")]
TpDegree = Annotated[int, whole(0, limits.MAX_TP, low_open=True)]
BatchSize = Annotated[int, whole(0, limits.MAX_BATCH, unit="sequences", low_open=True)]
Names = Annotated[list[Name], NoRepeats, ListCap]


class Sla(Strict):
    """Latency targets. TPOT bounds the mean time per output token; `statistic` says which
    statistic of TTFT (queueing included) is bounded."""

    tpot_ms: Milliseconds | None = None
    ttft_ms: Milliseconds | None = None
    statistic: Statistic = "mean"


class RequestClass(Strict):
    """One kind of request: its share of the traffic (or its own rate), shape and SLA."""

    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.\- ]+$")
    share: Share | None = None
    requests_per_second: Rate | None = None
    input_tokens: Tokens
    output_tokens: Tokens
    sla: Sla | None = None

    @model_validator(mode="after")
    def _share_or_rate(self) -> RequestClass:
        if (self.share is None) == (self.requests_per_second is None):
            raise ValueError(
                f"class '{self.name}': give exactly one of 'share' (fraction of "
                "workload.requests_per_second) or 'requests_per_second'"
            )
        return self


class Workload(Strict):
    """Peak demand, with one request shape or a list of request classes."""

    requests_per_second: Rate | None = None
    input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    classes: list[RequestClass] | None = Field(default=None, max_length=limits.MAX_CLASSES)

    @model_validator(mode="after")
    def _one_shape_or_classes(self) -> Workload:
        single = self.input_tokens is not None or self.output_tokens is not None
        if self.classes is not None and single:
            raise ValueError("give either input_tokens/output_tokens or classes, not both")
        if self.classes is None:
            self._check_single()
        else:
            self._check_classes()
        return self

    def _check_single(self) -> None:
        missing = [
            k
            for k in ("requests_per_second", "input_tokens", "output_tokens")
            if getattr(self, k) is None
        ]
        if missing:
            raise ValueError(
                f"missing {', '.join(missing)} (or give 'classes': a list of request classes)"
            )

    def _check_classes(self) -> None:
        assert self.classes is not None
        if not self.classes:
            raise ValueError("classes is empty: give at least one request class")
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError(f"class names must be unique, got {names}")
        shares = [c.share for c in self.classes if c.share is not None]
        if shares and self.requests_per_second is None:
            raise ValueError("classes with 'share' need workload.requests_per_second")
        if shares and len(shares) == len(self.classes) and abs(sum(shares) - 1.0) > 1e-6:
            raise ValueError(f"class shares must sum to 1, they sum to {sum(shares):.6g}")
        if shares and len(shares) < len(self.classes) and sum(shares) > 1.0 + 1e-9:
            raise ValueError(f"class shares sum to {sum(shares):.6g}, more than 1")
        rates = [(name, rate) for name, rate, *_ in self.resolved_classes()]
        slow = next(((n, r) for n, r in rates if r < limits.MIN_REQUESTS_PER_S), None)
        if slow:
            raise ValueError(
                f"class '{slow[0]}' gets {slow[1]:.3g} requests/s, less than the "
                f"{limits.MIN_REQUESTS_PER_S:g} a scenario plans for"
            )
        peak = sum(r for _, r in rates)
        if peak > limits.MAX_REQUESTS_PER_S:
            raise ValueError(
                f"the classes add up to {peak:g} requests/s, more than the "
                f"{limits.MAX_REQUESTS_PER_S:g} a scenario may plan for"
            )

    def peak_requests_per_second(self) -> float:
        """The total arrival rate of every class at the peak."""
        return sum(rate for _, rate, *_ in self.resolved_classes())

    def resolved_classes(self) -> list[tuple[str, float, int, int, Sla | None]]:
        """(name, requests/s, input, output, sla) for every class."""
        if self.classes is None:
            assert self.requests_per_second and self.input_tokens and self.output_tokens
            return [("all", self.requests_per_second, self.input_tokens, self.output_tokens, None)]
        out = []
        for c in self.classes:
            rate = c.requests_per_second or (c.share or 0.0) * (self.requests_per_second or 0.0)
            out.append((c.name, rate, c.input_tokens, c.output_tokens, c.sla))
        return out


class Pricing(Strict):
    """Which price to use per GPU: a tier, optionally a provider, and explicit overrides."""

    tier: Literal[
        "on_demand", "spot", "reserved_1y", "reserved_3y", "capacity_block", "marketplace"
    ] = "on_demand"
    provider: Name | None = None
    usd_per_gpu_hour: dict[str, UsdPerGpuHour] = {}


class Hardware(Strict):
    """Allowed GPUs (default: every priced GPU in the catalog), inventory, pricing."""

    gpus: Names | None = None
    exclude: Names = []
    inventory: dict[str, GpuCount] = {}
    pricing: Pricing = Pricing()


class Search(Strict):
    """The deployment space to explore."""

    quants: Names = ["bf16", "fp8"]
    kv_dtypes: Annotated[list[KvDtypeName], NoRepeats] = []
    tp: Annotated[list[TpDegree], NoRepeats, ListCap] = [1, 2, 4, 8]
    batches: Annotated[list[BatchSize], NoRepeats, ListCap] | None = None
    batch_min: BatchSize = 1
    batch_max: BatchSize = 1024
    target_utilization: Utilization = 0.8

    @model_validator(mode="after")
    def _range(self) -> Search:
        if self.batch_min > self.batch_max:
            raise ValueError(f"batch_min ({self.batch_min}) > batch_max ({self.batch_max})")
        if not self.quants:
            raise ValueError("quants is empty: allow at least one quantization")
        if not self.tp:
            raise ValueError("tp is empty: allow at least one tensor-parallel degree")
        return self


class Constraints(Strict):
    """Fleet-level limits."""

    max_monthly_budget_usd: UsdPerMonth | None = None
    min_replicas: Annotated[int, whole(0, limits.MAX_REPLICAS, unit="replicas")] = 1
    max_gpus: Annotated[int, whole(0, limits.MAX_GPU_COUNT, unit="GPUs", low_open=True)] | None = (
        None
    )


class Solver(Strict):
    """How every MIP and LP of the plan is solved (planner.fleet.solver.SolverOptions)."""

    backend: Literal["cbc", "highs"] = "highs"
    time_limit_s: Annotated[float, between(0, limits.MAX_TIME_LIMIT_S, unit="s", low_open=True)] = (
        60.0  # issue 16: a safety net; max_nodes is the limit that binds, the same everywhere
    )
    relative_gap: Annotated[float, between(0, 1, high_open=True)] = 1e-4
    threads: Annotated[int, whole(0, 256, low_open=True)] = 1
    # issue 16: deterministic work limit, branch-and-bound nodes of each MIP
    max_nodes: Annotated[int, whole(0, 100_000_000, low_open=True)] = 20_000


class Scenario(Strict):
    """A whole planning question."""

    name: str | None = Field(default=None, max_length=80)
    description: str | None = Field(default=None, max_length=100_000)
    model: str = Field(min_length=1, max_length=4096)
    engine: Name = "vllm"
    workload: Workload
    sla: Sla = Sla()
    hardware: Hardware = Hardware()
    search: Search = Search()
    constraints: Constraints = Constraints()
    solver: Solver = Solver()
    finance: Finance | None = None
    energy: Energy = Energy()  # energy and carbon per token (optional)

    @model_validator(mode="after")
    def _growth_within_limits(self) -> Scenario:
        fin = self.finance
        if fin is None or fin.growth_per_month <= 0:
            return self
        factor = (1.0 + fin.growth_per_month) ** (fin.horizon_months - 1)
        peak = self.workload.peak_requests_per_second() * factor
        if peak > limits.MAX_REQUESTS_PER_S:
            raise ValueError(
                f"finance.growth_per_month: {fin.growth_per_month:g} over "
                f"{fin.horizon_months} months takes the peak to {peak:.3g} requests/s, more "
                f"than the {limits.MAX_REQUESTS_PER_S:g} a scenario may plan for; lower the "
                "growth or the horizon"
            )
        return self
