"""`planner estimate --disaggregated`: one prefill pool and one decode pool, estimated together.

The prefill pool has `prefill_workers` workers of `prefill_tp` GPUs, the decode pool
`decode_workers` of `decode_tp` (same GPU type, quant and KV dtype); for an MoE model either
pool's worker may also spread its experts over `*_ep` ranks with `*_dp_attention` attention
ranks (a worker is then tp x dp_attention GPUs, perf/layout.py). Each pool is a row of the
candidate grid evaluated with its role (perf/disagg.py); here the two are combined:

* capacity = min(prefill_workers * R_p, decode_workers * R_d): the smaller pool binds;
* the KV moves over the scale-up link (NVLink) when both pools fit one scale-up domain of one
  node, else over the scale-out network (perf/kv_link.py);
* at the load (an open-loop `rate`, else `utilisation` x capacity), split evenly over each
  pool's workers: TTFT = t_pf + the engine's per-request latency (as an aggregated replica
  pays it) + M/D/1 wait behind other prompts + KV transfer max(t_send, t_recv) + half a
  decode step + M/D/c wait for a decode slot;
* or a closed loop of C clients (`concurrency`, what a benchmark's --max-concurrency runs),
  as `planning.estimate.closed_loop` runs one for an aggregated replica: each decode worker
  has c = min(ceil(C / workers), max_num_seqs, what memory holds) slots; TTFT = t_pf + the
  per-request latency + the wait behind the other C - 1 clients' prompts (M/D/1 per
  prefill worker at their share of the rate X) + the transfer + half a step, where X
  solves Little's law over the clients, X (TTFT(X) + (O - 1) TPOT) = C, below
  min(R_p, R_d); where no X does, the smaller pool is full and holds the rest of the
  clients' cycle: in the prefill queue, or waiting for a decode slot;
* TPOT = the decode step (no prefill interrupts it) at the batch b in flight per decode
  worker, not at its c slots (timed there, more memory or bandwidth read slower): the least
  b that carries the worker's share r of the rate, b >= r (O - 1) TPOT(b) (Little's law) and
  b / (O TPOT(b)) >= r, found by bisection (`estimate.least_batch`), at most c; the
  capacity and the M/D/c slot wait stay at c;
* cost = (prefill GPUs + decode GPUs) x the GPU price, GPUs = workers x GPUs per worker.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from planner.errors import InputError, plain
from planner.inputs.catalog import Catalog
from planner.perf import columns
from planner.perf import queueing as q
from planner.perf.evaluate import evaluate_table
from planner.perf.kv_link import domain_gpus
from planner.planning.estimate import (
    EstimateRequest,
    Row,
    _check_ranges,
    check_context,
    check_used,
    default_max_num_seqs,
    given_options,
    least_batch,
    negligible,
    one_row_grid,
)


@dataclass(frozen=True)
class Pools:
    """The two pools' shapes."""

    prefill_tp: int
    prefill_workers: int
    decode_tp: int
    decode_workers: int
    # MoE layouts of each pool's worker (issue #11): expert-parallel and DP-attention ranks
    prefill_ep: int = 1
    prefill_dp_attention: int = 1
    decode_ep: int = 1
    decode_dp_attention: int = 1

    def layout(self, role: str) -> tuple[int, int, int]:
        """(tp, ep, dp_attention) of one worker of the `role` pool."""
        get = vars(self)
        return get[f"{role}_tp"], get[f"{role}_ep"], get[f"{role}_dp_attention"]


def _pool_row(
    req: EstimateRequest,
    catalog: Catalog,
    role: str,
    pools: Pools,
    batch: int,
    link: str = "scale-out",
) -> Row:
    """One pool's evaluated row, idle (no queueing), its KV over `link`."""
    tp, ep, dp = pools.layout(role)
    where = f"--{role}-tp {tp} --{role}-ep {ep} --{role}-dp-attention {dp}: "
    model, grid = one_row_grid(
        req,
        catalog,
        batch,
        tp,
        where,
        roles=(role,),
        eps=[ep],
        dp_attentions=[dp],
        kv_links=(link,),
    )
    return columns.shortest_floats(evaluate_table(model, grid, req.utilisation, "none").row(0))


