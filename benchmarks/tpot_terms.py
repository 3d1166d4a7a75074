"""Where a TensorRT-LLM TPOT error comes from (issue #10): the decode step or the prefills
riding in it.

A closed-loop benchmark's TPOT is the decode step plus the other requests' prefills spread
over a request's O - 1 decode steps, so within one series (model, GPU, quant, tp, ISL,
concurrency) measured across output lengths, TPOT = a + b / (O - 1): the intercept a is the
decode step, the slope b the prefill work a request decodes through. Fitting that line to
the measured and to the predicted TPOTs of each series (the aic rows run O = 128/256/512)
separates the two: `r_step` = log(predicted a / measured a), `r_pf` = log(predicted b /
measured b), medians per model, GPU, quant and tp (negative: predicted fast).

    python benchmarks/tpot_terms.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import residuals  # noqa: E402

KEYS = ["model_id", "gpu_id", "quant_id", "tp", "input_len", "batch"]


def split_series(pred: pd.DataFrame) -> pd.DataFrame:
    """One row per series with at least 3 output lengths: measured and predicted intercept
    (decode step, ms) and slope (prefill work per request decoded through, ms)."""
    out = []
    for key, part in pred.groupby(KEYS):
        if part["output_len"].nunique() < 3:
            continue
        x = 1.0 / (part["output_len"] - 1.0)
        b_meas, a_meas = np.polyfit(x, part["meas_tpot"], 1)
        b_pred, a_pred = np.polyfit(x, part["pred_tpot"], 1)
        out.append(dict(zip(KEYS, key, strict=True), step_meas=a_meas, step_pred=a_pred,
                        pf_meas=b_meas, pf_pred=b_pred))  # fmt: skip
    frame = pd.DataFrame(out)
    frame["r_step"] = np.log(frame["step_pred"] / frame["step_meas"])
    ratio = frame["pf_pred"] / frame["pf_meas"]
    frame["r_pf"] = np.log(ratio.where(ratio > 0))  # a noisy series can slope down: no ratio
    return frame


def main() -> int:
    """Print the medians of the decode-step and prefill-share log errors."""
    pd.set_option("display.width", 160)
    pred = residuals.residual_rows(("trtllm",))
    frame = split_series(pred)
    table = frame.groupby(KEYS[:4]).agg(
        series=("r_step", "size"), r_step=("r_step", "median"), r_pf=("r_pf", "median")
    )
    print("trtllm: decode step (r_step) and prefill share (r_pf) log errors, median per series")
    print(table.round(2).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
