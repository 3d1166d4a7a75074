"""Shared fixtures: the real catalog, loaded once per session, and a known umask."""

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


@pytest.fixture
def umask_022():
    """Run the test under umask 022, restored after: a new file must then be 0644."""
    old = os.umask(0o022)
    try:
        yield 0o644
    finally:
        os.umask(old)
