"""How much of each engine's TTFT error is one host constant per campaign (issue #10).

For every source (campaign) of the aic set with enough rows, the shipped profile's per-request
latency (`request_overhead_ms`, the host's work every request pays: HTTP, tokenisation,
scheduling) is refitted on that source's rows alone, every other constant as shipped
(`scipy.optimize.minimize_scalar` on the sum of |log TTFT error|, robust to the few rows
the model cannot represent), as a user would with
`planner calibrate --params request_overhead_ms` on a few runs of their own stack. The table
gives the fitted latency and the median |TTFT error| before and after, per source and per
engine. This is not an out-of-sample score: it measures what a one-constant calibration on a
campaign's own rows buys, i.e. how much of the miss is the campaign's host, not the GPU model.

    python benchmarks/request_latency.py                  # vllm, sglang, trtllm
    python benchmarks/request_latency.py --engines vllm --min-rows 20
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402

from planner import calibration as cal  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.schema.engine import EngineProfile  # noqa: E402


def with_latency(profile: EngineProfile, ms: float) -> EngineProfile:
    """`profile` with the per-request latency `ms` in its default and every override."""
    families = {
        k: v.model_copy(update={"request_overhead_ms": ms}) for k, v in profile.families.items()
    }
    default = profile.default.model_copy(update={"request_overhead_ms": ms})
    return profile.model_copy(update={"default": default, "families": families})


def ttft_log_errors(rows: pd.DataFrame, catalog, profile: EngineProfile) -> np.ndarray:
    """log(predicted / measured) TTFT of `rows` under `profile` (rows without one dropped)."""
    pred = cal.predict(rows, catalog, profile)
    ok = pred["meas_ttft"].notna() & pred["pred_ttft"].notna() & (pred["pred_ttft"] > 0)
    return np.log(pred.loc[ok, "pred_ttft"] / pred.loc[ok, "meas_ttft"]).to_numpy()


def refit_source(rows: pd.DataFrame, catalog, profile: EngineProfile) -> tuple[float, float, float]:
    """(fitted latency ms, median |TTFT %| before, after) on one source's rows."""

    def loss(ms: float) -> float:
        return float(np.sum(np.abs(ttft_log_errors(rows, catalog, with_latency(profile, ms)))))

    best = minimize_scalar(loss, bounds=(0.0, 500.0), method="bounded", options={"xatol": 0.5})
    before = ttft_log_errors(rows, catalog, profile)
    after = ttft_log_errors(rows, catalog, with_latency(profile, float(best.x)))
    pct = lambda e: float(np.median(np.abs(np.expm1(e))) * 100)  # noqa: E731
    return float(best.x), pct(before), pct(after)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="vllm,sglang,trtllm")
    parser.add_argument("--min-rows", type=int, default=10, help="smallest source refitted")
    args = parser.parse_args(argv)
    catalog = load_catalog()
    rows = cal.usable(accuracy.load(catalog))
    rows = rows[rows["dataset"] == "aic"]
    pd.set_option("display.width", 200)
    for engine in args.engines.split(","):
        profile = catalog.engines[engine]
        part = rows[rows["engine"] == engine]
        out = []
        for source, group in part.groupby("source_key"):
            if len(group) < args.min_rows:
                continue
            ms, before, after = refit_source(group, catalog, profile)
            out.append(
                {
                    "source": source,
                    "rows": len(group),
                    "latency ms": round(ms, 1),
                    "ttft |%| shipped": round(before, 1),
                    "ttft |%| refit": round(after, 1),
                }
            )
        table = pd.DataFrame(out)
        shipped = profile.default.request_overhead_ms
        print(f"\n## {engine}: per-request latency refitted per source (shipped {shipped:g} ms)")
        print(table.to_string(index=False) if len(table) else "(no source with enough rows)")
        if len(table):
            w = table["rows"] / table["rows"].sum()
            print(
                f"row-weighted mean of the sources' medians: {np.dot(w, table.iloc[:, 3]):.1f}%"
                f" shipped -> {np.dot(w, table.iloc[:, 4]):.1f}% refit"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
