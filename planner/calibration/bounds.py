"""Hardware bounds that a measured closed-loop row must respect (issue #10, vLLM forensics).

These bounds need no efficiency constant, only the catalog's peaks and memory:

* **Compute.** Every prompt and output token runs through the linear layers: a request costs
  at least 2 x (active matmul parameters) x (ISL + OSL) FLOPs (attention, norms and the
  sampler only add to it). A closed loop of C clients completes C requests per request
  latency, TTFT + (OSL - 1) x TPOT, so the GPUs must sustain C x that / latency.
  `compute_share` is that rate over the stage's dense peak for the checkpoint's math.
  The fastest Hopper FP8 GEMM published is DeepGEMM's, up to 1550 TFLOPS on an H800
  (github.com/deepseek-ai/DeepGEMM README, read 2026-12-01), 78% of the 1979 TFLOPS dense
  peak, for one large GEMM alone; a whole served request needing more than
  `MAX_COMPUTE_SHARE` of the peak did not compute the prompts it states (cached prefixes,
  shorter prompts). Every row of such a campaign (source, engine, model, GPU, quant) is
  skipped with `BEYOND_COMPUTE_REASON`: one harness, one setting, which rows it spared
  cannot be told.
* **Memory (dense models).** A decode step reads every weight of the stage once and the KV
  of every sequence in decode, each holding at least ISL tokens; by Little's law
  C x (OSL - 1) x TPOT / latency sequences are in decode on average. `tpot_floor_ms` is
  those bytes over the HBM peak. A campaign whose measured TPOT is below the floor at the
  KV dtype assumed (the quant's default, vLLM's `kv_cache_dtype auto`) but not at FP8 ran an
  FP8 KV cache, which the aic set does not publish: `infer_fp8_kv` maps it so.
* **Memory capacity (dense models, engines that never evict).** TensorRT-LLM's default
  capacity scheduler, GUARANTEED_NO_EVICT, admits a request only when its KV fits to the end
  and never pauses it, so the sequences in decode hold their KV at once: a GPU holds its share
  of the weights and of that KV (split over the KV heads tensor parallelism divides).
  `memory_floor_bytes` is that sum; above the device's memory the engine cannot have run the
  sequences the row's latencies say it ran, so a campaign with a row above it at the assumed
  KV dtype and within it at FP8 ran an FP8 KV cache too (session 38: TensorRT-LLM 1.0.0rc3
  ran 64 Qwen3-32B clients of 4096 + 128 tokens on one H100 without a queue, 96 GB at BF16 KV
  on an 85.5 GB card). vLLM and SGLang preempt a running sequence when KV runs out, so a
  latency there does not say its KV was held throughout: the bound is not applied to them.
* **A prompt's cost in the decode loop.** Where an engine runs other requests' prefills in
  the decode steps, a closed loop's TPOT is the step plus (C - 1) prompts per O - 1 steps
  (`perf.roofline.tpot_with_prefill`), so two rows of one campaign at the same tp, ISL and C
  and output lengths O1 < O2 differ by (C - 1) t_pf (1 / (O1 - 1) - 1 / (O2 - 1)) whatever
  the step. `prefill_peak_share` turns that t_pf into the share of a dtype's dense peak the
  prompt's linear layers need per GPU; above `MAX_COMPUTE_SHARE` of the 16-bit peak, the
  math did not run in 16 bits, if the prompts landed in the decode steps: prompts arriving
  together as a wave land in TTFT instead and make the share read high, and any other cost
  each arrival puts on the running batch reads as prompt cost, so it is evidence to weigh,
  not a rule applied (`aic.AIC_WEIGHTS_INFERRED`, session 38).
* **Fewer sequences held than the engine's defaults give.** Little's law on a closed loop's
  latencies says how many sequences were in decode; where that is under half of what the
  engine's default memory budget holds for C clients (`max_batch`, the prediction's) and the
  TTFT is over twice the prediction, its clients waited for slots the run did not have: a
  lower memory fraction, a sequence cap or memory in other use than the defaults the
  prediction assumes (`held_fewer_than_budget`; `planner validate` says so on the row;
  session 44: SGLang 0.5.8.post1's six tp-1 Qwen3-32B rows put 2-5 of 16 clients in decode
  where the default budget holds 9-20).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.inputs.catalog import Catalog
from planner.schema.model import Model
from planner.schema.quant import KV_BYTES

# TensorRT-LLM's default CapacitySchedulerPolicy.GUARANTEED_NO_EVICT ("guarantee that a
# started request is never paused", nvidia.github.io/TensorRT-LLM performance-tuning-guide
# useful-runtime-flags, read 2026-12-05); vLLM and SGLang preempt under KV pressure
NEVER_EVICTS: frozenset[str] = frozenset({"trtllm"})
MAX_COMPUTE_SHARE = 0.8  # DeepGEMM's best Hopper FP8 GEMM is 78% of the dense peak
CAMPAIGN_KEY: tuple[str, ...] = ("source_key", "engine", "model_id", "gpu_id", "quant_id")
BEYOND_COMPUTE_REASON = (
    "campaign beyond the GPU's compute: a row needs more than 80% of the dense peak in "
    "linear-layer FLOPs alone (2 x active matmul params x (ISL + OSL) x C / request latency; "
    "the best published Hopper FP8 GEMM, DeepGEMM, reaches 78%), so its prompts were not all "
    "computed (prefix cache hits or shorter prompts than stated)"
)
FP8_KV_NOTE = (
    "KV dtype inferred FP8: a row of the campaign measured TPOT below the HBM floor of its "
    "weights and ISL-long KV at the quant's default KV dtype (bounds.tpot_floor_ms)"
)
FP8_KV_CAPACITY_NOTE = (
    "KV dtype inferred FP8: a row of the campaign had more sequences in decode (Little's law "
    "on its measured latencies) than a GPU holds beside its weights at the assumed KV dtype, "
    "and not at FP8 (bounds.memory_floor_bytes)"
)


def _latency_ms(rows: pd.DataFrame) -> np.ndarray:
    """Measured request latency of a closed-loop row: TTFT + (OSL - 1) x TPOT."""
    osl = rows["output_len"].to_numpy(dtype=float)
    return rows["meas_ttft"].to_numpy(dtype=float) + (osl - 1.0) * rows["meas_tpot"].to_numpy(
        dtype=float
    )


def _stage_gpus(rows: pd.DataFrame) -> np.ndarray:
    dp = rows["dp_attention"] if "dp_attention" in rows else pd.Series(1.0, index=rows.index)
    return rows["tp"].to_numpy(dtype=float) * dp.fillna(1.0).to_numpy(dtype=float)


def compute_share(rows: pd.DataFrame, catalog: Catalog) -> np.ndarray:
    """Lower bound of the dense-peak share each closed-loop row's measured rate needs."""
    flops, peak = np.empty(len(rows)), np.empty(len(rows))
    for i, (m, g, q) in enumerate(
        zip(rows["model_id"], rows["gpu_id"], rows["quant_id"], strict=True)
    ):
        model, gpu = catalog.model(m), catalog.gpu(g)
        flops[i] = 2.0 * model.params_active_matmul
        dtype = next(d for d in catalog.quants[q].compute_dtypes if d in gpu.dense_tflops)
        peak[i] = gpu.dense_tflops[dtype] * 1e12
    tokens = rows["input_len"].to_numpy(dtype=float) + rows["output_len"].to_numpy(dtype=float)
    rate = rows["batch"].to_numpy(dtype=float) * flops * tokens / (_latency_ms(rows) / 1e3)
    return rate / (_stage_gpus(rows) * peak)


