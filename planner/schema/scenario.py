"""The scenario file: model, workload, SLAs, hardware, search space, constraints, solver."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from planner.schema import limits
from planner.schema.bounded import ListCap, Name, NoRepeats, between, whole
from planner.schema.common import Strict
from planner.schema.finance import Energy, Finance
from planner.schema.speculative import Acceptance, SpecChoice, SpecTokens

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s|us|µs)?\s*$")
_TO_MS = {"ms": 1.0, None: 1.0, "s": 1e3, "us": 1e-3, "µs": 1e-3}


def _parse_ms(value: Any) -> Any:
    """Accept 50, 50.0, '50', '50ms', '50 ms', '0.05s': a number of milliseconds."""
    if isinstance(value, str):
        match = _DURATION.match(value)
        if not match:
            # the value itself is appended where the error is described (`describe_error`)
            raise ValueError("expected a number of milliseconds such as 50 or '50ms' or '0.05s'")
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
    # issue #11: prompt tokens served from the prefix cache (a shared system prompt, corpus)
    prefix_cached_tokens: Annotated[int, whole(0, limits.MAX_TOKENS, unit="tokens")] = 0

    @model_validator(mode="after")
    def _share_or_rate(self) -> RequestClass:
        if self.prefix_cached_tokens >= self.input_tokens:
            raise ValueError(
                f"class '{self.name}': prefix_cached_tokens ({self.prefix_cached_tokens}) must "
                f"be less than input_tokens ({self.input_tokens}): at least one token is new"
            )
        if (self.share is None) == (self.requests_per_second is None):
            raise ValueError(
                f"class '{self.name}': give exactly one of 'share' (fraction of "
                "workload.requests_per_second) or 'requests_per_second'"
            )
        return self


# ---- batch jobs (issue #12, item 4): an offline job with a deadline ----------------------
class Job(Strict):
    """An offline job: `requests` (or `tokens`, input plus output over the whole job) of one
    shape, finished within `deadline_hours`; only throughput matters unless an SLA is given."""

    requests: Annotated[int, whole(0, limits.MAX_JOB_REQUESTS, low_open=True)] | None = None
    tokens: (
        Annotated[float, between(0, limits.MAX_JOB_TOKENS, unit="tokens", low_open=True)] | None
    ) = None
    input_tokens: Tokens
    output_tokens: Tokens
    deadline_hours: Annotated[float, between(0, limits.MAX_JOB_HOURS, unit="h", low_open=True)]
    allow_spot: bool = False  # price each GPU at the cheaper of the scenario's tier and spot

    @model_validator(mode="after")
    def _requests_or_tokens(self) -> Job:
        if (self.requests is None) == (self.tokens is None):
            raise ValueError("job: give exactly one of 'requests' or 'tokens'")
        return self

    def total_requests(self) -> float:
        """Requests in the job: as given, or the token count over one request's tokens."""
        if self.requests is not None:
            return float(self.requests)
        assert self.tokens is not None
        return self.tokens / (self.input_tokens + self.output_tokens)

    def requests_per_second(self) -> float:
        """The average rate that finishes the job exactly at the deadline."""
        return self.total_requests() / (self.deadline_hours * 3600.0)


