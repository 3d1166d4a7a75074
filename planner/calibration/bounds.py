"""Hardware bounds that a measured closed-loop row must respect (issue #10, vLLM forensics).

Two lower bounds need no efficiency constant, only the catalog's peaks:

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
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.inputs.catalog import Catalog
from planner.schema.quant import KV_BYTES

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


def tpot_floor_ms(rows: pd.DataFrame, catalog: Catalog, kv_dtype: str | None = None) -> np.ndarray:
    """HBM floor of each dense row's decode step (NaN for MoE): weights over the stage plus
    the KV of the sequences in decode at ISL tokens, at `kv_dtype` (default: the row's)."""
    out = np.full(len(rows), np.nan)
    lat = _latency_ms(rows)
    osl = rows["output_len"].to_numpy(dtype=float)
    tpot = rows["meas_tpot"].to_numpy(dtype=float)
    in_decode = rows["batch"].to_numpy(dtype=float) * (osl - 1.0) * tpot / lat
    kvs = rows["kv_dtype"] if kv_dtype is None else pd.Series(kv_dtype, index=rows.index)
    cols = zip(
        rows["model_id"], rows["gpu_id"], rows["quant_id"], kvs, rows["input_len"], strict=True
    )
    for i, (m, g, q, kv, isl) in enumerate(cols):
        model = catalog.model(m)
        if model.moe is not None:
            continue
        weights = (model.params_total - model.params_embedding) * catalog.quants[
            q
        ].weight_bytes_per_param
        kv_token = model.kv_elements_per_token_per_layer * model.num_hidden_layers * KV_BYTES[kv]
        step = weights + in_decode[i] * isl * kv_token
        out[i] = step / (catalog.gpu(g).hbm_bandwidth_gb_per_s * 1e9) * 1e3
    return out / rows["tp"].to_numpy(dtype=float)


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
    """`rows` with kv_dtype fp8 (and FP8_KV_NOTE) for every row of a campaign in which a row's
    measured TPOT is below `tpot_floor_ms` at its assumed KV dtype and not below it at FP8,
    for quants that allow an FP8 KV cache (a copy)."""
    out = rows.copy()
    ok = _candidates(out) & (out["kv_dtype"] != "fp8")
    fp8_ok = {q for q, quant in catalog.quants.items() if "fp8" in quant.kv_dtypes}
    ok &= out["quant_id"].isin(fp8_ok)
    part = out[ok]
    tpot = part["meas_tpot"].to_numpy(dtype=float)
    below = (tpot < tpot_floor_ms(part, catalog)) & (tpot >= tpot_floor_ms(part, catalog, "fp8"))
    hit = pd.Series(False, index=out.index)
    hit[part.index] = below
    change = ok & _campaigns_with(out, hit)
    out.loc[change, "kv_dtype"] = "fp8"
    out.loc[change, "assumptions"] = out.loc[change, "assumptions"].str.replace(
        r"KV dtype not published: [^;]*", FP8_KV_NOTE, regex=True
    )
    return out
