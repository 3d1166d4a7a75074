"""Shared fixtures: the real catalog, loaded once per session."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from planner.inputs.catalog import load_catalog

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()
