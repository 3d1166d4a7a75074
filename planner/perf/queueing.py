"""Waiting before the first token: request slots as M/D/c, the prefill engine as M/D/1.

A replica with `B` sequence slots serves Poisson arrivals; each request holds a slot for
`T_slot = O * TPOT` and needs `t_pf` of prefill work. Two waits add up before its first token:

* for a free slot: M/D/c with c = B. Erlang C gives the chance of waiting for M/M/c; the
  Allen-Cunneen correction halves the mean for deterministic service (c_s^2 = 0).
* for the prefills ahead of it: M/D/1 on prefill work (Pollaczek-Khinchine).

Each wait is modelled as an atom at zero plus an exponential tail with the exact mean, which
gives percentiles: q_p = theta * ln(P(wait) / (1 - p)) where P(wait) > 1 - p, else 0.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]

EXACT_UP_TO = 4096  # servers: up to here Erlang B runs the recursion from 0, as always
SCALAR_STEPS = 20_000  # recursion steps in all up to which plain floats beat array slices
LOG_TINY = -745.0  # ln of the smallest positive double: below it a probability is 0
DETERMINISTIC_FACTOR = 0.5  # Allen-Cunneen (c_a^2 + c_s^2) / 2 with Poisson arrivals, c_s = 0
STATISTICS = {"mean": None, "p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}


def erlang_c(servers: ArrayLike, utilisation: ArrayLike) -> Array:
    """Probability an arrival waits in M/M/c with c servers each busy a fraction u (a = u c).

    Computed through the stable Erlang-B recursion over the distinct (c, u) pairs only, so a
    grid of a million candidates with a thousand batch sizes costs a thousand steps; beyond
    EXACT_UP_TO servers a window of O(sqrt(c)) steps gives the same value (a batch of ten
    million took minutes one step per server).
    """
    c_all, u_all = np.broadcast_arrays(
        np.asarray(servers, dtype=float), np.asarray(utilisation, dtype=float)
    )
    if np.ndim(utilisation) == 0:  # the common case: one planned utilisation
        keys, inverse = np.unique(c_all.ravel().astype(np.int64), return_inverse=True)
        c, u = keys, np.full(keys.shape, float(np.asarray(utilisation)))
    else:
        pairs, inverse = np.unique((c_all + 1j * u_all).ravel(), return_inverse=True)
        c, u = pairs.real.astype(np.int64), pairs.imag
    a = np.asarray(u * c, dtype=float)
    result = np.zeros(a.shape)
    small = c <= EXACT_UP_TO
    result[small] = _erlang_b_exact(c[small], a[small])
    large = ~small & (u < 1.0)  # at u >= 1 every arrival waits: no recursion needed
    result[large] = _erlang_b_window(c[large], a[large])
    with np.errstate(divide="ignore", invalid="ignore"):
        wait_prob = c * result / (c - a * (1.0 - result))
    unique_result = np.where(u < 1.0, np.clip(wait_prob, 0.0, 1.0), 1.0)
    return unique_result[inverse.ravel()].reshape(c_all.shape)


def _erlang_b_exact(c: NDArray[np.int64], a: Array) -> Array:
    """Erlang B by the stable recursion B(n) = a B(n-1) / (n + a B(n-1)) from B(0) = 1:
    in plain floats when the steps are few (a plan's batch sizes), else as arrays."""
    if int(c.sum()) <= SCALAR_STEPS:
        return _erlang_b_scalar(c, a)
    return _erlang_b_arrays(c, a)


def _erlang_b_scalar(c: NDArray[np.int64], a: Array) -> Array:
    """The recursion one pair at a time in Python floats: the same IEEE operations as the
    array recursion, bit for bit, without numpy calls per step (18 batch sizes are 3,000
    float steps instead of 1,024 rounds of array slices, issue #16)."""
    result = np.zeros(a.shape)
    for i, (servers, load) in enumerate(zip(c.tolist(), a.tolist(), strict=True)):
        if servers <= 0:
            continue  # c = 0: no step, 0 as in the array recursion
        erlang_b = 1.0
        for n in range(1, servers + 1):
            erlang_b = load * erlang_b / (n + load * erlang_b)
        result[i] = erlang_b
    return result


def _erlang_b_arrays(c: NDArray[np.int64], a: Array) -> Array:
    """The recursion one step per server up to the largest c (the pairs share the steps).
    Pairs are taken in order of c and a pair leaves the steps at its own c, so a step costs a
    few array slices, not a mask over every pair (a grid evaluated in slices runs this once a
    slice, #16)."""
    order = np.argsort(c, kind="stable")
    a_sorted = a[order]
    n_max = int(c.max(initial=0))
    done = np.searchsorted(c[order], np.arange(n_max + 1), side="right")  # pairs with c <= n
    erlang_b = np.ones(a.shape)
    result = np.zeros(a.shape)
    lo = int(done[0])  # c = 0: no step, 0 as before
    for n in range(1, n_max + 1):
        live = a_sorted[lo:]
        erlang_b[lo:] = live * erlang_b[lo:] / (n + live * erlang_b[lo:])
        hi = int(done[n])
        if hi > lo:
            result[order[lo:hi]] = erlang_b[lo:hi]
            lo = hi
    return result


def _erlang_b_window(c: NDArray[np.int64], a: Array) -> Array:
    """Erlang B for many servers in O(sqrt(a)) steps instead of O(c).

    B(c) <= 2 Poisson(c; a) for c >= a, so where that bound underflows B is 0. Elsewhere the
    recursion starts at n0 = a - 12 sqrt(a) - 12 from the fluid value 1 - n0/a: each step
    multiplies the start's error by about n/a < 1 (a contraction), so after the window it is
    below 1e-30 and the result matches the recursion from 0 to double precision.
    """
    if c.size == 0:
        return np.zeros(0)
    cf = c.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):  # a = 0: no load, B = 0
        ln_pmf = cf * np.log(a) - a - np.array([math.lgamma(x + 1.0) for x in cf])
        negligible = (cf >= a) & (ln_pmf + math.log(2.0) < LOG_TINY)
        start = np.maximum(np.floor(a - 12.0 * np.sqrt(a) - 12.0), 0.0)
        start = np.where(negligible, cf, np.minimum(start, cf))
        erlang_b = np.where(start > 0, 1.0 - start / np.maximum(a, 1e-300), 1.0)
    steps = (cf - start).astype(np.int64)
    for k in range(1, int(steps.max(initial=0)) + 1):
        n = start + k
        erlang_b = np.where(k <= steps, a * erlang_b / (n + a * erlang_b), erlang_b)
    return np.where(negligible, 0.0, erlang_b)


