"""Issue 16's exact shortcuts: the single-GPU-type comparison skips the types whose
closed-form cost floor is above the best fleet found and picks what solving every type
picked; pruning compares candidates within their GPU and role and keeps what comparing
over the whole list kept."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.fleet.bounds import cost_floor
from planner.fleet.selection import Offered, prune_dominated
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem, solve_fleet
from planner.fleet.synthetic import synthetic_problem
from planner.perf.table import Table
from planner.planning import pipeline

OPTIONS = SolverOptions(time_limit_s=600)


def _hand_problem(min_replicas: int = 2) -> FleetProblem:
    """$2/h carrying 1 and 0 req/s, $3/h carrying 2 and 4; demand 10 and 8 req/s."""
    return FleetProblem(
        gpu=("a", "b"),
        tp=(1, 1),
        cost_per_hour=np.array([2.0, 3.0]),
        capacity=np.array([[1.0, 0.0], [2.0, 4.0]]),
        demand=np.array([10.0, 8.0]),
        min_replicas=min_replicas,
    )


def test_floor_is_each_class_on_its_cheapest_candidate_per_request():
    # class 0: min(2/1, 3/2) = 1.5 $/h per req/s; class 1: only b, 3/4 = 0.75
    assert cost_floor(_hand_problem()) == pytest.approx(10 * 1.5 + 8 * 0.75)


def test_floor_counts_min_replicas_and_unservable_classes():
    assert cost_floor(replace(_hand_problem(), demand=np.array([0.1, 0.0]))) == 2 * 2.0
    only_a = _hand_problem().restricted(np.array([True, False]))
    assert cost_floor(only_a) == np.inf  # class 1 has demand and no candidate


def test_floor_is_none_with_pools():
    pooled = replace(_hand_problem(), role=("prefill", "decode"))
    assert cost_floor(pooled) == 0.0


@given(st.integers(0, 10_000))
def test_floor_never_exceeds_the_optimum(seed):
    problem = synthetic_problem(3, 2, 3, seed=seed)
    sol = solve_fleet(problem, OPTIONS)
    if sol.status != "infeasible":
        assert cost_floor(problem) <= sol.cost_per_hour + 1e-9


def _every_type(problem: FleetProblem) -> tuple[str, np.ndarray] | None:
    """The comparison before the floor: one MIP per type, in id order, the first cheapest."""
    best = None
    for gpu_id in sorted(set(problem.gpu)):
        keep = np.array([g == gpu_id for g in problem.gpu])
        sol = solve_fleet(problem.restricted(keep), OPTIONS)
        if sol.status == "infeasible":
            continue
        cost = float(np.dot(problem.restricted(keep).cost_per_hour, sol.replicas))
        if best is None or cost < best[0]:
            best = (cost, gpu_id, sol.widened(keep).replicas)
    return None if best is None else (best[1], best[2])


def _single_gpu_best_counted(problem):
    """`pipeline._single_gpu_best` with its summary skipped, and the GPU type of every MIP
    it solved (the shortcut's point is solving fewer)."""
    calls = []
    main = solve_fleet(problem, OPTIONS)  # the plan's own fleet, solved before the comparison

    def counted(sub, options):
        calls.append(sub.gpu[0])
        return solve_fleet(sub, options)

    summarise, solve = pipeline._summarise, pipeline.solve_fleet
    pipeline._summarise = lambda sol, *_: sol
    pipeline.solve_fleet = counted
    try:
        got = pipeline._single_gpu_best(problem, None, None, (), OPTIONS, main, main)
    finally:
        pipeline._summarise, pipeline.solve_fleet = summarise, solve
    return got, calls


@given(st.integers(0, 10_000), st.booleans())
def test_skipping_picks_what_solving_every_type_picked(seed, tied):
    problem = synthetic_problem(4, 2, 3, seed=seed)
    if tied:  # g1 a copy of g0 (but without g0's inventory limit): equal-cost ties happen
        cost, cap = problem.cost_per_hour.copy(), problem.capacity.copy()
        cost[3:6], cap[3:6] = cost[0:3], cap[0:3]
        tp = problem.tp[0:3] * 2 + problem.tp[6:]
        problem = replace(problem, cost_per_hour=cost, capacity=cap, tp=tp)
    got, calls = _single_gpu_best_counted(problem)
    want = _every_type(problem)
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert got[1] == want[0]
        # the same cost; among fleets of equal cost (and GPUs) the plan's own may be another
        cost = problem.cost_per_hour
        assert np.dot(cost, got[0].replicas) == pytest.approx(np.dot(cost, want[1]), rel=1e-9)
    assert len(calls) <= len(set(problem.gpu))
    main = solve_fleet(problem, OPTIONS)
    used = {problem.gpu[i] for i in np.flatnonzero(main.replicas)}
    if main.status == "optimal" and len(used) == 1:
        assert used.pop() not in calls  # the plan's own type: its fleet, no MIP again


def _prune_whole_list(offered: Offered) -> np.ndarray:
    """Pruning before the groups: every candidate against the whole list, in order."""
    n = len(offered)
    keep = np.ones(n, dtype=bool)
    caps, ttft = offered.capacity, offered.ttft_ms
    keys = offered.keys.to_pandas()
    cost = keys["cost_per_hour_usd"].to_numpy(dtype=float)
    tp = keys["gpus_per_replica"].to_numpy()
    gpu = keys["gpu"].to_numpy()
    role = keys["role"].to_numpy(dtype=object)
    link = keys["kv_link"].to_numpy(dtype=object)
    pool = role != "aggregated"
    for i in range(n):
        same = (gpu == gpu[i]) & (role == role[i]) & (link == link[i]) & keep
        same[i] = False
        no_worse = same & (tp <= tp[i]) & (cost <= cost[i]) & (caps >= caps[i]).all(axis=1)
        if pool[i]:
            no_worse &= (ttft <= ttft[i]).all(axis=1)
        better = (tp < tp[i]) | (cost < cost[i]) | (caps > caps[i]).any(axis=1)
        if pool[i]:
            better |= (ttft < ttft[i]).any(axis=1)
        if (no_worse & better).any() or (no_worse & ~better & (np.arange(n) < i)).any():
            keep[i] = False
    return np.flatnonzero(keep)


@given(st.integers(0, 10_000), st.integers(0, 40))
def test_grouped_pruning_keeps_what_the_whole_list_kept(seed, n):
    rng = np.random.default_rng(seed)
    keys = pd.DataFrame(
        {
            "gpu": rng.choice(["a", "b", "c"], n),
            "role": rng.choice(["aggregated", "prefill", "decode"], n),
            "kv_link": rng.choice(["none", "scale-up", "scale-out"], n),
            "gpus_per_replica": rng.choice([1, 2, 4], n),
            "cost_per_hour_usd": rng.choice([1.0, 2.0, 3.0], n),  # few values: ties
        }
    )
    caps = rng.choice([0.0, 1.0, 2.0], (n, 2))
    ttft = rng.choice([100.0, 200.0], (n, 2))
    offered = Offered(Table.from_pandas(keys), caps, ttft)
    got = prune_dominated(offered)
    want = offered.take(_prune_whole_list(offered))
    assert got.keys.to_pandas().equals(want.keys.to_pandas())
    assert np.array_equal(got.capacity, want.capacity)


def _pooled_types(seed: int) -> FleetProblem:
    """Four GPU types, each an aggregated replica and a prefill and a decode pool; one class
    with a TTFT bound of 1 s, so the closed-form floor is 0 and the LP bound decides."""
    rng = np.random.default_rng(seed)
    role = ("aggregated", "prefill", "decode") * 4
    gpu = tuple(g for g in "abcd" for _ in range(3))
    cost = rng.uniform(1.0, 8.0, len(role)).round(1)
    return FleetProblem(
        gpu=gpu,
        tp=(1,) * len(role),
        cost_per_hour=cost,
        capacity=(cost * rng.uniform(0.5, 1.5, len(role))).round(1).reshape(-1, 1),
        demand=np.array([rng.uniform(2.0, 30.0)]),
        role=role,
        ttft_part_ms=rng.uniform(50.0, 900.0, len(role)).reshape(-1, 1),
        ttft_sla_ms=np.array([1000.0]),
        min_replicas=int(rng.integers(0, 3)),
    )


@given(st.integers(0, 10_000))
def test_with_pools_the_lp_floor_skips_types_and_picks_what_solving_every_type_picked(seed):
    problem = _pooled_types(seed)
    assert cost_floor(problem.restricted(np.array([g == "a" for g in problem.gpu]))) == 0.0
    got, calls = _single_gpu_best_counted(problem)
    want = _every_type(problem)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert got[1] == want[0]
        assert np.array_equal(got[0].replicas, want[1])
    assert len(calls) <= 4
