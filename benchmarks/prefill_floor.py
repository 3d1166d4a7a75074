"""Is a TensorRT-LLM prefill pass host-bound at high tensor parallelism? (issue #10, t10p)

`tpot_terms.py` splits each aic closed-loop series' TPOT = a + b / (O - 1) into the decode
step a and the prefill work b a request decodes through; b / (B - 1) is then the measured
cost of one other request's prompt, P. This script prints P measured and predicted (ms) by
model, prompt length and tp for the dense H100 series of TensorRT-LLM 1.0.0rc3, and fits one
constant c (ms a layer) for each of three forms of a per-prompt cost the model lacks:

* max: P = max(P_model, layers x c), a pass the host cannot launch faster than c a layer
  (eager context/mixed iterations; decode-only steps replay CUDA graphs);
* max-step: P = max(P_model, layers x c - decode step), the host's launches overlapping the
  decode step's GPU time;
* add: P = P_model + layers x c, a fixed cost per prompt on top of the GPU work;

each with a free offset per model (the fp8 / bf16 GEMM efficiency the fit sets elsewhere),
and prints the log errors log(pred / meas) by model, prompt length and tp. P_model is the
shipped profile's with its host floor (`prefill_layer_us`) set to 0.

    python benchmarks/prefill_floor.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402
import residuals  # noqa: E402
import tpot_terms  # noqa: E402

from planner.inputs.catalog import load_catalog  # noqa: E402

DENSE = ("llama-3.1-8b", "qwen3-32b")
SOURCE = "aic-trtllm-1.0.0rc3"


def without_floor(catalog) -> dict:
    """The shipped profiles with TensorRT-LLM's host floor at 0: P_model is the GPU work."""
    out = dict(SHIPPED(catalog))
    prof = out["trtllm"]

    def zero(e):  # noqa: ANN001, ANN202
        return e.model_copy(update={"prefill_layer_us": 0.0})

    families = {k: zero(e) for k, e in prof.families.items()}
    out["trtllm"] = prof.model_copy(update={"default": zero(prof.default), "families": families})
    return out


SHIPPED = accuracy.profiles


def per_prompt(pred: pd.DataFrame) -> pd.DataFrame:
    """The series split with P (ms a prompt) measured and predicted and the layer count."""
    frame = tpot_terms.split_series(pred)
    frame["P_meas"] = frame["pf_meas"] / (frame["batch"] - 1.0)
    frame["P_pred"] = frame["pf_pred"] / (frame["batch"] - 1.0)
    catalog = load_catalog()
    frame["layers"] = frame["model_id"].map(lambda m: catalog.model(m).num_hidden_layers)
    return frame[frame["P_meas"] > 0]


def form(kind: str, c: float, f: pd.DataFrame) -> pd.Series:
    """Predicted P (ms) with the per-prompt cost of form `kind` at c ms a layer."""
    host = f["layers"] * c
    if kind == "max":
        return np.maximum(f["P_pred"], host)
    if kind == "max-step":
        return np.maximum(f["P_pred"], host - f["step_pred"])
    return f["P_pred"] + host


def offset_rms(r: pd.Series, models: pd.Series) -> float:
    """rms of the log errors after removing each model's median."""
    return float(np.sqrt(((r - r.groupby(models).transform("median")) ** 2).mean()))


def table(f: pd.DataFrame, r: pd.Series) -> str:
    """Median log error by model x prompt length (rows) and tp (columns)."""
    return (
        f.assign(r=r)
        .pivot_table(index=["model_id", "input_len"], columns="tp", values="r", aggfunc="median")
        .round(2)
        .to_string()
    )


def main() -> int:
    """Print P by tp and the fitted per-layer constant of each form."""
    pd.set_option("display.width", 160)
    accuracy.profiles = without_floor
    pred = residuals.residual_rows(("trtllm",))
    accuracy.profiles = SHIPPED
    pred = pred[(pred["source_key"] == SOURCE) & (pred["gpu_id"] == "h100-sxm")]
    f = per_prompt(pred)
    dense = f[f["model_id"].isin(DENSE)]
    for col in ("P_meas", "P_pred"):
        print(f"\n{col} (ms a prompt), median per series, {SOURCE} H100")
        print(
            f.pivot_table(index=["model_id", "input_len"], columns="tp", values=col,
                          aggfunc="median").round(1).to_string()
        )  # fmt: skip
    base = np.log(dense["P_pred"] / dense["P_meas"])
    print(f"\ndense, no per-prompt cost: rms {offset_rms(base, dense['model_id']):.3f}")
    print(table(dense, base))
    for model in DENSE:  # the constant itself out of sample: fitted on one model alone
        one = dense[dense["model_id"] == model]
        res = minimize_scalar(
            lambda c, o=one: offset_rms(np.log(form("max", c, o) / o["P_meas"]), o["model_id"]),
            bounds=(0.0, 2.0), method="bounded",
        )  # fmt: skip
        print(f"\nmax, fitted on {model} alone: c = {res.x * 1e3:.0f} us a layer")
    for kind in ("max", "max-step", "add"):
        res = minimize_scalar(
            lambda c, k=kind: offset_rms(np.log(form(k, c, dense) / dense["P_meas"]),
                                         dense["model_id"]),
            bounds=(0.0, 2.0), method="bounded",
        )  # fmt: skip
        r = np.log(form(kind, res.x, dense) / dense["P_meas"])
        print(f"\ndense, {kind}: c = {res.x * 1e3:.0f} us a layer, rms {res.fun:.3f}")
        print(table(dense, r))
        moe = f[~f["model_id"].isin(DENSE)]
        if not moe.empty:
            r_moe = np.log(form(kind, res.x, moe) / moe["P_meas"])
            print(f"MoE rows at that c (not fitted): {len(moe)} series")
            print(table(moe, r_moe))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
