"""Shared fixtures: the real catalog, a generous solver limit, a known umask."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, settings

from planner.inputs.catalog import load_catalog
from planner.schema.scenario import Scenario

# catalog snapshots (planner/inputs/catalog_cache.py) go to one folder per test run, never
# the user's ~/.cache; subprocesses (CLI tests) inherit it
os.environ.setdefault("PLANNER_CACHE_DIR", tempfile.mkdtemp(prefix="planner-test-cache-"))

# the default profile draws the same examples on every run (derandomize: CI and a user's
# clone see one suite, and a failure reproduces as it was seen); HYPOTHESIS_PROFILE=thorough
# explores at random, with many more examples, to look for new counterexamples
settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# a solve that must reach the optimum gets this limit: the diurnal plan over time needs about
# 6 s to close on a loaded 2-core machine, past the 5 s default
GENEROUS_TIME_LIMIT_S = 120.0


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def aic(catalog):
    """The aic silicon rows as calibration measurements, loaded once a test module."""
    from planner import calibration as cal

    return cal.load_aic_measurements(cal.AIC_CSV, catalog)


@pytest.fixture(scope="session")
def unhurried() -> Callable[[Scenario], Scenario]:
    """Give a scenario a generous solver time limit, so a test that needs the optimum gets
    it on any machine, however loaded."""

    def apply(scenario: Scenario) -> Scenario:
        solver = scenario.solver.model_copy(update={"time_limit_s": GENEROUS_TIME_LIMIT_S})
        return scenario.model_copy(update={"solver": solver})

    return apply


@pytest.fixture
def umask_022():
    """Run the test under umask 022, restored after: a new file must then be 0644."""
    old = os.umask(0o022)
    try:
        yield 0o644
    finally:
        os.umask(old)


@pytest.fixture(scope="session")
def no_step_cost() -> Callable:
    """A catalog copy whose vLLM profile has no fixed decode step cost (main's Hopper fit
    before issue #10 t10v), so no per-draft-forward cost either: fast-chat's draft
    speculation pays there by a wide margin."""

    def apply(cat):
        eng = cat.engines["vllm"]
        zero = {"step_overhead_ms": 0.0}
        families = {k: v.model_copy(update=zero) for k, v in eng.families.items()}
        eng = eng.model_copy(
            update={"default": eng.default.model_copy(update=zero), "families": families}
        )
        return dataclasses.replace(cat, engines={**cat.engines, "vllm": eng})

    return apply


@pytest.fixture
def whole_step_drafts() -> Callable:
    """A catalog copy whose vLLM profile has no per-forward figure (draft_forward_ms None,
    issue #11 t10s), so each draft forward pays the engine's whole step cost, as before."""

    def apply(cat):
        eng = cat.engines["vllm"]
        unset = {"draft_forward_ms": None}
        families = {k: v.model_copy(update=unset) for k, v in eng.families.items()}
        eng = eng.model_copy(
            update={"default": eng.default.model_copy(update=unset), "families": families}
        )
        return dataclasses.replace(cat, engines={**cat.engines, "vllm": eng})

    return apply
