"""The `--vary` file of a Monte Carlo sweep: one distribution per scenario key."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from planner.schema.common import Strict

Finite = Annotated[float, Field(allow_inf_nan=False)]


class _Bounded(Strict):
    """Optional clipping bounds: a sample below `min` or above `max` is set to the bound."""

    min: Finite | None = None
    max: Finite | None = None

    @model_validator(mode="after")
    def _ordered(self) -> _Bounded:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) > max ({self.max})")
        return self


class Uniform(_Bounded):
    """Every value between low and high equally likely."""

    dist: Literal["uniform"]
    low: Finite
    high: Finite

    @model_validator(mode="after")
    def _range(self) -> Uniform:
        if self.low >= self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        return self


class Normal(_Bounded):
    """A bell curve around `mean` with standard deviation `sd`."""

    dist: Literal["normal"]
    mean: Finite
    sd: Finite = Field(gt=0)


class Lognormal(_Bounded):
    """Positive and right-skewed: log(value) is normal, centred on log(median), spread sigma."""

    dist: Literal["lognormal"]
    median: Finite = Field(gt=0)
    sigma: Finite = Field(gt=0, le=5)


class Choice(Strict):
    """One of a list of values (any YAML value: numbers, strings, lists), optionally weighted."""

    dist: Literal["choice"]
    values: list[Any] = Field(min_length=1)
    weights: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]] | None = None

    @model_validator(mode="after")
    def _weights_match(self) -> Choice:
        if self.weights is None:
            return self
        if len(self.weights) != len(self.values):
            raise ValueError(
                f"weights has {len(self.weights)} entries, values has {len(self.values)}"
            )
        if not math.isfinite(sum(self.weights)) or sum(self.weights) <= 0:
            raise ValueError("weights must have a positive sum")
        return self


Distribution = Annotated[Uniform | Normal | Lognormal | Choice, Field(discriminator="dist")]


class VaryFile(Strict):
    """What a Monte Carlo sweep draws: `vary: {scenario.key.path: distribution}`, a seed."""

    # what an error names when a distribution's `dist:` is missing or unknown (loading.py)
    tag_kinds: ClassVar[dict[str, tuple[str, ...]]] = {
        "dist": ("uniform", "normal", "lognormal", "choice")
    }
    tag_examples: ClassVar[dict[str, str]] = {"dist": "{dist: lognormal, median: 10, sigma: 0.5}"}
    keys_elsewhere: ClassVar[dict[str, str]] = {"samples": "give --samples N on the command line"}

    seed: int | None = Field(default=None, ge=0)
    vary: dict[str, Distribution] = Field(min_length=1)
