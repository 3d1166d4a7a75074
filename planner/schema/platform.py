"""A multi-model platform (issue 12): several models, each with its own engine, workload and
SLA, sized as one fleet under shared inventory, GPU caps and budget."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from planner.schema.common import Strict
from planner.schema.finance import Energy
from planner.schema.scenario import (
    Constraints,
    Hardware,
    Scenario,
    Search,
    Sla,
    Solver,
    Workload,
)

MAX_MODELS = 16  # services on one platform: each adds a block of candidates to one MIP


class Service(Strict):
    """One model of the platform: the single-model scenario's model, engine, workload, SLA."""

    name: str | None = Field(
        default=None, min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.\-]+$"
    )  # default: the model id
    model: str = Field(min_length=1, max_length=4096)
    engine: str = Field(default="vllm", min_length=1, max_length=200)
    workload: Workload
    sla: Sla = Sla()

    @property
    def label(self) -> str:
        """The service's name in reports: its own, else the model id."""
        return self.name or self.model


class Platform(Strict):
    """Several models on one fleet. Hardware, search, constraints and solver are shared;
    constraints.min_replicas, redundancy and same_vendor hold for each model's service."""

    name: str | None = Field(default=None, max_length=80)
    description: str | None = Field(default=None, max_length=100_000)
    models: list[Service] = Field(min_length=1, max_length=MAX_MODELS)
    hardware: Hardware = Hardware()
    search: Search = Search()
    constraints: Constraints = Constraints()
    solver: Solver = Solver()
    energy: Energy = Energy()

    @model_validator(mode="before")
    @classmethod
    def _not_both(cls, data: Any) -> Any:
        if isinstance(data, dict) and "finance" in data:
            raise ValueError(
                "finance: plans over time (finance, diurnal profiles) are not supported yet "
                "for a platform of several models; plan each model on its own, or drop finance"
            )
        if isinstance(data, dict):
            single = sorted(k for k in ("model", "workload", "sla", "engine") if k in data)
            if single:
                raise ValueError(
                    f"give either one model ({', '.join(single)} at the top) or a list of "
                    "models: (a platform), not both; move them into a models: entry"
                )
        return data

    @model_validator(mode="after")
    def _check(self) -> Platform:
        labels = [s.label for s in self.models]
        repeated = sorted({x for x in labels if labels.count(x) > 1})
        if repeated:
            raise ValueError(
                f"models: two entries are named {repeated[0]!r}; give each a unique name:"
            )
        return self

    def service_scenario(self, i: int) -> Scenario:
        """Model i as a single-model scenario under the platform's shared sections."""
        s = self.models[i]
        return Scenario(
            name=f"{self.name or 'platform'}/{s.label}",
            model=s.model,
            engine=s.engine,
            workload=s.workload,
            sla=s.sla,
            hardware=self.hardware,
            search=self.search,
            constraints=self.constraints,
            solver=self.solver,
            energy=self.energy,
        )