def kv_link_for(pools: Pools, catalog: Catalog, gpu_id: str) -> str:
    """scale-up when every worker of both pools fits one scale-up domain of one node (the
    KV then moves over NVLink), else scale-out."""
    per = {r: math.prod(pools.layout(r)[::2]) for r in ("prefill", "decode")}
    total = pools.prefill_workers * per["prefill"] + pools.decode_workers * per["decode"]
    return "scale-up" if total <= domain_gpus(catalog.gpu(gpu_id)) else "scale-out"


def _check_pools(pools: Pools) -> None:
    for name, value in vars(pools).items():
        if not 1 <= value <= 4096:
            option = "--" + name.replace("_", "-")
            raise InputError(f"{option}: must be a whole number from 1 to 4096, got {value}")


def estimate_disaggregated(req: EstimateRequest, pools: Pools, catalog: Catalog) -> dict:
    """TTFT, TPOT, capacity and cost of the two pools at the request's load."""
    _check_ranges(req)
    _check_pools(pools)
    check_used(given_options(req, {"disaggregated": True}))
    model = catalog.model(req.model)
    check_context(model, req.input_len, req.output_len)
    max_num_seqs = req.batch or default_max_num_seqs(req, catalog)
    link = kv_link_for(pools, catalog, req.gpu)  # issue #11: NVLink when both share a node
    pre = _pool_row(req, catalog, "prefill", pools, 1, link)
    dec_at = _decode_rows(req, catalog, pools, link)
    for role, row in (("prefill", pre), ("decode", dec_at(1))):
        _refuse_unfit(req, role, row)
    cap = max(min(max_num_seqs, int(dec_at(1)["max_batch"])), 1)
    if req.concurrency is not None:  # no more in flight per worker than the clients
        cap = max(min(math.ceil(req.concurrency / pools.decode_workers), cap), 1)
    cap_p = pools.prefill_workers * float(pre["requests_per_s"])
    cap_d = pools.decode_workers * float(dec_at(cap)["requests_per_s"])
    if req.concurrency is not None:
        return _closed_loop(req, pools, pre, dec_at, (cap_p, cap_d), (max_num_seqs, cap))
    return _open_loop(req, pools, pre, dec_at, (cap_p, cap_d), (max_num_seqs, cap))


def _decode_rows(
    req: EstimateRequest, catalog: Catalog, pools: Pools, link: str
) -> Callable[[int], Row]:
    """The decode pool's row at a batch, each evaluated once (the bisections ask again)."""
    return functools.cache(lambda batch: _pool_row(req, catalog, "decode", pools, batch, link))


def _refuse_unfit(req: EstimateRequest, role: str, row: Row) -> None:
    """Exit 2 when not one sequence fits a worker of the `role` pool."""
    if bool(row["fits"]):
        return
    raise InputError(
        f"out of memory: {req.model} on {req.gpu} does not fit a {role} worker of "
        f"{int(row['gpus_per_replica'])} GPU(s) at {req.quant}: weights "
        f"{float(row['weights_per_gpu_gb']):.1f} GB per GPU against "
        f"{float(row['memory_usable_gb']):.1f} GB usable (short by "
        f"{float(row['memory_shortfall_gb']):.1f} GB with one sequence); raise "
        f"--{role}-tp (or, for an MoE model, --{role}-ep with --{role}-dp-attention), "
        "try a smaller --quant or a bigger --gpu"
    )


def _holds(row: Row, per_worker: float, output_len: int) -> bool:
    """Whether a decode worker at the row's batch b carries `per_worker` req/s: Little's law
    over a request's O - 1 steps there, b >= rate (O - 1) TPOT(b), and b serves the rate,
    R_d(b) = b / (O TPOT(b)) >= rate (so TPOT is timed at the batch in flight)."""
    b, step = int(row["batch"]), float(row["tpot_step_ms"]) / 1e3
    held = per_worker * (output_len - 1) * step
    return b >= held and float(row["requests_per_s"]) >= per_worker


