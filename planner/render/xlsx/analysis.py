"""What the workbook shows beyond the Plan: the break-even analysis, indexed for lookup."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.planning.breakeven import BuildVsBuy, Comparison
from planner.schema.plan import ApiQuote


@dataclass(frozen=True)
class Analysis:
    """Break-even volumes by API offering and the cost curves, as the sheets read them."""

    comparisons: dict[ApiQuote, Comparison]
    curves: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    notes: tuple[str, ...] = ()
    api_curves: dict[str, np.ndarray] = field(default_factory=dict)
    title: str = "Self-hosting vs API, $ per month by peak demand"
    self_label: str = "self-hosted (optimal fleet re-solved, 24/7)"  # the plan over time's (#13)


def indexed(analysis: BuildVsBuy | None) -> Analysis:
    """The analysis planning computed, keyed by offering; nothing is computed here."""
    if analysis is None:
        return Analysis({}, None, ("break-even analysis not run",))
    curves = analysis.curves
    drawn = curves is not None and len(curves[0]) > 0
    apis = analysis.api_curves
    if drawn and not apis and curves is not None:  # without every API's line: the cheapest's
        apis = {"cheapest API": curves[2]}
    return Analysis(
        {c.quote: c for c in analysis.comparisons},
        curves if drawn else None,
        analysis.notes,
        apis,
        analysis.chart_title if drawn else "",
        analysis.self_label,
    )
