"""Candidates no cost-optimal fleet needs, across GPU types (issue 16: the break-even MIPs and
the single-GPU-type comparison spent their time branching over them).

Candidate a is *replaceable* by candidate b when some whole number k >= 1 of b's replicas does
everything one of a's does, for no more money:

    same role and KV balance group, b may join every flow bucket a may (pools),
    k * capacity[b, w] >= capacity[a, w] for every class w, and k * cost[b] <= cost[a];
    and if b's GPU type has an inventory limit (or the problem a GPU cap), b is of a's GPU
    type with k * gpus[b] <= gpus[a].

Then any fleet using a has a fleet no dearer without it: move a's loads onto b's variables of
the same class and bucket (they exist, b being eligible wherever a is), and add k replicas of
b for each of a's. The demand and pool-balance rows see the same flows in the same group; b's
capacity row gains sum_w x[a,w] / capacity[b,w] <= k sum_w x[a,w] / capacity[a,w] <= k n[a];
the replica count (the redundancy floor) does not fall; the GPUs used of a limited type do not
rise; the cost does not rise. Each replica bound (`steady._replica_bound`) is safe for the
problem with or without a, since an optimum keeps no replica beyond its loads and the floor.
So dropping every strictly replaceable candidate (and all but the first of identical ones)
leaves the least cost unchanged: strict replacement is acyclic (a chain back to a would need
k = 1 and equality everywhere), and it composes (k then k' copies: k k'), so every dropped
candidate is replaceable by a kept one. It is a statement about the cost alone: among fleets
of equal cost, the per-GPU tie-break of the MIP may pick another one.

Only for problems without redundancy that holds, vendors or services (their rows count
particular candidates); those are returned whole.

The fleet MIP itself (`steady.solve_fleet`) adds a per-GPU tie-break to the cost. There a
candidate is dropped only when its replacement also uses no more GPUs (k * gpus[b] <=
gpus[a]), so the tie-broken objective does not rise either, and only strictly: identical
candidates all stay, and fall between themselves as the whole model would order them.
"""

from __future__ import annotations

import numpy as np

from planner.fleet import disagg
from planner.fleet.steady import FleetProblem
from planner.perf.table import Coded

MAX_COPIES = 64  # a replacement by more copies than this is not looked for (k is exact below)


def supported(problem: FleetProblem) -> bool:
    """Whether the exchange argument holds: no rows that name particular candidates."""
    return not problem.names_candidates


BLOCK = 256  # candidates a at a time against every b: n x BLOCK x classes x buckets in memory


def copies_needed(need: np.ndarray, have: np.ndarray) -> np.ndarray:
    """k[a, b]: the fewest replicas of b (capacity rows `have`) that carry one replica of a's
    capacity (rows `need`) on every class (inf where b lacks a class a serves, or more than
    MAX_COPIES are needed)."""
    return pair_copies(need[:, None, :], have[None, :, :])


