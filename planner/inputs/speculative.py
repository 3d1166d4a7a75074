"""Read data/speculative.yaml: the published speculative-decoding defaults (issue #11)."""

from __future__ import annotations

from functools import lru_cache

from planner.inputs.loading import load_yaml_model, package_folder
from planner.schema.speculative import SpecDefaults

SPEC_FILE = "speculative.yaml"


@lru_cache(maxsize=1)
def spec_defaults() -> SpecDefaults:
    """The defaults shipped in data/speculative.yaml, validated once."""
    return load_yaml_model(package_folder("planner.data") / SPEC_FILE, SpecDefaults)
