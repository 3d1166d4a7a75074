"""Redundancy that holds: after losing k replicas the rest still carry the peak (n+k).

Added to the steady fleet MIP (planner.fleet.steady) when a scenario asks for it. For every
candidate line c, a failover routing x^c of the demand of c's service must fit the fleet with
line c down k replicas, or down entirely when it has fewer than k (z[c] = 0):

    sum_c' x^c[c',w] = lambda[w]                 w of service(c)     failover_{c}_demand_{w}
    sum_w x^c[c',w] / mu[c',w] <= n[c']          c' != c             failover_{c}_cap_{c'}
    sum_w x^c[c,w] / mu[c,w]   <= n[c] - k z[c]                      failover_{c}_lost
    sum_w x^c[c,w] / mu[c,w]   <= U[c] z[c]                          failover_{c}_gone
    z[c] binary

Since the loads are >= 0, z[c] = 1 forces n[c] >= k; z[c] = 0 drops line c from its failover.
Prefill and decode pools (fleet/disagg.py) do not stand in for each other: only aggregated
and prefill loads count towards lambda[w], and per class, TTFT bucket and KV group the
failover's prefill loads equal its decode loads, so after any loss each role still carries
the peak (a lost decode replica is lost decode capacity, not capacity in general).
A line without replicas loses nothing, so only the used lines' failovers bind:
`solve_failover_as_needed` writes a line's failover once a fleet uses it (issue 16).
For k = 1 this is exact: losing any one replica is losing one of some line. For k >= 2 the
losses may spread over lines: `solve_spread` adds the worst spread loss of each fleet found
as one more failover scenario (lines losing f[c] replicas, or all they have) and re-solves,
until the fleet survives every loss of k (each scenario is a real loss of <= k replicas, so
no fleet that holds is ever cut off).

same_vendor: binaries u[s,v] (service s uses vendor v) and b[c] (line c is used),
n[c] <= U[c] b[c], b[c] <= u[s(c),v(c)], sum_v u[s,v] <= 1.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from planner.errors import SolverError
from planner.fleet import disagg
from planner.fleet.matrix import loads_in_use
from planner.fleet.solver import Model, SolverOptions, solve
from planner.fleet.steady import FleetProblem, FleetSolution, _replica_bound


def services(problem: FleetProblem) -> tuple[np.ndarray, np.ndarray]:
    """The service of each candidate and of each demand column (all 0 for one model)."""
    cand = np.asarray(problem.service or (0,) * problem.n_candidates, dtype=int)
    dem = np.asarray(problem.demand_service or (0,) * len(problem.demand), dtype=int)
    return cand, dem


if TYPE_CHECKING:  # pulp is imported where its rows are added (the resilience report's LPs
    # are arrays, issue 16)
    import pulp


def add_redundancy(lp: pulp.LpProblem, problem: FleetProblem, replicas: list, integer: bool):
    """Add the n+k failover routings, same-vendor and per-service replica floors to `lp`."""
    import pulp

    cat = pulp.LpBinary if integer else pulp.LpContinuous
    cand, dem = services(problem)
    if problem.min_replicas_per_service:
        for s in sorted(set(cand.tolist())):
            mine = [v for v, sv in zip(replicas, cand, strict=True) if sv == s]
            lp += pulp.lpSum(mine) >= problem.min_replicas_per_service, f"min_replicas_s{s}"
    if problem.redundancy:
        written = problem.failover_lines  # None: every line's (`solve_failover_as_needed`)
        lines = range(problem.n_candidates) if written is None else written
        patterns = [((c, problem.redundancy),) for c in lines]
        for i, lost in enumerate([*patterns, *(problem.loss_patterns or ())]):
            _add_failover(lp, problem, replicas, f"f{i}", dict(lost), cand, dem, cat)
    if problem.same_vendor:
        _add_same_vendor(lp, problem, replicas, cand, cat)


def _add_failover(lp, problem: FleetProblem, replicas, tag: str, lost, cand, dem, cat) -> None:
    """Each line c of `lost` loses lost[c] replicas (or all it has: z = 0); the rest of its
    service carry the service's demand. Sound for any fleet: the loss is real and <= k.
    Prefill and decode pools do not stand in for each other: a request needs both, so the
    failover routes pool loads as the fleet MIP does (prefill in = decode out per class,
    TTFT bucket and KV group) and a lost decode replica is lost decode capacity."""
    import pulp

    mu = problem.capacity
    role = disagg.roles_of(problem)
    first = next(iter(lost))
    z = {c: pulp.LpVariable(f"z_survives_{tag}_c{c}", 0, 1, cat=cat) for c in lost}
    peers = np.flatnonzero(cand == cand[first])
    x = _failover_loads(problem, peers, tag)
    for w in np.flatnonzero(dem == cand[first]).tolist():
        served = _serving(x, role, w)
        lp += pulp.lpSum(served) == float(problem.demand[w]), f"failover_{tag}_demand_{w}"
    _add_failover_balance(lp, problem, x, tag)
    for p in peers:
        terms = [(v, 1.0 / float(mu[p, w])) for (w, _), v in x[int(p)].items()]
        used = pulp.LpAffineExpression(terms)
        if p not in lost:
            lp += used <= replicas[p], f"failover_{tag}_cap_{p}"
            continue
        lp += used <= replicas[p] - lost[p] * z[p], f"failover_{tag}_lost_{p}"
        lp += used <= _most_load(problem, int(p), dem) * z[p], f"failover_{tag}_gone_{p}"


def _failover_loads(problem: FleetProblem, peers: np.ndarray, tag: str) -> dict[int, dict]:
    """One failover load per (peer, class) for aggregated peers (bucket -1) and per (pool
    peer, class, TTFT bucket) the fleet MIP admits (`disagg.eligibility`) for pools."""
    import pulp

    mu, role = problem.capacity, disagg.roles_of(problem)
    eligible = disagg.eligibility(problem) if disagg.has_roles(problem) else None
    x: dict[int, dict] = {}
    for p in peers.tolist():
        if role[p] == "aggregated" or eligible is None:
            x[p] = {
                (int(w), -1): pulp.LpVariable(f"y_failover_{tag}_c{p}_w{w}", 0)
                for w in np.flatnonzero(mu[p] > 0)
            }
            continue
        x[p] = {
            (int(w), int(k)): pulp.LpVariable(f"y_failover_{tag}_c{p}_w{w}_k{k}", 0)
            for w, k in zip(*np.nonzero(eligible[p]), strict=True)
        }
    return x


def _serving(x: dict[int, dict], role: np.ndarray, w: int) -> list:
    """The loads that count towards class w's demand: aggregated and prefill, not decode
    (a decode load only carries on what a prefill load took in)."""
    return [
        v for p, row in x.items() if role[p] != "decode" for (ww, _), v in row.items() if ww == w
    ]


def _add_failover_balance(lp, problem: FleetProblem, x: dict[int, dict], tag: str) -> None:
    """The failover's pool balance: per class, TTFT bucket and KV group, the prefill loads
    equal the decode loads (`disagg.add_balance` on the failover routing)."""
    import pulp

    role, group = disagg.roles_of(problem), disagg.groups_of(problem)
    flows: dict[tuple[int, int, str], list] = {}
    for p, row in x.items():
        if role[p] == "aggregated":
            continue
        sign = 1.0 if role[p] == "prefill" else -1.0
        for (w, k), v in row.items():
            flows.setdefault((w, k, str(group[p])), []).append(sign * v)
    for n, (key, terms) in enumerate(sorted(flows.items())):
        w, k, _ = key
        lp += pulp.lpSum(terms) == 0, f"failover_{tag}_pools_w{w}_k{k}_g{n}"


def _most_load(problem: FleetProblem, c: int, dem: np.ndarray) -> float:
    """Replica-units line c would need to carry its whole service alone: a valid, tight
    bound on its failover load (tighter than the replica bound, so the LP sees the spares)."""
    cand, _ = services(problem)
    cols = np.flatnonzero((dem == cand[c]) & (problem.capacity[c] > 0))
    return float(sum(problem.demand[w] / problem.capacity[c, w] for w in cols))


def _add_same_vendor(lp, problem: FleetProblem, replicas, cand, cat) -> None:
    """Each service's replicas all on GPUs of one vendor."""
    import pulp

    vendors = sorted(set(problem.vendor))
    for s in sorted(set(cand.tolist())):
        pick = {
            v: pulp.LpVariable(f"u_vendor_s{s}_{i}", 0, 1, cat=cat) for i, v in enumerate(vendors)
        }
        lp += pulp.lpSum(pick.values()) <= 1, f"same_vendor_s{s}"
        for c in np.flatnonzero(cand == s):
            used = pulp.LpVariable(f"b_used_c{c}", 0, 1, cat=cat)
            lp += replicas[c] <= _replica_bound(problem, int(c)) * used, f"used_{c}"
            lp += used <= pick[problem.vendor[c]], f"vendor_{c}"