def sequences_in_decode(rows: pd.DataFrame) -> np.ndarray:
    """Sequences in decode on average in a closed loop of C clients (Little's law on the
    measured latencies): C x (OSL - 1) x TPOT / request latency."""
    osl = rows["output_len"].to_numpy(dtype=float)
    tpot = rows["meas_tpot"].to_numpy(dtype=float)
    return rows["batch"].to_numpy(dtype=float) * (osl - 1.0) * tpot / _latency_ms(rows)


# a closed loop held "fewer than the defaults" when Little's law puts under this share of the
# sequences the default budget holds in decode while its TTFT is over this many predictions
HELD_SHARE_FLOOR = 0.5
TTFT_OVER_PREDICTION = 2.0


def held_fewer_than_budget(pred: pd.DataFrame) -> np.ndarray:
    """Predicted closed-loop rows (`calibration.predict`'s output) whose measured latencies
    put fewer sequences in decode than half of min(C, the default budget's max_batch), with a
    TTFT over twice the prediction: the run held fewer sequences than its engine's defaults
    give. False where a metric is missing or the row is not a closed loop."""
    closed = (pred["scenario_kind"] == "closed_loop").to_numpy()
    held = np.minimum(pred["batch"].to_numpy(dtype=float), pred["max_batch"].to_numpy(dtype=float))
    with np.errstate(invalid="ignore", divide="ignore"):
        short = sequences_in_decode(pred) < HELD_SHARE_FLOOR * held
        slow = pred["meas_ttft"].to_numpy(dtype=float) > TTFT_OVER_PREDICTION * pred[
            "pred_ttft"
        ].to_numpy(dtype=float)
    return closed & short & slow


