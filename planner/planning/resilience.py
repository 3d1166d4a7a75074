"""Redundancy that holds (issue 12): the scenario's n+k and same-vendor asks put into the
fleet problem, and what the solved fleet keeps after losing a replica."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from planner.errors import InputError
from planner.fleet.disagg import roles_of
from planner.fleet.redundancy import headroom_after_loss, survives
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem
from planner.inputs.catalog import Catalog
from planner.schema.plan import Deployment, RequestClassPlan
from planner.schema.scenario import Constraints, Scenario

# a replica carrying less than this share of the busiest replica's tokens/s (input + output)
# is flagged: losing the busy one would lose most of the capacity (issue 12)
TOKEN_SHARE_WARNING = 0.20


@dataclass(frozen=True)
class Failover:
    """One fleet line and the share of its service's peak the rest carry without one of its
    replicas, at planned load (>= 1: the peak still fits within SLA)."""

    model: str
    gpu: str
    tp: int
    quant: str
    batch: int
    replicas: int
    peak_share_after_loss: float
    role: str = "aggregated"  # or "prefill" / "decode": a pool's loss is lost capacity of its role


def check_supported(scenario: Scenario) -> None:
    """Redundancy is planned for the peak fleet only; the plan over time has no spares yet."""
    c = scenario.constraints
    if scenario.finance is not None and (c.redundancy_k or c.same_vendor):
        raise InputError(
            "constraints.redundancy / constraints.same_vendor: not supported yet with a "
            "finance section (plans over time); remove one of them"
        )


def redundant(problem: FleetProblem, constraints: Constraints, catalog: Catalog) -> FleetProblem:
    """The fleet problem with the scenario's n+k and same-vendor constraints."""
    if not constraints.redundancy_k and not constraints.same_vendor:
        return problem
    vendor = tuple(catalog.gpus[g].vendor for g in problem.gpu) if constraints.same_vendor else ()
    return replace(
        problem,
        redundancy=constraints.redundancy_k,
        same_vendor=constraints.same_vendor,
        vendor=vendor,
    )


def failovers(
    problem: FleetProblem,
    replicas: np.ndarray,
    keys: list[tuple[str, str, int, str, int]],
    options: SolverOptions,
) -> tuple[Failover, ...]:
    """Each used line (keys: model, gpu, tp, quant, batch per candidate) and what is left of
    its service's peak after losing one of its replicas."""
    left = headroom_after_loss(problem, replicas, options)
    role = roles_of(problem)
    return tuple(
        Failover(*keys[c][:4], keys[c][4], int(replicas[c]), share, str(role[c]))
        for c, share in left.items()
    )


def failover_notes(
    problem: FleetProblem, replicas: np.ndarray, found: tuple[Failover, ...], options
) -> list[str]:
    """What the notes say: the weakest line after a loss, and spread losses for k >= 2."""
    if not found:
        return []
    worst = min(found, key=lambda f: f.peak_share_after_loss)
    k = problem.redundancy
    out = [
        f"after losing one replica the fleet still carries at least "
        f"{worst.peak_share_after_loss:.0%} of the peak (weakest: losing a {worst.gpu} tp "
        f"{worst.tp} {_replica_word(worst)}{f' of {worst.model}' if worst.model else ''})"
        + _per_role(found)
    ]
    if k >= 2:
        spread = survives(problem, replicas, options, k)
        verdict = "holds" if spread >= 1 - 1e-6 else "does NOT hold"
        out.append(
            f"n_plus_{k}: any {k} replicas lost, spread over lines in any way, leaves "
            f"{spread:.0%} of the peak: {verdict}"
        )
    return out


def _replica_word(f: Failover) -> str:
    """'replica', or 'prefill-pool replica' / 'decode-pool replica' for a pool's."""
    return "replica" if f.role == "aggregated" else f"{f.role}-pool replica"


def _per_role(found: tuple[Failover, ...]) -> str:
    """With pools, the weakest loss of each role: a request needs a prefill and a decode
    replica, so each role must carry the peak on its own after a loss ('' without pools)."""
    roles = list(dict.fromkeys(f.role for f in found))
    if roles == ["aggregated"]:
        return ""
    parts = ", ".join(
        f"{min(f.peak_share_after_loss for f in found if f.role == r):.0%} "
        f"(a {_replica_word(next(f for f in found if f.role == r))})"
        for r in roles
    )
    return f"; by role, the worst loss leaves {parts}"


def token_share_note(lines: tuple[Deployment, ...], classes: tuple[RequestClassPlan, ...]):
    """A warning when some replica carries under TOKEN_SHARE_WARNING of the busiest one's
    tokens/s (input + output): that replica is a token, not real redundancy. Replicas are
    compared within one role (a prefill pool's load is not an aggregated replica's)."""
    for role in dict.fromkeys(d.role for d in lines):
        note = _uneven([d for d in lines if d.role == role], classes)
        if note:
            return note
    return None


def _uneven(lines: list[Deployment], classes: tuple[RequestClassPlan, ...]) -> str | None:
    """The token-share warning for replicas of one role, or None."""
    size = {c.name: c.input_tokens + c.output_tokens for c in classes}
    per = [
        (sum(r * size[n] for n, r in d.load_by_class.items()) / d.replicas, d)
        for d in lines
        if d.replicas
    ]
    if sum(d.replicas for _, d in per) < 2:
        return None
    busiest = max(t for t, _ in per)
    small, line = min(per, key=lambda p: p[0])
    if busiest <= 0 or small >= TOKEN_SHARE_WARNING * busiest:
        return None
    return (
        f"uneven replicas: a {line.gpu} tp {line.tp} replica carries "
        f"{_below(small / busiest, TOKEN_SHARE_WARNING)} of "
        f"the busiest replica's tokens/s (warned below {TOKEN_SHARE_WARNING:.0%}); losing the "
        "busiest loses most of the capacity; constraints.redundancy: n_plus_1 plans a fleet "
        "that survives it"
    )


def _below(share: float, limit: float) -> str:
    """`share` (< `limit`) as a percentage that reads below it: whole percent, else one
    decimal rounded down (19.7% under a 20% limit, where rounding said "20%")."""
    whole = f"{share:.0%}"
    if round(share * 100) < round(limit * 100):
        return whole
    return f"{math.floor(share * 1000) / 10:.1f}%"