def _routable_scale(problem: FleetProblem, replicas: np.ndarray, options: SolverOptions):
    """The largest factor t such that t x the demand fits `replicas` (an LP), or 0. Built as
    arrays (issue 16: PuLP's build and import on every plan's resilience report): column 0 is
    t, then one load per (candidate in use, class it carries) in the order PuLP sorted their
    names (x_c<c>_w<w>) when it built this LP; rows: each class's loads = demand x t, then
    each candidate's loads over its capacities <= its replicas."""
    if disagg.uses_pools(problem, replicas):
        return _routable_scale_pools(problem, replicas, options)
    mu = problem.capacity
    load_c, load_w = loads_in_use(mu, replicas)
    n_classes, n_loads = len(problem.demand), len(load_c)
    used = np.flatnonzero(replicas)
    columns = 1 + np.arange(n_loads)
    rows = np.concatenate([load_w, np.arange(n_classes), n_classes + np.searchsorted(used, load_c)])
    cols = np.concatenate([columns, np.zeros(n_classes, dtype=np.int64), columns])
    values = np.concatenate(
        [np.ones(n_loads), -problem.demand.astype(float), 1 / mu[load_c, load_w]]
    )
    keep = values != 0  # a class without demand has no t term (PuLP leaves zeros out)
    cost = np.zeros(n_loads + 1)
    cost[0] = -1.0  # maximise t
    bounds = replicas[used].astype(float)
    model = Model(
        cost=cost,
        lower=np.zeros(n_loads + 1),
        upper=np.full(n_loads + 1, np.inf),
        integer=np.zeros(n_loads + 1, dtype=bool),
        rows=rows[keep],
        cols=cols[keep],
        values=values[keep],
        row_lower=np.concatenate([np.zeros(n_classes), np.full(len(used), -np.inf)]),
        row_upper=np.concatenate([np.zeros(n_classes), bounds]),
    )
    outcome = solve(model, options)
    if outcome.status != "optimal" or outcome.values is None:
        return 0.0
    return float(outcome.values[0])


