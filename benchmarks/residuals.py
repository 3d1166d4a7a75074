"""In-sample residuals of the shipped engine profiles, grouped to look for missing physics.

For each server engine, the median log(predicted / measured) of TPOT and TTFT (negative: the
model is fast) and the median |log| per model, GPU, quant, tp, concurrency band, MoE or dense,
source, and a few derived leads (issue #10):

* per-layer fixed cost: correlation of the TPOT log error with layers / predicted TPOT;
* Qwen3-32B FP8 on H100 (TensorRT-LLM) against Llama-3.1-8B BF16 of the same source, by
  concurrency: an error that grows with the batch at every prompt length is not the KV read;
* TTFT over the modelled single-request prefill, by concurrency x output length, for each
  engine's largest series: queueing behind other prefills would grow with the prefill load
  (short outputs), a first-round wave or a per-request cost would not (#10, t10k);
* TTFT's slope over the output length at one concurrency, in units of the interval between
  two completions (session 35: TensorRT-LLM 1.0.0rc3's Llama-3.1-8B alone has one).

    python benchmarks/residuals.py                 # every server engine
    python benchmarks/residuals.py --engines trtllm
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402

from planner import calibration as cal  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402

BANDS = [0, 4, 16, 64, 256, 4096]


def residual_rows(engines: tuple[str, ...]) -> pd.DataFrame:
    """The usable aic rows of `engines` with their log errors and grouping columns."""
    catalog = load_catalog()
    rows = accuracy.load(catalog)
    used = cal.usable(rows)
    pred = cal.predict(used, catalog, accuracy.profiles(catalog))
    pred = pred[(pred["dataset"] == "aic") & pred["engine"].isin(engines)].copy()
    for m in ("tpot", "ttft"):
        pred[f"r_{m}"] = np.log(pred[f"pred_{m}"] / pred[f"meas_{m}"])
    models = {m: catalog.model(m) for m in pred["model_id"].unique()}
    pred["layers"] = pred["model_id"].map(lambda m: models[m].num_hidden_layers)
    pred["moe"] = pred["model_id"].map(lambda m: "moe" if models[m].moe else "dense")
    pred["concurrency"] = pd.cut(pred["batch"], BANDS)
    return pred


def grouped(part: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """n, median log error and median |log error| of TPOT and TTFT per group."""
    return (
        part.groupby(cols, observed=True)
        .agg(
            n=("r_tpot", "size"),
            tpot=("r_tpot", "median"),
            tpot_abs=("r_tpot", lambda x: np.median(np.abs(x))),
            ttft=("r_ttft", "median"),
            ttft_abs=("r_ttft", lambda x: np.median(np.abs(x))),
        )
        .round(3)
    )


def report(pred: pd.DataFrame, engine: str) -> None:
    """Print the grouped residuals of one engine."""
    part = pred[pred["engine"] == engine]
    print(f"\n## {engine}: {len(part)} aic rows (log pred/meas; negative = predicted fast)")
    for cols in (["model_id"], ["gpu_id"], ["quant_id"], ["tp"], ["concurrency"], ["moe"],
                 ["source_key"], ["model_id", "gpu_id", "quant_id"]):  # fmt: skip
        print()
        print(grouped(part, cols).to_string())
    lead = part["layers"] / part["pred_tpot"]
    corr = np.corrcoef(lead, part["r_tpot"])[0, 1]
    print(f"\nper-layer lead: corr(TPOT log error, layers / predicted TPOT) = {corr:.2f}")


def qwen_fp8_lead(pred: pd.DataFrame) -> None:
    """TensorRT-LLM on H100, source 1.0.0rc3: TPOT log error by prompt length x concurrency."""
    part = pred[(pred["engine"] == "trtllm") & (pred["gpu_id"] == "h100-sxm")]
    for model in ("qwen3-32b", "llama-3.1-8b"):
        rows = part[part["model_id"] == model]
        if rows.empty:
            continue
        table = rows.pivot_table(
            index="input_len", columns="batch", values="r_tpot", aggfunc="median"
        )
        print(f"\ntrtllm {model} on H100: median TPOT log error, prompt length x concurrency")
        print(table.round(2).to_string())


def ttft_ratio_lead(pred: pd.DataFrame) -> None:
    """Measured TTFT / modelled prefill of one request, concurrency x output length, for the
    largest (model, GPU, quant, tp, ISL) series of each engine."""
    keys = ["engine", "model_id", "gpu_id", "quant_id", "tp", "input_len"]
    part = pred.assign(ratio=pred["meas_ttft"] / pred["prefill_ms"])
    for engine, rows in part.groupby("engine"):
        key = rows.groupby(keys[1:]).size().idxmax()
        series = rows[(rows[keys[1:]] == pd.Series(key, index=keys[1:])).all(axis=1)]
        table = series.pivot_table(
            index="output_len", columns="batch", values="ratio", aggfunc="median"
        )
        label = " ".join(str(getattr(k, "item", lambda k=k: k)()) for k in key)
        print(f"\n{engine} {label}: measured TTFT / modelled prefill, output length x concurrency")
        print(table.round(1).to_string())


def output_length_lead(pred: pd.DataFrame) -> None:
    """TTFT against the output length O at one concurrency C (session 35): the slope of a line
    fitted to each series' measured (and predicted) TTFT over O, as k = slope x C / TPOT, so
    k = 1 is a wait of one interval between two requests' completions (O x TPOT / C); the
    median k per source, model, GPU, quant and C, where a series has two output lengths."""
    keys = ["source_key", "model_id", "gpu_id", "quant_id", "tp", "input_len", "batch"]
    rows = []
    for key, g in pred.groupby(keys, observed=True):
        if g["output_len"].nunique() < 2:
            continue
        scale = key[-1] / g["meas_tpot"].mean()
        measured = np.polyfit(g["output_len"], g["meas_ttft"], 1)[0] * scale
        modelled = np.polyfit(g["output_len"], g["pred_ttft"], 1)[0] * scale
        rows.append((*key, measured, modelled))
    if not rows:
        return
    table = pd.DataFrame(rows, columns=[*keys, "k", "k_model"])
    summary = table.groupby([*keys[:4], "batch"], observed=True).agg(
        series=("k", "size"), k=("k", "median"), k_model=("k_model", "median")
    )
    print("\nTTFT slope over the output length, k = slope x C / TPOT (1: one completion interval)")
    print(summary.round(2).to_string())


def main(argv: list[str] | None = None) -> int:
    """Print the residual tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="trtllm,vllm,sglang")
    args = parser.parse_args(argv)
    pd.set_option("display.width", 160)
    engines = tuple(e.strip() for e in args.engines.split(",") if e.strip())
    pred = residual_rows(engines)
    for engine in engines:
        report(pred, engine)
    if "trtllm" in engines:
        qwen_fp8_lead(pred)
    ttft_ratio_lead(pred)
    output_length_lead(pred)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
