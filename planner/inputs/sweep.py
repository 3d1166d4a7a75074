"""Reading what a sweep varies: `--set key=v1,v2` values as YAML, and the `--vary` file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from planner.errors import InputError, unknown_name_message
from planner.inputs.catalog import Catalog
from planner.inputs.loading import load_yaml_model
from planner.inputs.scenarios import _check_ids
from planner.schema.scenario import Scenario
from planner.schema.sweep import VaryFile

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_set(text: str) -> tuple[str, list[Any]]:
    """`key.path=v1,v2,...` as (key, values): the values read as one YAML flow list, so
    `50ms`, `0.05s`, `[h100-sxm,h200]` and quoted strings mean what they do in a scenario."""
    key, sep, rhs = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InputError(f"--set {text!r}: expected key.path=value1,value2,...")
    if not rhs.strip():
        raise InputError(f"--set {key}: no values after '='")
    try:
        values = yaml.load(f"[{rhs}]", Loader=_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(
            f"--set {key}: cannot read the values {rhs!r} as YAML: {problem}"
        ) from None
    return key, values


def load_vary(path: str | Path) -> VaryFile:
    """The distributions of a Monte Carlo sweep, strictly validated (errors name the key)."""
    return load_yaml_model(Path(path), VaryFile)


def check_ids(scenario: Scenario, source: str, catalog: Catalog) -> None:
    """Every catalog id a swept scenario names exists (as when a scenario file is loaded)."""
    if scenario.model not in catalog.models:
        raise InputError(
            f"{source}: model: " + unknown_name_message("model", scenario.model, catalog.models)
        )
    _check_ids(scenario, Path(source), catalog)