def _quantile(p_wait: Array, theta: Array, prob: float | None) -> Array:
    """Mean (prob None) or quantile of an atom-at-zero + exponential-tail wait."""
    if prob is None:
        return p_wait * theta
    tail = 1.0 - prob
    with np.errstate(divide="ignore", invalid="ignore"):
        q = theta * np.log(np.maximum(p_wait, 1e-300) / tail)
    return np.where(p_wait > tail, q, 0.0)


def wait_for_slot(
    batch: ArrayLike, utilisation: ArrayLike, slot_time_s: ArrayLike, statistic: str = "mean"
) -> Array:
    """Seconds an arrival waits for a free sequence slot (M/D/c, c = batch, load = u * c)."""
    c = np.asarray(batch, dtype=float)
    a = np.asarray(utilisation, dtype=float) * c
    p_wait = erlang_c(c, utilisation)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = DETERMINISTIC_FACTOR * np.asarray(slot_time_s, float) / (c - a)
    out = _quantile(p_wait, theta, STATISTICS[statistic])
    return np.where(a < c, out, np.inf)


def wait_for_prefill(
    arrival_rate: ArrayLike, prefill_s: ArrayLike, statistic: str = "mean"
) -> Array:
    """Seconds an arrival waits behind other prefills (M/D/1, Pollaczek-Khinchine mean)."""
    t = np.asarray(prefill_s, dtype=float)
    rho = np.asarray(arrival_rate, float) * t
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = t / (2.0 * (1.0 - rho))
    out = _quantile(rho, theta, STATISTICS[statistic])
    return np.where(rho < 1.0, out, np.inf)
