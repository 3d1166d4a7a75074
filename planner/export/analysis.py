"""What the workbook shows beyond the Plan: break-even volumes and cost curves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.errors import SolverError
from planner.schema.plan import Plan


@dataclass(frozen=True)
class Analysis:
    """What the workbook shows beyond the Plan: break-even volumes and cost curves."""

    comparisons: dict[Any, Any]  # ApiQuote -> buildvsbuy.Comparison
    curves: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    notes: tuple[str, ...] = ()


def analyse(plan: Plan, comparisons: Sequence[Any] | None, curves: Any) -> Analysis:
    """Run buildvsbuy.compare and cost_curves unless given (MIP solves: the slow part)."""
    notes: list[str] = []
    solvable = plan.problem is not None and bool(plan.api_quotes)
    if comparisons is None or curves is None:
        import planner.buildvsbuy as buildvsbuy  # imports the MIP solver: only when needed
    if comparisons is None and solvable:
        try:
            comparisons = buildvsbuy.compare(plan, plan.problem, plan.average_demand_factor)
        except SolverError as err:
            comparisons = []
            notes.append(f"break-even volumes not computed: {err.message}")
    if curves is None and solvable and plan.cheapest_api is not None:
        try:
            curves = buildvsbuy.cost_curves(
                plan.problem, plan, plan.cheapest_api, plan.average_demand_factor
            )
        except SolverError as err:
            curves = None
            notes.append(f"self-host vs API chart not drawn: {err.message}")
    curves = tuple(np.asarray(c, float) for c in curves) if curves is not None else ()
    return Analysis(
        {c.quote: c for c in comparisons or ()},
        curves if len(curves) == 3 and len(curves[0]) else None,
        tuple(notes),
    )