def _open_loop(
    req: EstimateRequest,
    pools: Pools,
    pre: Row,
    dec_at: Callable[[int], Row],
    caps: tuple[float, float],
    batches: tuple[int, int],
) -> dict:
    """Poisson arrivals at `rate` (else `utilisation` x the smaller pool's capacity), split
    evenly over each pool's workers: M/D/1 behind other prompts; each decode worker holds
    the least batch b that carries its share (`_holds`), of c slots (`batches`:
    max_num_seqs and c, the most it holds), and a request waits M/D/c for one of them."""
    cap_p, cap_d = caps
    seqs, cap = batches
    capacity = min(cap_p, cap_d)
    rate = req.rate if req.rate is not None else req.utilisation * capacity
    if rate >= capacity:
        raise InputError(
            f"--rate {plain(rate)} req/s: at or beyond the pools' capacity of "
            f"{plain(capacity)} req/s (prefill {plain(cap_p)}, decode {plain(cap_d)}); add "
            "workers to the smaller pool"
        )
    per_worker = rate / pools.decode_workers
    b = least_batch(lambda n: _holds(dec_at(n), per_worker, req.output_len), cap)
    dec = dec_at(b)
    share = float(pre["prefill_share_ms"]) / 1e3
    held_s = req.output_len * float(dec["tpot_step_ms"]) / 1e3  # a slot's O steps at batch b
    wait_p = float(q.wait_for_prefill(rate / pools.prefill_workers, share, req.statistic))
    busy = per_worker * held_s / cap  # of the c slots: b / c and below, as R_d(b) >= rate
    slot = float(np.asarray(q.wait_for_slot(cap, busy, held_s, req.statistic)))
    kind, value = ("rate", rate) if req.rate is not None else ("utilization", req.utilisation)
    load = {"kind": kind, kind: value, "batch_in_flight": b, "decode_batch_timed": b}
    load |= {"decode_capacity_batch": cap, "max_num_seqs": seqs}
    return _combined(req, pools, pre, dec, rate, caps, (wait_p, slot), load)


def _closed_loop(
    req: EstimateRequest,
    pools: Pools,
    pre: Row,
    dec_at: Callable[[int], Row],
    caps: tuple[float, float],
    batches: tuple[int, int],
) -> dict:
    """C clients in a closed loop on the two pools (module docstring), each decode worker at
    the least batch b that carries its share of the rate X they send (`_holds`), of at most
    c (`batches`: max_num_seqs and c); X at that batch from `_closed_rate`."""
    seqs, cap = batches
    clients = int(req.concurrency or 1)

    def carries(n: int) -> bool:
        rate = _closed_rate(req, pools, pre, dec_at(n), caps)[0]
        return _holds(dec_at(n), rate / pools.decode_workers, req.output_len)

    b = least_batch(carries, cap)
    rate, waits = _closed_rate(req, pools, pre, dec_at(b), caps)
    load = {"kind": "concurrency", "concurrency": clients, "batch_in_flight": b}
    load |= {"decode_batch_timed": b, "decode_capacity_batch": cap, "max_num_seqs": seqs}
    # the steady state, as `estimate --concurrency` reports it without --num-prompts
    load |= {"num_prompts": None, "first_round_share": 0.0}
    return _combined(req, pools, pre, dec_at(b), rate, caps, waits, load)


