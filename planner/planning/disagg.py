"""Disaggregated prefill/decode in a plan (issue #11): which roles to offer, and what to say.

`search.disaggregated`: false offers aggregated replicas only; true offers prefill and decode
pools only (to price disaggregation on its own); auto offers both where some class's prompt is
at least `AUTO_MIN_INPUT_TOKENS` long, and the fleet MIP takes the pools only where they are
cheaper. Short prompts are left aggregated under auto: their prefill is a few milliseconds
that barely interrupts decoding, so there is little for a split to win, and tripling the
candidate grid of every short-prompt scenario would slow its solve for nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from planner.errors import InputError
from planner.schema.plan import FleetSummary, RequestClassPlan
from planner.schema.scenario import Scenario

if TYPE_CHECKING:
    import pandas as pd

AUTO_MIN_INPUT_TOKENS = 4096
POOLS = ("prefill", "decode")


def aggregated_only(scenario: Scenario) -> Scenario:
    """The scenario with pools switched off: capacity and batch jobs size whole replicas
    (their MIPs have no prefill/decode balance), so pools must not reach them."""
    return scenario.model_copy(
        update={"search": scenario.search.model_copy(update={"disaggregated": False})}
    )


def pools_left_out(scenario: Scenario, classes: tuple[RequestClassPlan, ...], command: str):
    """What `planner capacity` / `planner job` say about pools they do not size: exit 2 when
    the scenario asks for pools only (search.disaggregated: true), a note when `auto` would
    offer them to `solve` (a prompt of >= AUTO_MIN_INPUT_TOKENS), else None."""
    if scenario.search.disaggregated is True:
        raise InputError(
            f"search.disaggregated: true asks for prefill/decode pools, which planner {command} "
            "does not size (aggregated replicas only); set it to auto or false, or use "
            "planner solve"
        )
    if roles_for(scenario, classes) == ("aggregated",):
        return None
    return (
        f"prefill/decode pools are not sized by planner {command} (aggregated replicas only): "
        f"a prompt is >= {AUTO_MIN_INPUT_TOKENS:,} tokens, where planner solve also offers "
        "pools (search.disaggregated: auto), so pools may do better than this answer"
    )


def roles_for(scenario: Scenario, classes: tuple[RequestClassPlan, ...]) -> tuple[str, ...]:
    """The serving roles the candidate grid enumerates for this scenario."""
    mode = scenario.search.disaggregated
    if mode is False:
        return ("aggregated",)
    # with a finance: section the plan over time takes pools as fixed prefill + decode units
    # (planning/time_pools.py)
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
        + " (prefill part + decode part, KV transfer included: over the scale-out link, or"
        + " the scale-up link where a pool shares its node with its partner)"
    )


def _pools_pair(cls: RequestClassPlan, own: pd.DataFrame) -> bool:
    """Some SLA-meeting prefill row and decode row whose TTFT parts add up within the bound."""
    ok = own[own["sla_ok"].to_numpy()]
    pre, dec = ok[ok["role"] == "prefill"], ok[ok["role"] == "decode"]
    if pre.empty or dec.empty:
        return False
    return cls.ttft_ms is None or pre["ttft_ms"].min() + dec["ttft_ms"].min() <= cls.ttft_ms


def servable(cls: RequestClassPlan, own: pd.DataFrame) -> bool:
    """Whether some aggregated candidate, or some pair of pools, meets the class's SLA."""
    agg = own["role"] == "aggregated"
    return bool(own["sla_ok"][agg].any()) or _pools_pair(cls, own)


def sla_message(
    cls: RequestClassPlan,
    own: pd.DataFrame,
    aggregated_message: Callable[[RequestClassPlan, pd.DataFrame], str],
) -> str:
    """Why no candidate serves the class: the aggregated diagnosis on aggregated rows, then
    what the best prefill and decode pools reach (their TTFT parts add up)."""
    agg = own[own["role"] == "aggregated"]
    head = f"SLA of class '{cls.name}': no candidate meets it."
    parts = [aggregated_message(cls, agg)] if not agg.empty else [head]
    pre, dec = own[own["role"] == "prefill"], own[own["role"] == "decode"]
    if not pre.empty and not dec.empty:
        best_p = pre.loc[pre["ttft_ms"].idxmin()]
        best_d = dec.loc[dec["tpot_ms"].idxmin()]
        fast_d = dec.loc[dec["ttft_ms"].idxmin()]
        parts.append(
            f"Disaggregated: the best prefill pool reaches a TTFT part of "
            f"{best_p.ttft_ms:.0f} ms ({best_p.gpu} tp {best_p.tp} {best_p.quant}, KV transfer "
            f"{best_p.kv_transfer_ms:.1f} ms) and the best decode pool a decode part of "
            f"{fast_d.ttft_ms:.0f} ms and a TPOT of {best_d.tpot_ms:.1f} ms ({best_d.gpu} tp "
            f"{best_d.tp} {best_d.quant} batch {best_d.batch}); "
            f"TTFT bound {cls.ttft_ms if cls.ttft_ms is not None else 'none'} ms, TPOT bound "
            f"{cls.tpot_ms if cls.tpot_ms is not None else 'none'} ms."
        )
    return " ".join(parts)
