"""TensorRT-LLM held-out-model proxy (issue #10): refit the trtllm recipe without one model's
rows and score that model's rows, for a few models (a full leave-one-model-out fold of the
trtllm recipe is ~20 min on two cores; one held-out model is a few minutes).

For each held-out model: median and p90 absolute % error of TPOT, TTFT and throughput on its
rows, and the median TPOT log error (negative: predicted fast). `--in-sample` also scores
the shipped profile on the same rows, per model.

    python benchmarks/tpot_holdout.py                              # qwen3-32b, llama-3.1-8b
    python benchmarks/tpot_holdout.py --models qwen3-32b --starts 1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402

from planner import calibration as cal  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402

ENGINE = "trtllm"


def scores(pred: pd.DataFrame) -> str:
    """TPOT / TTFT / throughput median and p90 abs % and the median TPOT log error."""
    err = accuracy.errors(pred)
    cells = [f"{m} {err[m][1]:.1f}/{err[m][2]:.1f}%" for m in accuracy.METRICS if m in err]
    log_err = np.log(pred["pred_tpot"] / pred["meas_tpot"]).dropna()
    n = err["tpot"][0] if "tpot" in err else 0
    bias = f"; median TPOT log error {np.median(log_err):+.3f}" if len(log_err) else ""
    return f"n {n}: " + ", ".join(cells) + bias


def held_out(rows: pd.DataFrame, catalog, model: str, starts: int) -> pd.DataFrame:
    """Predictions of `model`'s trtllm rows by the recipe fitted without them."""
    recipe = cal.RECIPES[ENGINE]
    start = catalog.engines.get(ENGINE)  # warm start, as accuracy.py's folds do

    def others(r: pd.DataFrame) -> pd.Series:
        return r["model_id"] != model

    profile, _ = cal.fit_recipe(rows, catalog, recipe, row_filter=others, n_starts=starts,
                                start=start)  # fmt: skip
    used = cal.usable(rows)
    ids = used.loc[(used["engine"] == ENGINE) & (used["model_id"] == model), "row_id"]
    return cal.predict(rows[rows["row_id"].isin(ids)], catalog, profile)


def main(argv: list[str] | None = None) -> int:
    """Print the held-out scores of each model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="qwen3-32b,llama-3.1-8b")
    parser.add_argument("--starts", type=int, default=1, help="optimiser starts per fit")
    parser.add_argument("--in-sample", action="store_true", help="also score the shipped fit")
    args = parser.parse_args(argv)
    catalog = load_catalog()
    rows = accuracy.load(catalog)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.in_sample:
        used = cal.usable(rows)
        mine = used[used["engine"] == ENGINE]
        pred = cal.predict(rows[rows["row_id"].isin(mine["row_id"])], catalog,
                           accuracy.profiles(catalog))  # fmt: skip
        print(f"in sample (shipped {ENGINE} profile), all rows: {scores(pred)}")
        for model, part in pred.groupby("model_id"):
            print(f"  {model}: {scores(part)}")
    for model in models:
        t0 = time.process_time()
        pred = held_out(rows, catalog, model, args.starts)
        took = time.process_time() - t0
        print(f"held out {model} (refit without it, {took:.0f} CPU s): {scores(pred)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