def _closed_rate(
    req: EstimateRequest, pools: Pools, pre: Row, dec: Row, caps: tuple[float, float]
) -> tuple[float, tuple[float, float]]:
    """The rate X of C clients with the decode step of `dec`, and the seconds a request waits
    for a prefill worker and a decode slot: X solves Little's law over the clients,
    X (TTFT(X) + (O - 1) TPOT) = C, where the wait behind the other clients' prompts grows
    with X; where no X below the smaller pool's capacity does, that pool saturates and
    holds the rest of the clients' cycle in their TTFT."""
    clients = int(req.concurrency or 1)
    share = float(pre["prefill_share_ms"]) / 1e3
    step = float(dec["tpot_step_ms"]) / 1e3
    slot = 0.0  # a wait for a decode slot only where the decode pool is the full one
    transfer_s = max(float(pre["kv_transfer_ms"]), float(dec["kv_transfer_ms"])) / 1e3
    host_s = float(pre["eff_request_overhead_ms"]) / 1e3  # the per-request latency (#10)
    fixed = float(pre["prefill_ms"]) / 1e3 + host_s + transfer_s + step / 2.0
    decoding = (req.output_len - 1) * step

    def wait(rate: float) -> float:  # behind the other clients' prompts, per prefill worker
        per_worker = rate * (clients - 1) / clients / pools.prefill_workers
        return float(q.wait_for_prefill(per_worker, share, req.statistic))

    top = min(caps)
    lo, hi = 0.0, top * (1 - 1e-9)
    if hi * (fixed + wait(hi) + decoding) <= clients:  # a pool is full: X = its capacity
        rate, wait_p = top, wait(hi)
        held = max(clients / rate - decoding - fixed - wait_p, 0.0)
        if caps[0] <= caps[1]:
            wait_p += held
        else:
            slot += held
    else:
        for _ in range(100):  # X (fixed + wait(X) + decoding) rises with X: bisection
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mid * (fixed + wait(mid) + decoding) < clients else (lo, mid)
        rate, wait_p = lo, wait(lo)
    return rate, (wait_p, slot)


def _combined(
    req: EstimateRequest,
    pools: Pools,
    pre: Row,
    dec: Row,
    rate: float,
    caps: tuple[float, float],
    waits: tuple[float, float],
    load: dict,
) -> dict:
    """The pools' figures at `rate` requests/s, with the seconds a request waits for a
    prefill worker and for a decode slot."""
    cap_p, cap_d = caps
    wait_p, slot = waits
    step = float(dec["tpot_step_ms"]) / 1e3
    b = int(dec["batch"])
    wait_p, slot = negligible(wait_p * 1e3) / 1e3, negligible(slot * 1e3) / 1e3
    transfer = max(float(pre["kv_transfer_ms"]), float(dec["kv_transfer_ms"]))
    host = float(pre["eff_request_overhead_ms"])  # the engine's per-request latency (#10)
    ttft = float(pre["prefill_ms"]) + host + wait_p * 1e3 + transfer + step / 2.0 * 1e3
    ttft += slot * 1e3
    per_p, per_d = int(pre["gpus_per_replica"]), int(dec["gpus_per_replica"])
    gpus = pools.prefill_workers * per_p + pools.decode_workers * per_d
    price = float(pre["price_usd_per_gpu_hour"])
    cost_h = gpus * price if math.isfinite(price) else math.nan
    return {
        "mode": "disaggregated",
        "model": req.model,
        "gpu": req.gpu,
        "quant": req.quant,
        "kv_dtype": str(pre["kv_dtype"]),
        "input_len": req.input_len,
        "output_len": req.output_len,
        **{k: int(v) for k, v in vars(pools).items()},
        "decode_batch": b,  # in flight per decode worker at this load: TPOT's batch
        "decode_max_batch": int(dec["max_batch"]),  # what a decode worker's memory holds
        "prefill_gpus_per_worker": per_p,
        "decode_gpus_per_worker": per_d,
        "gpus": gpus,
        "prefill_ms": float(pre["prefill_ms"]),
        "request_overhead_ms": host,
        "prefill_wait_ms": wait_p * 1e3,
        "kv_transfer_ms": transfer,
        "kv_link": str(pre["kv_link"]),
        "decode_slot_wait_ms": slot * 1e3,
        "ttft_ms": ttft,
        # the time between tokens: none with one output token
        "tpot_ms": step * 1e3 if req.output_len > 1 else math.nan,
        "prefill_capacity_requests_per_s": cap_p,
        "decode_capacity_requests_per_s": cap_d,
        "binding_pool": "prefill" if cap_p <= cap_d else "decode",
        "requests_per_s": rate,
        "output_tok_s": rate * req.output_len,
        "cost_per_hour_usd": cost_h,
        "cost_per_1k_output_tokens_usd": cost_h / (3600.0 * rate * req.output_len) * 1e3,
        "statistic": req.statistic,
        "load": load,
    }


__all__ = ["Pools", "estimate_disaggregated"]