def _routable_scale_pools(problem: FleetProblem, replicas: np.ndarray, options: SolverOptions):
    """`_routable_scale` for a fleet with prefill/decode pools: the pool loads balance as in
    the fleet MIP (prefill in = decode out per class, bucket and KV group), so the scale is
    the least over roles of what each carries (a fleet without decode carries nothing)."""
    import pulp

    from planner.fleet.solver import value

    lp = pulp.LpProblem("routable_scale", pulp.LpMaximize)
    t = pulp.LpVariable("t_scale", 0)
    used = np.flatnonzero(replicas)
    x = _failover_loads(problem, used, "scale")
    role = disagg.roles_of(problem)
    lp += t
    for w, demand in enumerate(problem.demand):
        lp += pulp.lpSum(_serving(x, role, w)) == float(demand) * t, f"demand_{w}"
    _add_failover_balance(lp, problem, x, "scale")
    for p, row in x.items():
        terms = [(v, 1.0 / float(problem.capacity[p, w])) for (w, _), v in row.items()]
        lp += pulp.LpAffineExpression(terms) <= int(replicas[p]), f"capacity_{p}"
    if solve(lp, options).status != "optimal":
        return 0.0
    return float(value(t))


def headroom_after_loss(
    problem: FleetProblem, replicas: np.ndarray, options: SolverOptions
) -> dict[int, float]:
    """For each line in use: the share of the peak demand of its service that the fleet
    still carries at planned load after losing one replica of that line (>= 1: it holds)."""
    cand, dem = services(problem)
    out = {}
    for c in np.flatnonzero(replicas):
        one = _service_problem(problem, int(cand[c]), cand, dem)
        mine = np.flatnonzero(cand == cand[c])
        left = replicas[mine].copy()
        left[int(np.flatnonzero(mine == c)[0])] -= 1
        out[int(c)] = _routable_scale(one, left, options)
    return out


