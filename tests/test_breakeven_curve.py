"""Issue 16: the break-even chart's cost curve from fewer, cheaper MIPs. The model built once
and re-solved per scale (`fleet/scaled.py`) and the flat-step shortcut give what one fresh
MIP per scale gives; the chart thins its points only where the fleet is large."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pulp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.fleet import scaled
from planner.fleet.matrix import build_model
from planner.fleet.solver import SolverOptions, solve
from planner.fleet.steady import FleetProblem, build_lp, solve_fleet
from planner.fleet.synthetic import synthetic_problem
from planner.planning import breakeven
from planner.planning.breakeven import CURVE_SCALES, SelfCost, curve_scales

EXACT = SolverOptions(time_limit_s=600, relative_gap=0.0)  # both sides proven optimal


def _pools(seed: int) -> FleetProblem:
    """One class served by aggregated replicas or prefill/decode pools, TTFT bound 1 s."""
    rng = np.random.default_rng(seed)
    role = ("aggregated", "aggregated", "prefill", "prefill", "decode", "decode")
    cost = rng.uniform(1.0, 8.0, len(role)).round(2)
    return FleetProblem(
        gpu=("a", "b", "a", "b", "a", "b"),
        tp=(1, 2, 1, 2, 1, 2),
        cost_per_hour=cost,
        capacity=(cost * rng.uniform(0.5, 1.5, len(role))).reshape(-1, 1),
        demand=np.array([rng.uniform(2.0, 20.0)]),
        role=role,
        ttft_part_ms=rng.uniform(50.0, 900.0, len(role)).reshape(-1, 1),
        ttft_sla_ms=np.array([1000.0]),
        min_replicas=int(rng.integers(0, 3)),
    )


def _problem(kind: str, seed: int) -> FleetProblem:
    if kind == "pools":
        return _pools(seed)
    return replace(synthetic_problem(2, 2, 2, seed=seed), inventory={})


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["aggregated", "pools"]), seed=st.integers(0, 10_000))
def test_the_step_curve_equals_one_mip_per_scale(kind, seed):
    """fill() (flat steps, the model re-solved per scale) against a fresh MIP at every scale."""
    problem = _problem(kind, seed)
    scales = CURVE_SCALES[::3]
    cost = SelfCost(problem, EXACT)
    cost.fill(scales)
    for s in scales:
        fresh = solve_fleet(problem.scaled(float(s)), EXACT)
        assert cost(float(s)) == pytest.approx(fresh.cost_per_hour, rel=1e-9, abs=1e-9)
    assert cost.solves <= len(scales)


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["aggregated", "pools"]), seed=st.integers(0, 10_000))
def test_the_model_built_once_solves_like_a_fresh_one(kind, seed):
    problem = _problem(kind, seed)
    built = scaled.ScaledFleet(problem, EXACT)
    for s in (0.01, 0.3, 1.0, 7.0):
        fresh = solve_fleet(problem.scaled(s), EXACT)
        assert built.at(s).cost_per_hour == pytest.approx(fresh.cost_per_hour, rel=1e-9)


def test_arrays_carry_the_pulp_model_by_hand():
    """min 2a + 3b s.t. a + 2b >= 4 (capacity 1 and 2), a <= 5: the rows and bounds."""
    lp = pulp.LpProblem("t", pulp.LpMinimize)
    a = pulp.LpVariable("a", lowBound=0, upBound=5, cat=pulp.LpInteger)
    b = pulp.LpVariable("b", lowBound=0)
    lp += 2 * a + 3 * b
    lp += a + 2 * b >= 4, "cover"
    lp += a - b == 1, "tie"
    model, cols = scaled.to_arrays(lp, [a, b])
    assert cols.tolist() == [0, 1]
    assert model.cost.tolist() == [2.0, 3.0]
    assert model.upper.tolist() == [5.0, np.inf] and model.integer.tolist() == [True, False]
    assert model.row_lower.tolist() == [4.0, 1.0] and model.row_upper.tolist() == [np.inf, 1.0]
    entries = zip(model.rows.tolist(), model.cols.tolist(), model.values.tolist(), strict=True)
    assert sorted(entries) == [
        (0, 0, 1.0), (0, 1, 2.0), (1, 0, 1.0), (1, 1, -1.0),
    ]  # fmt: skip


def test_the_arrays_keep_every_row_of_the_fleet_model():
    problem = _pools(3)
    lp = build_lp(problem)[0]
    built = build_model(problem).model
    assert built.n_rows == len(lp.constraints)
    assert built.n_cols == len(lp.variables())


def _rich_pools(seed: int) -> FleetProblem:
    """Two classes (one without a TTFT bound), four prefill and four decode candidates on two
    GPU types, some pools balanced within their GPU type (scale-up), some fleet-wide."""
    rng = np.random.default_rng(seed)
    role = ("aggregated",) * 2 + ("prefill",) * 4 + ("decode",) * 4
    n = len(role)
    gpu = tuple(str(g) for g in rng.choice(["a", "b"], n))
    up = rng.random(n) < 0.4
    cost = rng.uniform(1.0, 8.0, n).round(2)
    capacity = cost[:, None] * rng.uniform(0.5, 1.5, (n, 2))
    capacity[rng.random((n, 2)) < 0.2] = 0.0
    capacity[:2] *= 0.4  # aggregated replicas dear, so most optima take pools
    capacity[:2, 1] = np.maximum(capacity[:2, 1], 0.5)  # the unbounded class has a server
    return FleetProblem(
        gpu=gpu,
        tp=tuple(int(t) for t in rng.choice([1, 2], n)),
        cost_per_hour=cost,
        capacity=capacity,
        demand=rng.uniform(2.0, 20.0, 2),
        role=role,
        ttft_part_ms=rng.uniform(10.0, 1000.0, (n, 2)),
        ttft_sla_ms=np.array([1000.0, np.inf]),
        kv_group=tuple(
            g if u and r != "aggregated" else "" for g, u, r in zip(gpu, up, role, strict=True)
        ),
        min_replicas=int(rng.integers(0, 3)),
    )


def _objective(model, options=EXACT) -> float:
    """The proven optimum; inf where the model is infeasible."""
    out = solve(model, options)
    assert out.status in ("optimal", "infeasible")
    return out.objective if out.status == "optimal" else math.inf


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), scale=st.sampled_from([0.05, 0.5, 1.0, 4.0]))
def test_hall_rows_carry_what_the_buckets_carry(seed, scale):
    """One load per pool and class with Hall's rows is the bucket model projected: the same LP
    optimum (the relaxation) and the same MIP optimum, at any demand."""
    problem = _rich_pools(seed).scaled(scale)
    buckets, hall = build_model(problem).model, build_model(problem, compact=True).model
    assert hall.n_cols < buckets.n_cols
    lp = (_objective(buckets.relaxed()), _objective(hall.relaxed()))
    mip = (_objective(buckets), _objective(hall))
    for bucket_model, hall_model in (lp, mip):  # infeasible in one, infeasible in the other
        assert math.isinf(hall_model) == math.isinf(bucket_model)
    if math.isfinite(lp[0]):
        assert lp[1] == pytest.approx(lp[0], rel=1e-7, abs=1e-7)
    if math.isfinite(mip[0]):
        assert mip[1] == pytest.approx(mip[0], rel=1e-9, abs=1e-9)


def test_hall_rows_keep_a_pairing_the_ttft_bound_forbids_out():
    """Prefill P takes 900 of the 1,000 ms bound, so only buckets whose decode share is at
    most 10% (the first three) admit it; decode D1 (300 ms) needs the 35% bucket and cannot
    pair with it, decode D2 (40 ms) can. D1 is cheaper: a balance that ignored the buckets
    would take it, the rows take D2."""
    problem = FleetProblem(
        gpu=("g", "g", "g"),
        tp=(1, 1, 1),
        cost_per_hour=np.array([1.0, 1.0, 5.0]),
        capacity=np.array([[10.0], [10.0], [10.0]]),
        demand=np.array([5.0]),
        role=("prefill", "decode", "decode"),
        ttft_part_ms=np.array([[900.0], [300.0], [40.0]]),
        ttft_sla_ms=np.array([1000.0]),
    )
    built = build_model(problem, compact=True)
    out = solve(built.model, EXACT)
    assert built.replicas(out.values).tolist() == [1, 0, 1]
    assert out.objective == pytest.approx(6.0)
    assert _objective(build_model(problem).model) == pytest.approx(6.0)


def test_redundancy_and_cbc_keep_a_fresh_solve_per_scale():
    problem = synthetic_problem(2, 2, 2, seed=1)
    assert scaled.supported(problem, EXACT)
    assert not scaled.supported(replace(problem, redundancy=1), EXACT)
    assert not scaled.supported(problem, replace(EXACT, backend="cbc"))


class _Known(SelfCost):
    """A cost curve whose fleets hold `per_scale` replicas per unit of scale: no solve."""

    def __init__(self, per_scale: float) -> None:
        self.cache, self.replicas, self.solves, self.per_scale = {}, {}, 0, per_scale
        self._scaled, self._lp_slope = None, None
        self.fleets, self.reached = {}, {}  # no fleets kept: no reach

    def _solve(self, key: float) -> float:
        self.replicas[key] = int(np.ceil(self.per_scale * key))
        return float(self.replicas[key])


def test_the_chart_draws_every_point_while_the_fleet_is_small():
    assert np.array_equal(curve_scales(_Known(0.5)), CURVE_SCALES)  # 10 replicas at the top


def test_the_chart_thins_where_the_fleet_is_large_and_keeps_both_ends():
    # 100 replicas at scale ~20: from 12 replicas (scale >= 2.4) every third point, down from
    # the last
    drawn = curve_scales(_Known(100 / CURVE_SCALES[-1]))
    dense = CURVE_SCALES[CURVE_SCALES * 100 / CURVE_SCALES[-1] < breakeven.DENSE_REPLICAS]
    assert np.array_equal(drawn[: len(dense)], dense)
    tail = drawn[len(dense) :]
    assert tail[-1] == CURVE_SCALES[-1] and drawn[0] == CURVE_SCALES[0]
    steps = np.diff(np.searchsorted(CURVE_SCALES, tail))
    assert (steps == breakeven.SPARSE_STRIDE).all() and len(tail) >= 2
    assert len(drawn) < len(CURVE_SCALES)


def test_the_lp_slope_of_pools_by_hand():
    """Prefill $1/h for 2 prompts/s, decode $3/h for 1 request/s, 10 req/s: the pools need
    5 + 10 replicas, $35/h; the closed form would price the class on the prefill alone ($5)."""
    problem = FleetProblem(
        gpu=("a", "a"),
        tp=(1, 1),
        cost_per_hour=np.array([1.0, 3.0]),
        capacity=np.array([[2.0], [1.0]]),
        demand=np.array([10.0]),
        role=("prefill", "decode"),
        min_replicas=3,
    )
    cost = SelfCost(problem, EXACT)
    assert cost._closed_form_slope() == pytest.approx(5.0)
    assert cost.lower_slope() == pytest.approx(35.0, rel=1e-5)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), factor=st.floats(0.3, 1.5))
def test_with_pools_the_lp_slope_bounds_and_the_search_finds_what_the_full_scan_found(seed, factor):
    problem = _pools(seed)
    fast, slow = SelfCost(problem, EXACT), SelfCost(problem, EXACT)
    slope = fast.lower_slope()
    for s in (0.05, 1.0, 20.0):
        assert slope * s <= solve_fleet(problem.scaled(s), EXACT).cost_per_hour * (1 + 1e-9)
    api = slope * factor  # below the LP slope: no crossing, found without a solve
    scan = [float(s) for s in breakeven.SCALES if slow(float(s)) <= api * s]
    found = breakeven.break_even_scale(fast, api, 1.0)
    assert (found is None) == (not scan)
    if found is not None:
        assert found <= scan[0] * (1 + 1e-12)


def test_scale_one_is_the_plan_itself_without_a_solve(catalog, unhurried):
    """`SelfCost.know`: the break-even's cost at the scenario's own demand is the plan's fleet
    (nothing the break-even drops applied to it), and a fresh MIP there agrees."""
    from planner import load_scenario, plan

    scenario, cat = load_scenario("scenarios/rag.yaml", catalog)
    result = plan(unhurried(scenario), cat)
    cost = SelfCost(result.problem, result.solver)
    cost.know(result)
    assert cost(1.0) == pytest.approx(result.fleet.total_cost_per_hour_usd, rel=1e-12)
    assert cost.solves == 0
    fresh = scaled.ScaledFleet(cost.problem, EXACT).at(1.0)
    assert cost(1.0) == pytest.approx(fresh.cost_per_hour, rel=1e-9)
    capped = replace(result, problem=replace(result.problem, max_gpus=10_000))
    other = SelfCost(capped.problem, capped.solver)
    other.know(capped)  # a GPU cap the break-even drops: scale 1 is solved again
    assert 1.0 not in other.cache
