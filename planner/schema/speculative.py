"""Speculative decoding (issue #11): scenario choices and the published per-family defaults.

`data/speculative.yaml` lists, per target model, which speculation it supports (its own MTP
module, or a smaller draft model of the same tokenizer), the draft length k and the
per-token acceptance rate, each with its source. A scenario may override k and acceptance.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field

from planner.schema.bounded import Name, between, whole
from planner.schema.common import Strict

SpecMode = Literal["off", "mtp", "draft"]


def _yaml_off(value: object) -> object:
    """YAML 1.1 reads a bare `off` as false: take it as the mode it spells."""
    return "off" if value is False else value


SpecChoice = Annotated[Literal["off", "mtp", "draft", "auto"], BeforeValidator(_yaml_off)]
MAX_SPEC_TOKENS = 16
SpecTokens = Annotated[int, whole(0, MAX_SPEC_TOKENS, unit="tokens", low_open=True)]
Acceptance = Annotated[float, between(0, 1, low_open=True, high_open=True)]


class SpecDefault(Strict):
    """One published speculation setting for one target model."""

    mode: Literal["mtp", "draft"]
    spec_tokens: SpecTokens
    acceptance: Acceptance
    draft_model: Name | None = None  # the catalog id of the draft (mode draft only)
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=1)
    notes: str = ""


class SpecDefaults(Strict):
    """data/speculative.yaml: target model id -> its speculation settings."""

    source: str = Field(min_length=1)
    models: dict[Name, list[SpecDefault]]