def pair_copies(need: np.ndarray, have: np.ndarray) -> np.ndarray:
    """`copies_needed` on capacity rows already paired (classes on the last axis, the rest
    broadcast): the fewest copies of `have` that carry `need`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(need > 0, need / np.where(have > 0, have, np.nan), 0.0)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    k = np.maximum(np.ceil(ratio.max(axis=-1, initial=0.0)), 1.0)
    # the division rounds: where k copies fall an ulp short, k + 1 (the test itself is exact)
    with np.errstate(invalid="ignore"):
        short = ~(k[..., None] * have >= need).all(axis=-1)
    k = np.where(short, k + 1, k)
    return np.where(k <= MAX_COPIES, k, np.inf)


class _Facts:
    """Per candidate, what replacement compares (the module docstring)."""

    def __init__(self, problem: FleetProblem, gpus_too: bool = False) -> None:
        n = problem.n_candidates
        self.gpus_too = gpus_too  # the replacement uses no more GPUs either (the tie-break)
        self.cost = np.asarray(problem.cost_per_hour, dtype=float)
        self.gpus = np.asarray(problem.tp, dtype=float)
        self.capacity = np.asarray(problem.capacity, dtype=float)
        # role, balance group and GPU type as codes: pairs compare integers, not strings
        self.role = Coded.of(disagg.roles_of(problem)).codes
        self.group = Coded.of(disagg.groups_of(problem)).codes
        # each candidate's flow buckets as a pattern code, and which pattern covers which
        # (a dozen distinct patterns among hundreds of candidates): covers[p, q] = q ⊇ p
        flows = disagg.eligibility(problem).reshape(n, -1)
        patterns, code = np.unique(flows, axis=0, return_inverse=True)
        self.flow_pattern = code.reshape(-1)
        self.covers = np.asarray((patterns[None, :, :] >= patterns[:, None, :]).all(axis=2))
        gpu = np.asarray(problem.gpu, dtype=object)
        self.gpu = Coded.of(gpu).codes
        self.limited = np.array([g in problem.inventory for g in gpu.tolist()], dtype=bool)
        if problem.max_gpus is not None:
            self.limited[:] = True

    def replaceable(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """R[i, j]: candidate a[i] is replaceable by copies of candidate b[j]. The tests that
        need no copy count run on every pair; the copies only on the pairs left (issue 16:
        the whole n x n x classes division was 14 of mixed-traffic's 23 ms on 403)."""
        ok = (self.role[a][:, None] == self.role[b][None, :]) & (
            self.group[a][:, None] == self.group[b][None, :]
        )
        # b joins every flow bucket a joins
        ok &= self.covers[self.flow_pattern[a][:, None], self.flow_pattern[b][None, :]]
        # k >= 1: b costs no more than a (and with the tie-break uses no more GPUs)
        ok &= self.cost[b][None, :] <= self.cost[a][:, None]
        if self.gpus_too:
            ok &= self.gpus[b][None, :] <= self.gpus[a][:, None]
        ok &= a[:, None] != b[None, :]
        i, j = np.nonzero(ok)
        ai, bj = a[i], b[j]
        k = pair_copies(self.capacity[ai], self.capacity[bj])
        with np.errstate(invalid="ignore"):
            good = k * self.cost[bj] <= self.cost[ai]  # exact: stays acyclic
            fewer = k * self.gpus[bj] <= self.gpus[ai]
        good &= ~self.limited[bj] | ((self.gpu[ai] == self.gpu[bj]) & fewer)
        if self.gpus_too:
            good &= fewer
        out = np.zeros(ok.shape, dtype=bool)
        out[i[good], j[good]] = True
        return out


def replaceable(problem: FleetProblem, tie_break: bool = False) -> np.ndarray:
    """The n x n matrix R[a, b]: a is replaceable by copies of b (the module docstring)."""
    every = np.arange(problem.n_candidates)
    return _Facts(problem, gpus_too=tie_break).replaceable(every, every)


def undominated(problem: FleetProblem, tie_break: bool = False) -> np.ndarray:
    """Which candidates to keep: all but those strictly replaceable by another, and but the
    later of identical ones (each replaceable by the other: the same cost, capacity and
    flows). With `tie_break` (the fleet MIP's objective), replacements that use no more GPUs
    only, and identical ones all kept. Computed BLOCK candidates at a time, so memory stays
    linear in the candidates."""
    n = problem.n_candidates
    if n == 0 or not supported(problem):
        return np.ones(n, dtype=bool)
    facts, every = _Facts(problem, gpus_too=tie_break), np.arange(n)
    dropped = np.zeros(n, dtype=bool)
    block = n if n <= 2 * BLOCK else BLOCK  # a few hundred: the whole matrix at once
    for start in range(0, n, block):
        a = every[start : start + block]
        r = facts.replaceable(a, every)
        back = r if len(a) == n else facts.replaceable(every, a)  # [j, i]: every[j] by a[i]
        mutual = r & back.T
        later = a[:, None] > every[None, :]
        dropped[a] = (r & ~mutual).any(axis=1)
        if not tie_break:
            dropped[a] |= (mutual & later).any(axis=1)
    return ~dropped