class Workload(Strict):
    """Peak demand, with one request shape or a list of request classes (or a batch job)."""

    requests_per_second: Rate | None = None
    input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    classes: list[RequestClass] | None = Field(default=None, max_length=limits.MAX_CLASSES)
    prefix_cached_tokens: Annotated[int, whole(0, limits.MAX_TOKENS, unit="tokens")] = 0
    job: Job | None = None  # issue #12: a batch job instead of a request rate

    @model_validator(mode="after")
    def _one_shape_or_classes(self) -> Workload:
        if self.job is not None:
            return self._check_job()
        single = self.input_tokens is not None or self.output_tokens is not None
        if self.classes is not None and self.prefix_cached_tokens:
            raise ValueError("give prefix_cached_tokens per class when the workload has classes")
        if self.input_tokens is not None and self.prefix_cached_tokens >= self.input_tokens:
            raise ValueError(
                f"prefix_cached_tokens ({self.prefix_cached_tokens}) must be less than "
                f"input_tokens ({self.input_tokens}): at least one token is new"
            )
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

    def _check_job(self) -> Workload:
        """A job stands alone: no rate, shape or classes beside it; its rate is in range."""
        extra = [
            k
            for k in ("requests_per_second", "input_tokens", "output_tokens", "classes")
            if getattr(self, k) is not None
        ]
        if extra:
            raise ValueError(f"give either job or {', '.join(extra)}, not both")
        assert self.job is not None
        rate = self.job.requests_per_second()
        if not limits.MIN_REQUESTS_PER_S <= rate <= limits.MAX_REQUESTS_PER_S:
            raise ValueError(
                f"job: {self.job.total_requests():.6g} requests in {self.job.deadline_hours:g} h "
                f"is {rate:.3g} requests/s, outside [{limits.MIN_REQUESTS_PER_S:g}, "
                f"{limits.MAX_REQUESTS_PER_S:g}]"
            )
        return self

    def peak_requests_per_second(self) -> float:
        """The total arrival rate of every class at the peak."""
        return sum(rate for _, rate, *_ in self.resolved_classes())

    def prefix_cached(self) -> dict[str, int]:
        """Prompt tokens served from the prefix cache, per class name (issue #11)."""
        if self.classes is None:
            return {"all": self.prefix_cached_tokens}
        return {c.name: c.prefix_cached_tokens for c in self.classes}

    def resolved_classes(self) -> list[tuple[str, float, int, int, Sla | None]]:
        """(name, requests/s, input, output, sla) for every class (a job: its average rate)."""
        if self.job is not None:
            j = self.job
            return [("job", j.requests_per_second(), j.input_tokens, j.output_tokens, None)]
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
    # issue #12: a fixed fleet you own ({gpu id: count}); `planner capacity` sizes demand to it
    fleet: dict[
        str, Annotated[int, whole(0, limits.MAX_GPU_COUNT, unit="GPUs", low_open=True)]
    ] = {}

    def nothing_left(self, catalog_gpus: Collection[str]) -> str | None:
        """Why no GPU is left to plan, naming the key that emptied the list (an input error,
        not an infeasible plan), or None while some GPU is left."""
        chosen = self.gpus if self.gpus is not None else sorted(self.fleet or catalog_gpus)
        if set(chosen) - set(self.exclude):
            return None
        if self.gpus is not None and not self.gpus:
            return (
                "hardware.gpus: the list is empty, so no GPU is left to plan; list GPU ids "
                "(planner catalog gpus) or leave the key out for every GPU in the catalog"
            )
        among = (
            f"hardware.gpus ({', '.join(chosen)})"
            if self.gpus is not None
            else f"hardware.fleet's GPUs ({', '.join(chosen)})"
            if self.fleet
            else "the GPUs in the catalog"
        )
        return (
            f"hardware.exclude: excludes every one of {among}, so no GPU is left to plan; "
            "exclude fewer or allow others"
        )

    def outside_fleet(self) -> str | None:
        """Why hardware.gpus contradicts hardware.fleet (it names GPUs the fleet does not own,
        which solve would plan and capacity would not use), or None."""
        if not self.fleet or self.gpus is None:
            return None
        extra = [g for g in self.gpus if g not in self.fleet]
        if not extra:
            return None
        owned = ", ".join(f"{g}: {n}" for g, n in sorted(self.fleet.items()))
        return (
            f"hardware.gpus: {', '.join(extra)} not in hardware.fleet ({{{owned}}}); on a fixed "
            "fleet solve and capacity plan only the GPUs it owns, so list a subset of "
            "hardware.fleet's GPUs in hardware.gpus (or leave it out), or add them to "
            "hardware.fleet"
        )

    def available(self) -> dict[str, int]:
        """The most GPUs of each type a plan may use: inventory, capped by a fleet's counts."""
        out = dict(self.inventory)
        for gpu_id, count in self.fleet.items():
            out[gpu_id] = min(count, out.get(gpu_id, count))
        return out

    def count_keys(self) -> str:
        """The keys that set the GPU counts, for messages to name the one the user wrote:
        hardware.inventory, hardware.fleet or both."""
        keys = [k for k, given in (("inventory", self.inventory), ("fleet", self.fleet)) if given]
        return " / ".join(f"hardware.{k}" for k in keys) or "hardware.inventory"


class Search(Strict):
    """The deployment space to explore."""

    quants: Names = ["bf16", "fp8"]
    kv_dtypes: Annotated[list[KvDtypeName], NoRepeats] = []
    tp: Annotated[list[TpDegree], NoRepeats, ListCap] = [1, 2, 4, 8]
    batches: Annotated[list[BatchSize], NoRepeats, ListCap] | None = None
    batch_min: BatchSize = 1
    batch_max: BatchSize = 1024
    target_utilization: Utilization = 0.8
    # issue #11: speculative decoding the optimiser may choose (auto: off and every setting
    # data/speculative.yaml lists for the model); k and acceptance override those defaults
    speculative: Annotated[list[SpecChoice], NoRepeats] = ["off"]
    spec_tokens: SpecTokens | None = None
    spec_acceptance: Acceptance | None = None
    draft_model: Name | None = None
    # disaggregated prefill/decode (issue #11): false: aggregated only; true: prefill and
    # decode pools only; auto: both offered where a class's prompt is long, the MIP chooses
    disaggregated: Literal["auto", True, False] = "auto"
    # multi-node replicas, expert parallel, DP attention (issue #11 parts 1-2); None: auto
    # (single-node layouts when the weights fit one node, else multi-node ones too)
    pp: Annotated[list[TpDegree], NoRepeats, ListCap] | None = None
    ep: Annotated[list[TpDegree], NoRepeats, ListCap] | None = None
    dp_attention: Annotated[list[TpDegree], NoRepeats, ListCap] | None = None
    # issue #10: plan to the engine profile's measured error: p90 takes each GPU's TPOT and
    # TTFT longer, and its throughput lower, by the margin that covered 90% of the profile's
    # measured rows on the unsafe side (planning.accuracy); none plans to the predictions
    prediction_margin: Literal["none", "p90"] = "none"

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
    # redundancy that holds (issue 12): survive the loss of any k replicas; one vendor per service
    redundancy: str = "none"
    same_vendor: bool = False

    @field_validator("redundancy")
    @classmethod
    def _redundancy(cls, value: str) -> str:
        if not re.fullmatch(r"none|n_plus_[1-9]", value):
            raise ValueError(
                "expected none, n_plus_1 (survive losing any one replica) or n_plus_k "
                "with k from 2 to 9"
            )
        return value

    @property
    def redundancy_k(self) -> int:
        """k of `n_plus_k`: the replicas the fleet must be able to lose (0 for none)."""
        return 0 if self.redundancy == "none" else int(self.redundancy.removeprefix("n_plus_"))


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
