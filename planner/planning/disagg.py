"""Disaggregated prefill/decode in a plan (issue #11): which roles to offer, and what to say.

`search.disaggregated`: false offers aggregated replicas only; true offers prefill and decode
pools only (to price disaggregation on its own); auto offers both where some class's prompt is
at least `AUTO_MIN_INPUT_TOKENS` long, and the fleet MIP takes the pools only where they are
cheaper. Short prompts are left aggregated under auto: their prefill is a few milliseconds
that barely interrupts decoding, so there is little for a split to win, and tripling the
candidate grid of every short-prompt scenario would slow its solve for nothing.
"""

from __future__ import annotations

from planner.errors import InputError
from planner.schema.plan import FleetSummary, RequestClassPlan
from planner.schema.scenario import Scenario

AUTO_MIN_INPUT_TOKENS = 4096
POOLS = ("prefill", "decode")


def roles_for(scenario: Scenario, classes: tuple[RequestClassPlan, ...]) -> tuple[str, ...]:
    """The serving roles the candidate grid enumerates for this scenario."""
    mode = scenario.search.disaggregated
    if mode is False:
        return ("aggregated",)
    if scenario.finance is not None:  # the plan over time (fleet/overtime.py) has no pools
        if mode is True:
            raise InputError(
                "search.disaggregated: true is not supported with a finance: section (the plan "
                "over time sizes aggregated replicas only); use auto or false"
            )
        return ("aggregated",)
    if mode is True:
        return POOLS
    long = any(c.input_tokens >= AUTO_MIN_INPUT_TOKENS for c in classes)
    return ("aggregated", *POOLS) if long else ("aggregated",)


def pools_note(fleet: FleetSummary, classes: tuple[RequestClassPlan, ...]) -> str | None:
    """The disaggregated part of a fleet in one line: the pools, and each class's worst-case
    TTFT as its slowest prefill part plus its slowest decode part (any pairing)."""
    pre = [d for d in fleet.deployments if d.role == "prefill"]
    dec = [d for d in fleet.deployments if d.role == "decode"]
    if not pre and not dec:
        return None
    parts = []
    for cls in classes:
        p = [d.ttft_ms_by_class[cls.name] for d in pre if d.load_by_class.get(cls.name, 0) > 1e-9]
        q = [d.ttft_ms_by_class[cls.name] for d in dec if d.load_by_class.get(cls.name, 0) > 1e-9]
        if p and q:
            worst = max(p) + max(q)
            parts.append(f"'{cls.name}' TTFT <= {max(p):.0f} + {max(q):.0f} = {worst:.0f} ms")
    gpus_p, gpus_d = sum(d.gpus for d in pre), sum(d.gpus for d in dec)
    return (
        f"disaggregated: prefill pool {gpus_p} GPUs, decode pool {gpus_d} GPUs; "
        + ("; ".join(parts) or "no class split over both pools")
        + " (prefill part + decode part, KV transfer over the scale-out link included)"
    )
