"""A GPU family's constants carried from other engines (calibration.transfer, issue #10)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.calibration.fit import BOUNDS
from planner.calibration.recipes import BASE_EFFICIENCY
from planner.calibration.transfer import needs_transfer, pooled_family, transfer_family
from planner.schema.engine import EngineProfile


def _profile(pid: str, families: dict[str, dict[str, float]], **default: float) -> EngineProfile:
    base = BASE_EFFICIENCY.model_copy(update=default)
    return EngineProfile(
        id=pid,
        name=pid,
        source="test profile",
        as_of="2026-12-03",
        default=base,
        families={f: base.model_copy(update=v) for f, v in families.items()},
    )


def test_pooled_family_is_the_z_space_mean_hand_computed():
    # eta_mem bounds 0.3-1: 0.65 -> u 0.5, z 0; 0.86 -> u 0.8, z ln 4 = 1.386294.
    # Mean z 0.693147 = ln 2 -> u 2/3 -> 0.3 + 0.7 x 2/3 = 0.766667 (the plain mean is 0.755).
    a = _profile("a", {"hopper": {"eta_mem": 0.65}})
    b = _profile("b", {"hopper": {"eta_mem": 0.86}})
    c = _profile("c", {"blackwell": {"eta_mem": 0.4}})  # no hopper override: not a donor
    pooled, used = pooled_family([a, b, c], "hopper", ["eta_mem"])
    assert used == ["a", "b"]
    assert pooled["eta_mem"] == pytest.approx(0.3 + 0.7 * 2 / 3, rel=1e-9)


def test_pooled_family_without_donors_is_empty():
    assert pooled_family([_profile("a", {})], "hopper", ["eta_mem"]) == ({}, [])


def test_transfer_family_replaces_only_the_family_params():
    own = _profile("x", {"blackwell": {"eta_mem": 0.4}}, eta_mem=0.45, request_overhead_ms=280.0)
    donor = _profile("y", {"hopper": {"eta_mem": 0.8, "step_overhead_ms": 2.0}})
    out, note = transfer_family(own, "hopper", {"y": donor, "x": own}, ["eta_mem"])
    assert out.families["hopper"].eta_mem == pytest.approx(0.8)
    # not a family param: the engine's own (the default's), not the donor's
    assert out.families["hopper"].step_overhead_ms == own.default.step_overhead_ms
    assert out.families["hopper"].request_overhead_ms == 280.0
    assert out.families["blackwell"] == own.families["blackwell"]
    assert note == "hopper constants (eta_mem) pooled from y"


def test_transfer_family_ignores_the_engine_itself_and_keeps_it_without_donors():
    own = _profile("x", {"hopper": {"eta_mem": 0.9}})
    out, note = transfer_family(
        own.model_copy(update={"families": {}}), "hopper", {"x": own}, ["eta_mem"]
    )
    assert note == "" and "hopper" not in out.families


def test_needs_transfer_only_without_an_override_and_with_few_models():
    p = _profile("x", {"blackwell": {}})
    assert needs_transfer(p, "hopper", n_models=1, min_models=2)
    assert not needs_transfer(p, "hopper", n_models=2, min_models=2)
    assert not needs_transfer(p, "blackwell", n_models=1, min_models=2)


@given(st.lists(st.floats(0.3, 1.0), min_size=1, max_size=5))
def test_pooled_eta_lies_within_the_donors_and_the_bounds(values):
    donors = [_profile(f"d{i}", {"hopper": {"eta_mem": v}}) for i, v in enumerate(values)]
    pooled, _ = pooled_family(donors, "hopper", ["eta_mem"])
    lo, hi = BOUNDS["eta_mem"]
    x = pooled["eta_mem"]
    assert lo <= x <= hi
    # the z transform clips at 1e-6 of the range, so a donor at a bound moves by that much
    tol = 1e-5 * (hi - lo)
    assert min(values) - tol <= x <= max(values) + tol
    if len(set(values)) == 1:
        assert math.isclose(x, values[0], abs_tol=tol)


def test_a_donor_gives_only_the_constants_its_recipe_fits():
    # y fits eta_mem and moe_layer_us per family, z only eta_mem (its moe_layer_us is a held
    # 0): moe_layer_us is y's alone; step_overhead_ms is nobody's, so it is left out
    y = _profile("y", {"hopper": {"eta_mem": 0.65, "moe_layer_us": 30.0}})
    z = _profile("z", {"hopper": {"eta_mem": 0.86, "moe_layer_us": 0.0}})
    params = ["eta_mem", "moe_layer_us", "step_overhead_ms"]
    given_by = {"y": ["eta_mem", "moe_layer_us"], "z": ["eta_mem"]}
    pooled, used = pooled_family([y, z], "hopper", params, given_by)
    assert used == ["y", "z"]
    assert pooled["eta_mem"] == pytest.approx(0.3 + 0.7 * 2 / 3, rel=1e-9)
    assert pooled["moe_layer_us"] == pytest.approx(30.0, rel=1e-6)
    assert "step_overhead_ms" not in pooled
    own = _profile("x", {}, step_overhead_ms=2.5)
    out, note = transfer_family(own, "hopper", {"y": y, "z": z}, params, given_by)
    assert out.families["hopper"].step_overhead_ms == 2.5
    assert note == "hopper constants (eta_mem, moe_layer_us) pooled from y, z"


@pytest.mark.slow
def test_sglang_family_fold_takes_hopper_from_the_other_engines(catalog):
    # SGLang's Blackwell rows are all DeepSeek-V3 (one model): leaving Hopper out, the fold
    # takes Hopper's constants from TensorRT-LLM and vLLM; leaving Blackwell out, its Hopper
    # rows cover four models and it keeps its own. Without donors nothing is transferred.
    from planner.calibration import RECIPES, cross_validate, load_all_measurements

    rows = load_all_measurements(catalog)
    family = {g: catalog.gpu(g).family for g in rows["gpu_id"].dropna().unique()}
    rows["gpu_family"] = rows["gpu_id"].map(family)
    donors = {k: catalog.engines[k] for k in ("vllm", "trtllm")}
    start = catalog.engines["sglang"]
    pred = cross_validate(rows, catalog, RECIPES["sglang"], "gpu_family", 1, start, donors)
    notes = pred.groupby("held_out")["fit_note"].first()
    assert "hopper constants" in notes["hopper"] and "pooled from trtllm, vllm" in notes["hopper"]
    assert "pooled" not in notes["blackwell"]
