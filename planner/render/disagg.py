"""Terminal text of `planner estimate --disaggregated` (issue #11)."""

from __future__ import annotations

import math

from planner.errors import plain
from planner.planning.accuracy import ExpectedError, describe
from planner.render.tables import Layout, money, usd, wrap


def _worker(d: dict, role: str) -> str:
    """'3 x tp 4' or, with an MoE layout, '1 x tp 1 ep 8 dp_attention 8 (8 GPUs)'."""
    head = f"{d[role + '_workers']} x tp {d[role + '_tp']}"
    ep, dp = d.get(role + "_ep", 1), d.get(role + "_dp_attention", 1)
    if ep == 1 and dp == 1:
        return head
    return f"{head} ep {ep} dp_attention {dp} ({d[role + '_gpus_per_worker']} GPUs each)"


def _load(d: dict) -> str:
    """What load the figures are at: a closed loop of C clients, an open-loop rate, or a
    share of the pools' capacity; and the decode batch in flight there."""
    load = d.get("load", {})
    kind = load.get("kind")
    per = f"{load.get('batch_in_flight')} in flight per decode worker"
    if kind == "concurrency":
        return f"Load: concurrency {load['concurrency']} (closed loop); {per}"
    if kind == "rate":
        return f"Load: {plain(load['rate'])} req/s (open loop, Poisson); {per}"
    return f"Load: {100 * load.get('utilization', 0):g}% of the pools' capacity; {per}"


def _batch_why(d: dict) -> str:
    """Why a decode worker's slots are below max_num_seqs: its memory, or the clients it
    has (the text said 'batch 42' under --batch 48 with no reason)."""
    load = d.get("load", {})
    c, cap = load.get("decode_capacity_batch", d["decode_batch"]), load.get("max_num_seqs")
    if cap is None or c >= cap:
        return ""
    if c == d.get("decode_max_batch"):
        return f" (what its memory holds; max_num_seqs {cap})"
    return f" (its share of the clients; max_num_seqs {cap})"


def _slots(d: dict) -> str:
    """'87 slots': the most sequences a decode worker holds at once."""
    c = d.get("load", {}).get("decode_capacity_batch", d["decode_batch"])
    return f"{c} slot{'s' * (c != 1)}"


def _join(d: dict) -> float:
    """The TTFT's rest: half a decode step and the wait for a decode slot."""
    known = ("prefill_ms", "request_overhead_ms", "prefill_wait_ms", "kv_transfer_ms")
    return d["ttft_ms"] - sum(d[k] for k in known)


def _tpot(d: dict) -> str:
    """The decode pool's TPOT; none with one output token (no time between tokens)."""
    if not math.isfinite(d["tpot_ms"]):
        return "TPOT n/a (one output token: no time between tokens)"
    return (
        f"TPOT {d['tpot_ms']:.1f} ms (the decode step at the batch in flight, "
        f"{d['decode_batch']}: no prefill interrupts it)"
    )


def _cost(d: dict) -> str:
    """The pools' cost per hour and per 1K output tokens at the load served; no figures
    without a price (it read 'no price, $nan per 1K output tokens')."""
    if not math.isfinite(d["cost_per_hour_usd"]):
        return "Cost: no price in the catalog for this GPU (pass --price)"
    per_1k = d["cost_per_1k_output_tokens_usd"]
    return (
        f"Cost: {money(d['cost_per_hour_usd'])}/h; at the load served {usd(per_1k)} per 1K "
        f"output tokens ({money(per_1k * 1e3)} per 1M)"
    )


# the profiles' records are measured on aggregated serving: the set's disaggregated rows
# are skipped (calibration.aic), so a pool split's own error is not in them
DISAGG_CAVEAT = "; measured on aggregated deployments only (no disaggregated row is in the fit)"


def render_disaggregated(
    d: dict, layout: Layout = Layout(), expected: ExpectedError | None = None, engine: str = ""
) -> str:
    """The two pools, where the TTFT goes, TPOT, which pool binds, the cost and the error the
    prediction likely carries; each line wrapped to the layout's width (100 columns unless
    --wide)."""
    text = "\n".join(
        [
            f"{d['model']} on {d['gpu']} {d['quant']} (KV {d['kv_dtype']}), disaggregated: "
            f"prefill {_worker(d, 'prefill')}, decode "
            f"{_worker(d, 'decode')} with {_slots(d)}{_batch_why(d)}, "
            f"{d['gpus']} GPUs; {d['input_len']:,.0f} in / {d['output_len']:,.0f} out tokens",
            _load(d),
            f"TTFT {d['ttft_ms']:,.0f} ms ({d['statistic']}) = prefill {d['prefill_ms']:,.0f} "
            f"+ per-request latency {d['request_overhead_ms']:,.0f} "
            f"+ wait for prefill {d['prefill_wait_ms']:,.0f} + KV transfer "
            f"{d['kv_transfer_ms']:,.1f} over {d.get('kv_link', 'scale-out')} + join decode and "
            f"slot wait {_join(d):,.1f}",
            _tpot(d),
            f"Capacity: prefill pool {plain(d['prefill_capacity_requests_per_s'])} req/s, "
            f"decode pool {plain(d['decode_capacity_requests_per_s'])} req/s "
            f"({d['binding_pool']} binds); at {plain(d['requests_per_s'])} req/s served, "
            f"{plain(d['output_tok_s'])} output tok/s",
            _cost(d),
            describe(expected, engine) + (DISAGG_CAVEAT if expected is not None else ""),
        ]
    )
    return wrap(text, layout, indent="  ")
