"""The scenario file: model, workload, SLAs, hardware, search space, constraints, solver."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

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


def _finite_positive(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


Milliseconds = Annotated[float, BeforeValidator(_parse_ms), Field(gt=0, allow_inf_nan=False)]
Statistic = Literal["mean", "p50", "p90", "p95", "p99"]
PositiveInt = Annotated[int, Field(gt=0)]


class Sla(Strict):
    """Latency targets. TPOT bounds the mean time per output token; `statistic` says which
    statistic of TTFT (queueing included) is bounded."""

    tpot_ms: Milliseconds | None = None
    ttft_ms: Milliseconds | None = None
    statistic: Statistic = "mean"


class RequestClass(Strict):
    """One kind of request: its share of the traffic (or its own rate), shape and SLA."""

    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.\- ]+$")
    share: float | None = Field(default=None, gt=0, le=1)
    requests_per_second: float | None = Field(default=None, gt=0)
    input_tokens: PositiveInt
    output_tokens: PositiveInt
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

    requests_per_second: float | None = Field(default=None, gt=0)
    input_tokens: PositiveInt | None = None
    output_tokens: PositiveInt | None = None
    classes: list[RequestClass] | None = None

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
    provider: str | None = None
    usd_per_gpu_hour: dict[str, Annotated[float, Field(gt=0, allow_inf_nan=False)]] = {}


class Hardware(Strict):
    """Allowed GPUs (default: every priced GPU in the catalog), inventory, pricing."""

    gpus: list[str] | None = None
    exclude: list[str] = []
    inventory: dict[str, Annotated[int, Field(ge=0)]] = {}
    pricing: Pricing = Pricing()


class Search(Strict):
    """The deployment space to explore."""

    quants: list[str] = ["bf16", "fp8"]
    kv_dtypes: list[Literal["bf16", "fp16", "fp8"]] = []
    tp: list[PositiveInt] = [1, 2, 4, 8]
    batches: list[PositiveInt] | None = None
    batch_min: PositiveInt = 1
    batch_max: PositiveInt = 1024
    target_utilization: float = Field(default=0.8, gt=0, lt=1)

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

    max_monthly_budget_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    min_replicas: int = Field(default=1, ge=0)
    max_gpus: int | None = Field(default=None, gt=0)


class Solver(Strict):
    """How every MIP and LP of the plan is solved (planner.fleet.solver.SolverOptions)."""

    backend: Literal["cbc", "highs"] = "highs"
    time_limit_s: float = Field(default=5.0, gt=0, le=3600, allow_inf_nan=False)
    relative_gap: float = Field(default=1e-4, ge=0, lt=1, allow_inf_nan=False)
    threads: int = Field(default=1, ge=1, le=256)


class Scenario(Strict):
    """A whole planning question."""

    name: str | None = Field(default=None, max_length=80)
    description: str | None = None
    model: str = Field(min_length=1)
    engine: str = "vllm"
    workload: Workload
    sla: Sla = Sla()
    hardware: Hardware = Hardware()
    search: Search = Search()
    constraints: Constraints = Constraints()
    solver: Solver = Solver()
    finance: Finance | None = None
    energy: Energy = Energy()  # energy and carbon per token (optional)
