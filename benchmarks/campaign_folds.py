"""Leaving a model out inside one measurement campaign, against the pooled fold (issue #10).

TensorRT-LLM's aic rows come from two campaigns that each measure different models (1.0.0rc3:
Llama-3.1-8B, Qwen3-32B, Qwen3-235B on H100; unversioned: Llama-3.1-70B on H200/B200 and
DeepSeek-V3), so the pooled leave-one-model-out fold (`benchmarks/accuracy.py`) predicts a
model from constants fitted mostly on the other campaign's stack. This script fits the engine's
recipe on one campaign's rows alone (the engine's other rows dropped; the other engines' rows
stay for recipes that borrow from them) and reports, for that campaign's rows:

* in sample: the recipe fitted on the campaign, scored on it;
* leaving a model out within the campaign: fitted on the campaign's other models;
* with `--pooled`: the pooled leave-one-model-out fold scored on the same rows.

Leaving a model out within a campaign is what `planner calibrate` on your own stack gives
for a model you have not measured; it is not the pooled fold the README's targets are read on.

    python benchmarks/campaign_folds.py --engine trtllm \\
        --source aic-trtllm-1.0.0rc3 --source aic-trtllm-unversioned --pooled
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402

from planner import calibration as cal  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402


def campaign_rows(engine: str, source: str) -> tuple[object, pd.DataFrame]:
    """The catalog and every measurement except `engine`'s rows of other sources."""
    catalog = load_catalog()
    rows = accuracy.load(catalog)
    return catalog, rows[(rows["engine"] != engine) | (rows["source_key"] == source)].copy()


def scored(rows: pd.DataFrame, engine: str, model: str | None) -> pd.DataFrame:
    """The usable rows of `engine` (of `model` only, when given)."""
    used = cal.usable(rows)
    used = used[used["engine"] == engine]
    return used if model is None else used[used["model_id"] == model]


def in_sample(task: tuple[str, str]) -> pd.DataFrame:
    """The recipe fitted on the campaign's rows, predicting them (runs in a worker)."""
    engine, source = task
    catalog, rows = campaign_rows(engine, source)
    start = catalog.engines.get(engine)
    profile, _ = cal.recipes.fit_recipe(rows, catalog, cal.RECIPES[engine], None, 1, start)
    return cal.predict(scored(rows, engine, None), catalog, profile)


def within_fold(task: tuple[str, str, str]) -> pd.DataFrame:
    """The recipe fitted on the campaign without `model`, predicting `model`'s rows."""
    engine, source, model = task
    catalog, rows = campaign_rows(engine, source)
    recipe, start = cal.RECIPES[engine], catalog.engines.get(engine)
    profile, _ = cal.recipes.fold_profile(rows, catalog, recipe, "model_id", model, 1, start)
    return cal.predict(scored(rows, engine, model), catalog, profile)


def pooled_fold(engine: str) -> pd.DataFrame:
    """The pooled leave-one-model-out fold of accuracy.py (every source's rows)."""
    catalog = load_catalog()
    rows = accuracy.load(catalog)
    start = catalog.engines.get(engine)
    return cal.cross_validate(rows, catalog, cal.RECIPES[engine], "model_id", 1, start)


def overall(pred: pd.DataFrame) -> dict[str, float]:
    """Median |% error| per metric over all of `pred`'s rows."""
    err = {m: (pred[f"pred_{m}"] / pred[f"meas_{m}"] - 1.0) * 100.0 for m in accuracy.METRICS}
    return {m: float(np.nanmedian(np.abs(e))) for m, e in err.items()}


def report(label: str, pred: pd.DataFrame) -> None:
    """Print one evaluation's medians and its per-model table."""
    medians = overall(pred)
    cells = "; ".join(f"{m} {medians[m]:.1f}%" for m in accuracy.METRICS)
    print(f"\n### {label}: {cells} (n {len(pred)})\n")
    print(accuracy.by_group(pred, ["model_id"]).to_string())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="trtllm")
    ap.add_argument("--source", action="append", required=True, help="aic source_key")
    ap.add_argument("--pooled", action="store_true", help="also run the pooled fold")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    began = time.time()
    catalog = load_catalog()
    used = scored(accuracy.load(catalog), args.engine, None)
    models = {
        s: sorted(used.loc[used["source_key"] == s, "model_id"].unique()) for s in args.source
    }
    with ProcessPoolExecutor(max(args.jobs, 1)) as pool:
        pooled = pool.submit(pooled_fold, args.engine) if args.pooled else None
        ins = {s: pool.submit(in_sample, (args.engine, s)) for s in args.source}
        tasks = [(args.engine, s, m) for s in args.source for m in models[s]]
        folds = dict(zip(tasks, pool.map(within_fold, tasks), strict=True))
        pooled_pred = pooled.result() if pooled else None
    print(f"# {args.engine}: leaving a model out inside one campaign ({time.strftime('%Y-%m-%d')})")
    for source in args.source:
        print(f"\n## {source}: models {', '.join(models[source])}")
        report("in sample, fitted on this campaign alone", ins[source].result())
        within = pd.concat([folds[(args.engine, source, m)] for m in models[source]])
        report("leave one model out within this campaign", within)
        if pooled_pred is not None:
            same = pooled_pred[pooled_pred["source_key"] == source]
            report("pooled leave-one-model-out (accuracy.py), these rows", same)
    print(f"\n(ran in {time.time() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
