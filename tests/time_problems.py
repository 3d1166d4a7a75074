"""Hypothesis helper shared by the plan-over-time tests: prices on some GPU types for
every tier (on demand, reserved, owned, spot) and the problem they make."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from planner.fleet.overtime import TierPrices, TimeProblem


def tiered_problem(
    draw,
    gpu: tuple[str, ...],
    tp: tuple[int, ...],
    cap: np.ndarray,
    demand: np.ndarray,
    hours: np.ndarray,
    inventory: tuple[int, int] | None,
) -> TimeProblem:
    """A TimeProblem on these candidates with drawn prices (reserved, owned and spot on some
    types), spot share, replica floor and, if `inventory` is a (least, most) range, a GPU
    limit on some types."""
    used = sorted(set(gpu))
    od = {g: draw(st.floats(1.0, 5.0)) for g in used}
    reserved = {g: od[g] * draw(st.floats(0.3, 0.9)) for g in used if draw(st.booleans())}
    owned = {g: od[g] * draw(st.floats(0.2, 0.9)) for g in used if draw(st.booleans())}
    spot = {g: od[g] * draw(st.floats(0.2, 0.5)) for g in used if draw(st.booleans())}
    limits = {}
    if inventory is not None:
        limits = {g: draw(st.integers(*inventory)) for g in used if draw(st.booleans())}
    return TimeProblem(
        gpu=gpu, tp=tp, capacity=cap, demand=demand, hours=hours,
        prices=TierPrices(on_demand=od, reserved=reserved, owned=owned, spot=spot),
        spot_max_share=draw(st.sampled_from([0.0, 0.3])), preemption_overhead=0.1,
        min_replicas=draw(st.integers(0, 2)), inventory=limits,
    )  # fmt: skip


def hand_problem() -> TimeProblem:
    """The hand-computed plan over time of test_timeplan and test_overtime_crossing: one GPU
    type, one candidate of 1 GPU carrying 1 req/s, two periods of 100 h with demand 3 and 1,
    on demand $2/h, reserved $1.5/h for all 200 h."""
    return TimeProblem(
        gpu=("g",),
        tp=(1,),
        capacity=np.array([[1.0]]),
        demand=np.array([[3.0, 1.0]]),
        hours=np.array([100.0, 100.0]),
        prices=TierPrices(on_demand={"g": 2.0}, reserved={"g": 1.5}),
    )
