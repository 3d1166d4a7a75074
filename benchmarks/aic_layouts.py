"""Predicted vs measured on the AIConfigurator silicon rows with pipeline, expert-parallel or
attention-DP layouts (issue #11 parts 1-2): what the public data can say about those terms.

Reads data/calibration/aic_silicon_public.csv (the project's copy; never /work/shared). Each
aggregated row whose model is in the catalog and whose layout the planner represents (tp
inside one scale-up domain, moe_tp x moe_ep = tp x attention_dp) is estimated as a closed
loop at its concurrency with the shipped engine profile; the others are listed with why.

    python benchmarks/aic_layouts.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.calibration.aic import AIC_CSV, AIC_ENGINES, AIC_GPUS, AIC_MODELS, AIC_QUANTS  # noqa: E402
from planner.errors import InputError  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.planning.estimate import EstimateRequest, estimate  # noqa: E402


def _int(value: object) -> int:
    text = str(value).strip()
    return int(float(text)) if text and float(text) > 0 else 1


def layout_rows() -> pd.DataFrame:
    """The aggregated rows with pp, attention DP or EP beyond 1."""
    raw = pd.read_csv(AIC_CSV, dtype=str, keep_default_na=False)
    raw = raw[raw["mode"].str.strip() == "agg"]
    keep = [
        _int(r.pp_size) > 1 or _int(r.attention_dp_size) > 1 or _int(r.moe_ep_size) > 1
        for r in raw.itertuples()
    ]
    return raw[keep]


def predict(row: pd.Series, catalog) -> dict:
    """One row's prediction (or the reason there is none)."""
    model = AIC_MODELS.get(row["model_path"])
    gpu = AIC_GPUS.get(row["system"])
    quant = AIC_QUANTS.get(row["gemm_quant_mode"].strip())
    tp, pp, dp = _int(row["tp_size"]), _int(row["pp_size"]), _int(row["attention_dp_size"])
    ep, moe_tp = _int(row["moe_ep_size"]), _int(row["moe_tp_size"])
    out = {"id": row["id"], "layout": f"tp{tp} pp{pp} dp{dp} moe_tp{moe_tp} ep{ep}"}
    if model not in catalog.models or gpu not in catalog.gpus or quant is None:
        return {**out, "skip": f"{row['model_path']} / {row['system']} not in the catalog"}
    if moe_tp * ep != tp * dp:
        return {**out, "skip": "moe_tp x moe_ep differs from tp x attention_dp"}
    conc = _int(row["batch_size"])
    req = EstimateRequest(
        model=model,
        gpu=gpu,
        tp=tp,
        pp=pp,
        ep=ep,
        dp_attention=dp,
        quant=quant,
        batch=conc,
        concurrency=conc,
        input_len=_int(row["isl"]),
        output_len=_int(row["osl"]),
        engine=AIC_ENGINES[row["backend"]],
    )
    try:
        est = estimate(req, catalog)
    except InputError as exc:
        return {**out, "skip": str(exc)[:90]}
    tpot, ttft = float(row["silicon_tpot_ms"]), float(row["silicon_ttft_ms"])
    return {
        **out,
        "engine": row["backend"],
        "gpu": gpu,
        "conc": conc,
        "isl/osl": f"{row['isl']}/{row['osl']}",
        "tpot_meas": tpot,
        "tpot_pred": float(est["tpot_ms"]),
        "tpot_err_%": 100 * (float(est["tpot_ms"]) - tpot) / tpot,
        "ttft_meas": ttft,
        "ttft_pred": float(est["ttft_ms"]),
        "ttft_err_%": 100 * (float(est["ttft_ms"]) - ttft) / ttft,
    }


def main() -> None:
    catalog = load_catalog()
    rows = [predict(r, catalog) for _, r in layout_rows().iterrows()]
    done = pd.DataFrame([r for r in rows if "skip" not in r])
    skipped = pd.DataFrame([r for r in rows if "skip" in r])
    pd.set_option("display.width", 200)
    if not done.empty:
        print(done.drop(columns=["id"]).round(1).to_string(index=False))
        for m in ("tpot", "ttft"):
            err = done[f"{m}_err_%"].abs()
            print(f"{m}: median |error| {err.median():.0f}%, p90 {err.quantile(0.9):.0f}%")
    print(f"\n{len(done)} rows predicted, {len(skipped)} skipped:")
    if not skipped.empty:
        print(skipped.groupby("skip").size().to_string())
    if done.empty or math.isnan(done["tpot_err_%"].abs().median()):
        sys.exit(1)


if __name__ == "__main__":
    main()
