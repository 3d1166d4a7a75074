"""Disaggregated prefill/decode (issue #11): what a prefill pool and a decode pool deliver.

A disaggregated fleet runs prompts on prefill workers and generation on decode workers; each
request's KV cache crosses the scale-out network between them. Rows of the candidate grid with
`role` prefill or decode are evaluated by the aggregated model first (`evaluate`), then their
serving columns are replaced here:

* prefill pool: one prompt at a time through chunked passes, rate `R_p = 1 / t_pf_share`
  (no decode steps to share the GPU with); its part of the TTFT is the prefill itself, the
  M/D/1 wait behind other prompts and the time to push the request's KV out of its NICs:
  `t_send = KV(I) / (min(tp, h_kv) * B_scaleout)` (each tensor-parallel rank sends its own
  KV shard over its own NIC). TPOT does not apply (NaN).
* decode pool: the decode step with no prefill interruption, `TPOT = TPOT(B)`, rate
  `R_d = B / (O * TPOT(B))`; its part of the TTFT is the wait for a sequence slot, the join at
  the next step (half a step on average) and the time to pull the KV in through its own NICs,
  `t_recv = KV(I) / (min(tp, h_kv) * B_scaleout)`.
* `kv_link` scale-up (both pools in one NVLink domain, perf/kv_link.py): the same formulas
  with the per-GPU scale-up bandwidth in place of B_scaleout.

The transfer really takes `max(t_send, t_recv)`; the two pools are sized independently by the
fleet MIP, so each side counts its own NIC time and the sum (>= the max) keeps every pairing of
a prefill and a decode candidate within the TTFT bound. No transfer-efficiency factor or
layer-wise overlap with the prefill is applied: physics only, not calibrated.
"""

from __future__ import annotations

import numpy as np

from planner.perf import kv_link
from planner.perf import memory as mem
from planner.perf import queueing as q
from planner.perf.table import Frame, mapped, values
from planner.schema.model import Model
from planner.schema.quant import KV_BYTES


def _col(df: Frame, name: str) -> np.ndarray:
    return values(df, name, float)


def kv_transfer_s(
    model: Model, input_len: np.ndarray, kv_bytes: np.ndarray, tp: np.ndarray, link: np.ndarray
) -> np.ndarray:
    """Seconds one pool's NICs need to move one request's KV cache (I tokens, all layers):
    the distinct KV shards (min(tp, h_kv); MLA: 1) go in parallel, one NIC per GPU."""
    total = mem.bytes_kv_cache_per_sequence(model, input_len, kv_bytes)
    return total / (mem.kv_split(model, tp) * link)


def apply_roles(model: Model, df: Frame, out: dict, utilisation: float, statistic: str) -> None:
    """Overwrite the serving columns of prefill and decode rows (aggregated rows untouched)
    and add `kv_transfer_ms` (0 on aggregated rows)."""
    role = values(df, "role")
    pre, dec = role == "prefill", role == "decode"
    out["kv_transfer_ms"] = np.zeros(len(df))
    if not (pre.any() or dec.any()):
        return
    kv_b = mapped(df, "kv_dtype", KV_BYTES)
    link = kv_link.link_bytes_per_s(df)  # scale-up within one domain, else scale-out
    xfer = kv_transfer_s(model, _col(df, "input_len"), kv_b, _col(df, "tp"), link)
    out["kv_transfer_ms"] = np.where(pre | dec, xfer * 1e3, 0.0)
    step, t_pf, t_share = out["_step_s"], out["_prefill_s"], out["_prefill_share_s"]
    batch, o_len = _col(df, "batch"), _col(df, "output_len")
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(pre, 1.0 / t_share, np.where(dec, batch / (o_len * step), np.nan))
    load = utilisation * rate
    if statistic == "none":
        wait_pre = wait_dec = np.zeros(len(df))
    else:
        wait_pre = q.wait_for_prefill(load, t_share, statistic)
        wait_dec = q.wait_for_slot(batch, utilisation, o_len * step, statistic)
    # the engine's per-request latency (#10, `eff_request_overhead_ms`: tokenising, scheduling,
    # the first token's return) is paid once, where the request enters: on the prefill side
    host = _col(df, "eff_request_overhead_ms") * 1e-3
    idle = np.where(pre, t_pf + xfer + host, step / 2.0 + xfer)
    ttft = idle + np.where(pre, wait_pre, wait_dec)
    _overwrite(out, pre | dec, pre, dec, step, rate, load, idle, ttft, df)


def _overwrite(
    out: dict,
    mask: np.ndarray,
    pre: np.ndarray,
    dec: np.ndarray,
    step: np.ndarray,
    rate: np.ndarray,
    load: np.ndarray,
    idle: np.ndarray,
    ttft: np.ndarray,
    df: Frame,
) -> None:
    """Write the role rows' rate, TPOT, TTFT and cost columns in place."""
    i_len, o_len = _col(df, "input_len"), _col(df, "output_len")
    cost_h = out["cost_per_hour_usd"]
    with np.errstate(divide="ignore", invalid="ignore"):
        values = {
            "tpot_ms": np.where(dec, step * 1e3, np.nan),
            "ttft_ms": ttft * 1e3,
            "ttft_unloaded_ms": idle * 1e3,
            "requests_per_s": rate,
            "capacity_requests_per_s": load,
            "throughput_tok_s": np.where(dec, rate * o_len, 0.0),
            "total_tok_s": np.where(pre, rate * i_len, rate * o_len),
            "cost_per_request_usd": cost_h / (3600.0 * load),
            "cost_per_1k_output_tokens_usd": cost_h / (3600.0 * load * o_len) * 1e3,
        }
    for name, value in values.items():
        out[name] = np.where(mask, value, out[name])


def ttft_ms_at_roles(rows: Frame, ttft_ms: np.ndarray, utilisation: float, statistic: str):
    """`evaluate.ttft_ms_at` for prefill and decode rows: their own queue at `statistic`."""
    role = values(rows, "role")
    pre, dec = role == "prefill", role == "decode"
    if not (pre.any() or dec.any()):
        return ttft_ms
    load = _col(rows, "capacity_requests_per_s")
    wait_pre = q.wait_for_prefill(load, _col(rows, "prefill_share_ms") / 1e3, statistic)
    slot = _col(rows, "output_len") * _col(rows, "tpot_step_ms") / 1e3
    wait_dec = q.wait_for_slot(_col(rows, "batch"), utilisation, slot, statistic)
    wait = np.where(pre, wait_pre, wait_dec)
    return np.where(pre | dec, _col(rows, "ttft_unloaded_ms") + wait * 1e3, ttft_ms)
