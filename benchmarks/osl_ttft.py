"""Does a row's output length change its measured TTFT? (issue #10: where TensorRT-LLM's TTFT
miss comes from.)

A prompt's TTFT is its wait and its prefill; in a closed loop with the same clients, prompt
length, GPU and layout, the output length changes only how often prompts arrive (one per
request's lifetime per client), so the model predicts nearly the same TTFT at 1K and 8K output
tokens. This pairs every aic configuration measured at both output lengths (same engine,
source, model, GPU, quant, tp, prompt length and concurrency) and prints measured and
predicted TTFT at 1K over 8K, per engine and source.

AIConfigurator's queueing design (docs/design/queueing_model.md in ai-dynamo/aiconfigurator)
names the mechanism that can make the two differ: a closed loop starts with all C requests at
once, and with fixed lengths the requests prefilled together finish together and come back
together ("cohort locking", initial-condition dependent), so a run can stay in its first
round's wave; requests of unequal length (an early end of sequence, say) break the cohorts.

    python benchmarks/osl_ttft.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402

from planner import calibration as cal  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402

KEYS = ["engine", "source_key", "model_id", "gpu_id", "quant_id", "tp", "input_len", "batch"]
SHORT, LONG = 1024, 8192


def paired(pred: pd.DataFrame) -> pd.DataFrame:
    """Configurations measured at both output lengths: measured and predicted TTFT at each,
    and the ratios short / long."""
    aic = pred[pred["dataset"] == "aic"]
    cols = ["meas_ttft", "pred_ttft"]
    short = aic[aic["output_len"] == SHORT].set_index(KEYS)[cols].add_suffix("_1k")
    long = aic[aic["output_len"] == LONG].set_index(KEYS)[cols].add_suffix("_8k")
    both = short.join(long, how="inner").dropna()
    both["measured 1k/8k"] = both["meas_ttft_1k"] / both["meas_ttft_8k"]
    both["predicted 1k/8k"] = both["pred_ttft_1k"] / both["pred_ttft_8k"]
    return both


def summary(both: pd.DataFrame) -> pd.DataFrame:
    """Per engine, source and model: pairs, and the median and range of each ratio."""
    ratios = both[["measured 1k/8k", "predicted 1k/8k"]].reset_index()
    groups = ratios.groupby(["engine", "source_key", "model_id"])
    out = groups.agg(
        pairs=("measured 1k/8k", "size"),
        measured_median=("measured 1k/8k", "median"),
        measured_min=("measured 1k/8k", "min"),
        measured_max=("measured 1k/8k", "max"),
        predicted_median=("predicted 1k/8k", "median"),
    )
    return out.round(2)


def by_output_length(pred: pd.DataFrame) -> pd.DataFrame:
    """The shipped profiles' in-sample TTFT error per engine, source and output length:
    rows, median signed and median absolute % (positive: predicted slow)."""
    aic = pred[(pred["dataset"] == "aic") & pred["meas_ttft"].notna() & pred["pred_ttft"].notna()]
    err = (aic["pred_ttft"] / aic["meas_ttft"] - 1.0) * 100.0
    frame = aic.assign(signed=err, absolute=err.abs())
    groups = frame.groupby(["engine", "source_key", "output_len"])
    out = groups.agg(
        rows=("signed", "size"), signed=("signed", "median"), abs=("absolute", "median")
    )
    return out[out["rows"] >= 5].round(1)


def main() -> int:
    catalog = load_catalog()
    rows = accuracy.load(catalog)
    pred = cal.predict(cal.usable(rows), catalog, accuracy.profiles(catalog))
    both = paired(pred)
    pd.set_option("display.width", 200)
    print(
        f"# Measured and predicted TTFT at output {SHORT} over output {LONG}, same configuration\n"
    )
    print(summary(both).to_string())
    print("\n## In-sample TTFT error (%) by output length, sources with >= 5 rows\n")
    print(by_output_length(pred).to_string())
    print("\n## Every pair (ms)\n")
    shown = both.round({"meas_ttft_1k": 0, "meas_ttft_8k": 0, "pred_ttft_1k": 0,
                        "pred_ttft_8k": 0, "measured 1k/8k": 2, "predicted 1k/8k": 2})  # fmt: skip
    print(shown.sort_index().to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
