"""Disaggregated rows of the AIConfigurator silicon sample, predicted vs measured (issue #11).

Reads data/calibration/aic_silicon_public.csv (SOURCES.md section 10; never /work/shared).
Of its 24 `mode == disagg` rows, only those with plain tensor parallelism in both pools and a
catalog model/GPU are predicted: rows with expert parallelism or attention data parallelism
(DeepSeek-V3, Qwen3-235B, GLM-5) are skipped with the reason. For each predicted row:

* TPOT: the decode pool's step at its batch (`decode_batch_size` per decode worker, capped by
  memory), no prefill interruption: the `role: decode` row's `tpot_ms`;
* TTFT (idle): prefill of one prompt on a prefill worker + the engine's per-request latency
  + the KV transfer over the scale-out link (where the catalog has a sourced one; else left
  out and said) + half a decode step.
  The rows are closed loops whose concurrency is not always published; queueing is left out,
  so the prediction is a floor and rows measured deep in a queue sit far above it.
* TTFT (closed loop): where a row's id publishes its concurrency (`_c480_`), the closed loop
  of `planner estimate --disaggregated --concurrency C` (`planning/estimate_disagg.py`) at the
  row's pools and decode batch: the wait behind the other clients' prompts at the rate
  Little's law allows.

    python benchmarks/disagg_aic.py
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.calibration.aic import AIC_CSV, AIC_GPUS, AIC_MODELS, AIC_QUANTS  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.perf.candidates import GridSpec, build_grid, default_kv_dtype  # noqa: E402
from planner.perf.evaluate import evaluate  # noqa: E402
from planner.planning.estimate import EstimateRequest  # noqa: E402
from planner.planning.estimate_disagg import Pools, estimate_disaggregated  # noqa: E402


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and value == value and value > 0 else 1


def _skip(raw: pd.Series, catalog) -> str:
    model = AIC_MODELS.get(str(raw["model_path"]))
    if model is None or AIC_GPUS.get(str(raw["system"])) not in catalog.gpus:
        return f"{raw['model_path']} on {raw['system']}: no catalog entry"
    for side in ("prefill", "decode"):
        if _int(raw[f"{side}_attention_dp_size"]) > 1:
            return f"{side} attention data parallel (not modelled here)"
        if _int(raw[f"{side}_moe_ep_size"]) > 1:
            return f"{side} expert parallel (not modelled here)"
        if _int(raw[f"{side}_pp_size"]) > 1:
            return f"{side} pipeline parallel (not modelled here)"
    return ""


def _row(catalog, raw: pd.Series, role: str, tp: int, batch: int) -> pd.Series:
    model = catalog.model(AIC_MODELS[str(raw["model_path"])])
    gpu = catalog.gpu(AIC_GPUS[str(raw["system"])])
    quant = catalog.quant(AIC_QUANTS[str(raw["gemm_quant_mode"]).strip()])
    engine = catalog.engine(str(raw["backend"]))
    kv = "fp8" if raw["backend"] == "trtllm" else default_kv_dtype(quant, engine)
    role = role if gpu.scaleout_link_gb_per_s is not None else "aggregated"
    spec = GridSpec(
        gpus=[gpu], quants=[quant], tps=[tp], kv_dtypes=[kv], batches=[batch],
        shapes=[(int(raw["isl"]), int(raw["osl"]))], roles=(role,),
    )  # fmt: skip
    grid, rejected = build_grid(model, spec, engine)
    if grid.empty:
        raise ValueError(rejected["reason"].iloc[0])
    return evaluate(model, grid, 0.8, "none").iloc[0]


def predict(catalog, raw: pd.Series) -> dict:
    """TPOT of the decode pool and the idle TTFT of one disaggregated row."""
    p_tp, d_tp = _int(raw["prefill_tp_size"]), _int(raw["decode_tp_size"])
    b = _int(raw["decode_batch_size"])
    dec = _row(catalog, raw, "decode", d_tp, 1)
    b = max(min(b, int(dec["max_batch"])), 1)
    dec = _row(catalog, raw, "decode", d_tp, b)
    pre = _row(catalog, raw, "prefill", p_tp, 1)
    linked = str(pre["role"]) == "prefill"
    xfer = max(float(pre["kv_transfer_ms"]), float(dec["kv_transfer_ms"])) if linked else 0.0
    host = float(pre["eff_request_overhead_ms"])  # the engine's per-request latency (#10)
    ttft = float(pre["prefill_ms"]) + host + xfer + float(dec["tpot_step_ms"]) / 2
    clients = re.search(r"_c(\d+)_", str(raw["id"]))
    closed = math.nan
    if clients:  # the published concurrency: the closed loop on both pools
        req = EstimateRequest(
            model=AIC_MODELS[str(raw["model_path"])],
            gpu=AIC_GPUS[str(raw["system"])],
            tp=p_tp,
            quant=AIC_QUANTS[str(raw["gemm_quant_mode"]).strip()],
            batch=b,
            input_len=int(raw["isl"]),
            output_len=int(raw["osl"]),
            kv_dtype=str(dec["kv_dtype"]),
            engine=str(raw["backend"]),
            concurrency=int(clients.group(1)),
        )
        n_p, n_d = _int(raw["prefill_num_workers"]), _int(raw["decode_num_workers"])
        closed = estimate_disaggregated(req, Pools(p_tp, n_p, d_tp, n_d), catalog)["ttft_ms"]
    return {
        "row": raw["id"][-60:],
        "C": int(clients.group(1)) if clients else None,
        "pools": f"P {_int(raw['prefill_num_workers'])}x tp{p_tp} / D "
        f"{_int(raw['decode_num_workers'])}x tp{d_tp} b{b}",
        "tpot_meas": float(raw["silicon_tpot_ms"]),
        "tpot_pred": float(dec["tpot_step_ms"]),
        "ttft_meas": float(raw["silicon_ttft_ms"]),
        "ttft_pred_idle": ttft,
        "kv_ms": xfer if linked else math.nan,
        "ttft_pred_closed": closed,
    }


def main() -> None:
    catalog = load_catalog()
    data = pd.read_csv(AIC_CSV)
    rows = data[data["mode"] == "disagg"]
    out, skipped = [], {}
    for _, raw in rows.iterrows():
        reason = _skip(raw, catalog)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        out.append(predict(catalog, raw))
    table = pd.DataFrame(out)
    table["tpot_err_%"] = 100 * (table.tpot_pred / table.tpot_meas - 1)
    table["ttft_err_%"] = 100 * (table.ttft_pred_idle / table.ttft_meas - 1)
    table["closed_err_%"] = 100 * (table.ttft_pred_closed / table.ttft_meas - 1)
    print(f"{len(rows)} disaggregated rows; {len(table)} predicted; skipped: {skipped}")
    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        print(table.round(1).to_string(index=False))
    print(
        f"median |TPOT error| {table['tpot_err_%'].abs().median():.0f}%, "
        f"median |TTFT error| (idle floor vs measured) {table['ttft_err_%'].abs().median():.0f}%"
    )
    known = table.dropna(subset=["ttft_pred_closed"])
    print(
        f"{len(known)} rows publish their concurrency: median |TTFT error| idle floor "
        f"{known['ttft_err_%'].abs().median():.0f}%, closed loop "
        f"{known['closed_err_%'].abs().median():.0f}%"
    )


if __name__ == "__main__":
    main()