def _service_problem(problem: FleetProblem, s: int, cand, dem) -> FleetProblem:
    """The candidates and demand columns of one service only."""
    keep = cand == s
    mine = problem.restricted(keep)
    cols = np.flatnonzero(dem == s)
    part, sla = mine.ttft_part_ms, mine.ttft_sla_ms  # per class too: the pools' TTFT buckets
    return replace(
        mine,
        capacity=mine.capacity[:, cols],
        demand=problem.demand[cols],
        ttft_part_ms=None if part is None else part[:, cols],
        ttft_sla_ms=None if sla is None else sla[cols],
    )


def survives(problem: FleetProblem, replicas: np.ndarray, options: SolverOptions, k: int):
    """Every way of losing k replicas (spread over lines in any way) checked by LP: the
    worst share of the peak any service still carries (brute force; small fleets)."""
    return _worst_loss(problem, replicas, options, k)[0]


def _worst_loss(problem: FleetProblem, replicas: np.ndarray, options: SolverOptions, k: int):
    """(worst share of a service's peak left, the loss pattern {line: replicas} causing it)."""
    cand, dem = services(problem)
    worst: tuple[float, dict[int, int]] = (math.inf, {})
    for s in sorted(set(cand[np.flatnonzero(replicas)].tolist())):
        one = _service_problem(problem, s, cand, dem)
        index = np.flatnonzero(cand == s)
        mine = replicas[index]
        for lost in itertools.combinations_with_replacement(np.flatnonzero(mine).tolist(), k):
            left = mine.copy()
            for c in lost:
                left[c] = max(left[c] - 1, 0)
            share = _routable_scale(one, left, options)
            if share < worst[0]:
                pattern = {int(index[c]): lost.count(c) for c in set(lost)}
                worst = (share, pattern)
    return worst


MAX_LOSS_ROUNDS = 30  # patterns added before giving up (each round adds one loss pattern)


# rounds of `solve_failover_as_needed` before every line's failover is written at once: rag,
# agent, mixed-traffic and chatbot with n_plus_1 settle in 2-3; moe's fleets moved to a new
# line in each of 9 rounds, slower than the whole MIP
FAILOVER_ROUNDS = 4


def solve_failover_as_needed(problem: FleetProblem, options: SolverOptions) -> FleetSolution:
    """n+k with each line's failover written only once a fleet uses that line (issue 16: a
    failover per candidate made rag's n+1 MIP 48,000 rows and 9 s, mixed-traffic's 44 s).

    Exact: a line without replicas loses nothing, and the fleet's own loads route the demand
    without it, so only the used lines' failovers bind. Each round solves with the failovers
    of the lines used so far; a fleet that uses no other line meets every failover, and the
    rounds' MIPs are relaxations of the whole one, so it is optimal for the whole one too
    (its bound theirs). After FAILOVER_ROUNDS rounds every line's failover is written."""
    from planner.fleet.steady import solve_fleet

    lines: set[int] = set()
    seconds = 0.0
    for _ in range(FAILOVER_ROUNDS):
        sol = solve_fleet(replace(problem, failover_lines=tuple(sorted(lines))), options)
        seconds += sol.solve_seconds
        used = set(np.flatnonzero(sol.replicas).tolist())
        if sol.status == "infeasible" or used <= lines:
            return replace(sol, solve_seconds=seconds)
        lines |= used
    every = tuple(range(problem.n_candidates))
    sol = solve_fleet(replace(problem, failover_lines=every), options)
    return replace(sol, solve_seconds=seconds + sol.solve_seconds)


def solve_spread(problem: FleetProblem, options: SolverOptions, lp_path: str | None = None):
    """n+k for k >= 2: solve, find the worst spread loss of the fleet found, add it as a
    failover scenario, re-solve, until the fleet survives every loss of k replicas."""
    from planner.fleet.steady import solve_fleet

    patterns: list[tuple[tuple[int, int], ...]] = []
    for _ in range(MAX_LOSS_ROUNDS):
        current = replace(problem, loss_patterns=tuple(patterns))
        solution = solve_fleet(current, options, lp_path)
        if solution.status == "infeasible":
            return solution
        share, lost = _worst_loss(current, solution.replicas, options, problem.redundancy)
        if share >= 1.0 - 1e-6:
            return solution
        patterns.append(tuple(sorted(lost.items())))
    raise SolverError(
        f"n_plus_{problem.redundancy}: no fleet surviving every spread loss after "
        f"{MAX_LOSS_ROUNDS} rounds; use a smaller k"
    )
