"""A new GPU family with a few measurements of your own (issue #10): the GPU's constants from
the other family, the host's calibrated on k of the family's rows.

Leaving a GPU family out, the fold's misses are mostly in constants of the host and the
benchmark harness, not the GPU (`benchmarks/family_ttft.py`): the per-request latency every
request pays and the share of requests that arrive as the clients' first round. This script
takes each family fold of `benchmarks/accuracy.py` (the recipe fitted without the family;
"others' rows in" where that fold has fewer than two models, as there) and then, as a user
with a handful of runs on the new family would (`planner calibrate --params ...`), refits
only those host constants on k rows of the family drawn at random (seeded), and scores the
family's *other* rows. Each seed is one such user; the medians over the seeds are reported
beside the fold's own. The k rows are in-sample for the host constants only: every GPU-side
constant is the other family's.

    python benchmarks/host_calibration.py                        # vllm, sglang, trtllm
    python benchmarks/host_calibration.py --engines vllm --rows 30 --seeds 5
"""

from __future__ import annotations

import argparse
import statistics
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
from planner.calibration.fit import fit_profile  # noqa: E402
from planner.calibration.recipes import RECIPES, fold_profile, without_moe_ttft  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.schema.engine import EngineProfile  # noqa: E402

HOST = ("request_overhead_ms", "benchmark_wave_share")  # the host's and the harness's
FAMILIES = ("hopper", "blackwell")
METRICS = ("tpot", "ttft", "throughput")


def family_fold(rows: pd.DataFrame, catalog, engine: str, family: str) -> EngineProfile:
    """The recipe fitted without `family`'s rows, others' rows in as accuracy.py does it."""
    donors = {k: catalog.engines[k] for k in accuracy.SERVER_RECIPES if k != engine}
    profile, _ = fold_profile(
        rows, catalog, RECIPES[engine], "gpu_family", family, n_starts=1,
        start=catalog.engines.get(engine), donors=donors,
    )  # fmt: skip
    return profile


def host_refit(
    rows: pd.DataFrame, catalog, engine: str, base: EngineProfile, chosen: set, host: tuple
) -> EngineProfile:
    """`base` (one family's constants, as a default) with only `host` refitted on `chosen`."""
    recipe = RECIPES[engine]
    fit_rows = without_moe_ttft(rows, catalog) if recipe.unfitted_moe_ttft else rows
    profile, _ = fit_profile(
        fit_rows, catalog, base, engine_filter=recipe.engines, params=host, families=(),
        n_starts=1, row_filter=lambda r: r["row_id"].isin(chosen), start=base,
    )  # fmt: skip
    return profile


def run(engine: str, k: int, seeds: int, rows: pd.DataFrame, catalog) -> list[str]:
    """One engine: the fold's medians and each seed's after the host calibration."""
    host = tuple(p for p in HOST if p in RECIPES[engine].params)
    used = cal.usable(rows)
    used = used[used["engine"].isin(RECIPES[engine].engines) & (used["dataset"] == "aic")]
    folds, calibrated = [], {s: [] for s in range(seeds)}
    for family in FAMILIES:
        ids = used.loc[used["gpu_family"] == family, "row_id"].to_numpy()
        if len(ids) <= k:
            continue
        profile = family_fold(rows, catalog, engine, family)
        folds.append(cal.predict(rows[rows["row_id"].isin(ids)], catalog, profile))
        own = profile.for_family(family)
        base = profile.model_copy(update={"default": own, "families": {}})
        for seed in range(seeds):
            chosen = set(np.random.default_rng(seed).choice(ids, size=k, replace=False))
            refit = host_refit(rows, catalog, engine, base, chosen, host)
            rest = rows[rows["row_id"].isin(set(ids) - chosen)]
            calibrated[seed].append(cal.predict(rest, catalog, refit))
    fold = accuracy.errors(pd.concat(folds))
    per_seed = [accuracy.errors(pd.concat(parts)) for parts in calibrated.values()]
    out = [f"\n## {engine}: host constants {', '.join(host)} calibrated on {k} rows"]
    out.append("| | " + " | ".join(METRICS) + " |")
    out.append("|---|" + "---|" * len(METRICS))
    out.append("| family fold | " + " | ".join(f"{fold[m][1]:.1f}%" for m in METRICS) + " |")
    for seed, errs in enumerate(per_seed):
        cells = " | ".join(f"{errs[m][1]:.1f}%" for m in METRICS)
        out.append(f"| seed {seed} | {cells} |")
    med = {m: statistics.median(e[m][1] for e in per_seed) for m in METRICS}
    out.append("| median of seeds | " + " | ".join(f"{med[m]:.1f}%" for m in METRICS) + " |")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default=",".join(accuracy.SERVER_RECIPES))
    parser.add_argument("--rows", type=int, default=30, help="rows a user measures (k)")
    parser.add_argument("--seeds", type=int, default=5, help="users, each a random k rows")
    args = parser.parse_args(argv)
    start = time.time()
    catalog = load_catalog()
    rows = accuracy.load(catalog)
    for engine in args.engines.split(","):
        print("\n".join(run(engine.strip(), args.rows, args.seeds, rows, catalog)), flush=True)
    print(f"\nmedian |error| of the family's rows not used to calibrate; ran in "
          f"{time.time() - start:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