def _dense_bytes(model: Model, weight_bytes_per_param: float, kv_dtype: str) -> tuple[float, float]:
    """A dense model's weight bytes (the embedding table is a lookup, not read) and its KV
    bytes per token over all layers at `kv_dtype`."""
    weights = (model.params_total - model.params_embedding) * weight_bytes_per_param
    per_layer = model.kv_elements_per_token_per_layer * KV_BYTES[kv_dtype]
    return weights, per_layer * model.num_hidden_layers


def tpot_floor_ms(rows: pd.DataFrame, catalog: Catalog, kv_dtype: str | None = None) -> np.ndarray:
    """HBM floor of each dense row's decode step (NaN for MoE): weights over the stage plus
    the KV of the sequences in decode at ISL tokens, at `kv_dtype` (default: the row's)."""
    out = np.full(len(rows), np.nan)
    in_decode = sequences_in_decode(rows)
    kvs = rows["kv_dtype"] if kv_dtype is None else pd.Series(kv_dtype, index=rows.index)
    cols = zip(
        rows["model_id"], rows["gpu_id"], rows["quant_id"], kvs, rows["input_len"], strict=True
    )
    for i, (m, g, q, kv, isl) in enumerate(cols):
        model = catalog.model(m)
        if model.moe is not None:
            continue
        weights, kv_token = _dense_bytes(model, catalog.quants[q].weight_bytes_per_param, kv)
        step = weights + in_decode[i] * isl * kv_token
        out[i] = step / (catalog.gpu(g).hbm_bandwidth_gb_per_s * 1e9) * 1e3
    return out / rows["tp"].to_numpy(dtype=float)


def memory_floor_bytes(
    rows: pd.DataFrame, catalog: Catalog, kv_dtype: str | None = None
) -> np.ndarray:
    """Bytes a GPU of each dense row's stage holds at least (NaN for MoE): its share of the
    weights plus its share of the KV of the sequences in decode at ISL tokens, at `kv_dtype`
    (default: the row's). Tensor parallelism splits KV over at most the model's KV heads."""
    out = np.full(len(rows), np.nan)
    in_decode = sequences_in_decode(rows)
    kvs = rows["kv_dtype"] if kv_dtype is None else pd.Series(kv_dtype, index=rows.index)
    cols = zip(rows["model_id"], rows["quant_id"], kvs, rows["input_len"], rows["tp"], strict=True)
    for i, (m, q, kv, isl, tp) in enumerate(cols):
        model = catalog.model(m)
        if model.moe is not None:
            continue
        weights, kv_token = _dense_bytes(model, catalog.quants[q].weight_bytes_per_param, kv)
        kv_split = min(float(tp), float(model.kv_heads_splittable))
        out[i] = weights / float(tp) + in_decode[i] * float(isl) * kv_token / kv_split
    return out


def prefill_peak_share(rows: pd.DataFrame, catalog: Catalog, dtype: str) -> pd.DataFrame:
    """Per group of closed-loop rows (CAMPAIGN_KEY, tp, ISL, C >= 8) measured at two or more
    output lengths: the prompt's cost t_pf (ms) in the decode loop from the shortest and the
    longest (module docstring), and its linear-layer FLOPs per GPU over `dtype`'s dense peak
    (columns `t_pf_ms`, `peak_share`)."""
    keys = [*CAMPAIGN_KEY, "tp", "input_len", "batch"]
    part = rows[_candidates(rows) & (rows["batch"] >= 8)]
    out = []
    for key, group in part.groupby(keys, sort=True):
        by_osl = group.groupby("output_len")["meas_tpot"].median()
        if len(by_osl) < 2:
            continue
        (o1, t1), (o2, t2) = (by_osl.index[0], by_osl.iloc[0]), (by_osl.index[-1], by_osl.iloc[-1])
        c = float(key[-1])
        t_pf = (t1 - t2) / ((c - 1.0) * (1.0 / (o1 - 1.0) - 1.0 / (o2 - 1.0)))
        model, gpu = catalog.model(key[2]), catalog.gpu(key[3])
        flops = 2.0 * model.params_active_matmul * float(key[-2]) / float(key[-3])
        share = flops / (t_pf / 1e3) / (gpu.dense_tflops[dtype] * 1e12)  # type: ignore[index]
        out.append({**dict(zip(keys, key, strict=True)), "t_pf_ms": t_pf, "peak_share": share})
    return pd.DataFrame(out, columns=[*keys, "t_pf_ms", "peak_share"])


def _device_bytes(rows: pd.DataFrame, catalog: Catalog) -> np.ndarray:
    return np.array([catalog.gpu(g).memory_bytes for g in rows["gpu_id"]], dtype=float)


def _candidates(rows: pd.DataFrame) -> pd.Series:
    """Closed-loop rows with no skip reason and both TTFT and TPOT measured."""
    return (
        (rows["scenario_kind"] == "closed_loop")
        & (rows["skip_reason"] == "")
        & rows["meas_tpot"].notna()
        & rows["meas_ttft"].notna()
    )


def _campaigns_with(rows: pd.DataFrame, hit: pd.Series) -> pd.Series:
    """True on every row of a campaign (CAMPAIGN_KEY) in which `hit` holds for some row."""
    keys = pd.Series(
        list(
            zip(
                *(rows[c].astype(object).where(rows[c].notna(), "") for c in CAMPAIGN_KEY),
                strict=True,
            )
        ),
        index=rows.index,
    )
    return keys.isin(set(keys[hit]))


def skip_beyond_compute(rows: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """`rows` with BEYOND_COMPUTE_REASON on every usable row of a campaign with a row above
    MAX_COMPUTE_SHARE (a copy)."""
    out = rows.copy()
    ok = _candidates(out)
    hit = pd.Series(False, index=out.index)
    hit[ok] = compute_share(out[ok], catalog) > MAX_COMPUTE_SHARE
    out.loc[ok & _campaigns_with(out, hit), "skip_reason"] = BEYOND_COMPUTE_REASON
    return out


def infer_fp8_kv(rows: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """`rows` with kv_dtype fp8 for every row of a campaign in which a row is beyond its GPUs
    at its assumed KV dtype and within them at FP8, for quants that allow an FP8 KV cache (a
    copy): measured TPOT below `tpot_floor_ms` (FP8_KV_NOTE), or more KV in decode than a
    GPU holds beside its weights, `memory_floor_bytes` (FP8_KV_CAPACITY_NOTE)."""
    out = rows.copy()
    ok = _candidates(out) & (out["kv_dtype"] != "fp8")
    fp8_ok = {q for q, quant in catalog.quants.items() if "fp8" in quant.kv_dtypes}
    ok &= out["quant_id"].isin(fp8_ok)
    part = out[ok]
    tpot = part["meas_tpot"].to_numpy(dtype=float)
    fast = (tpot < tpot_floor_ms(part, catalog)) & (tpot >= tpot_floor_ms(part, catalog, "fp8"))
    device = _device_bytes(part, catalog)
    full = (
        part["engine"].isin(NEVER_EVICTS).to_numpy()
        & (memory_floor_bytes(part, catalog) > device)
        & (memory_floor_bytes(part, catalog, "fp8") <= device)
    )
    changed = pd.Series(False, index=out.index)
    for hit_rows, note in ((fast, FP8_KV_NOTE), (full, FP8_KV_CAPACITY_NOTE)):
        hit = pd.Series(False, index=out.index)
        hit[part.index] = hit_rows
        change = ok & _campaigns_with(out, hit) & ~changed
        changed |= change
        out.loc[change, "kv_dtype"] = "fp8"
        out.loc[change, "assumptions"] = out.loc[change, "assumptions"].str.replace(
            r"KV dtype not published: [^;]*", note, regex=True
        )
    return out
