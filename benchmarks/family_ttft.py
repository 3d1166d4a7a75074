"""Why vLLM misses TTFT when a GPU family is left out (issue #10): a campaign's per-request
cost, not the GPU's physics.

Two views of the same model, checkpoint and source on Hopper and Blackwell:

1. The measured TTFT (and TPOT) of Llama-3.1-70B FP8 at the same tp, prompt, output and
   concurrency on H100, H200 and B200, per engine, with B200's TTFT over the Hopper card's.
   A B200 has 2.3x an H100's FP8 peak and 2.4x its bandwidth, so a prompt's prefill can only
   be faster there; a B200 TTFT above the Hopper one is a cost outside the GPU.
2. The engine's recipe fitted on that model's rows of one family at a time (`fit_recipe`
   with a row filter, the shipped fit as the start): which constants differ between the
   families when the model, checkpoint and source are the same.

    python benchmarks/family_ttft.py                 # vllm and trtllm
    python benchmarks/family_ttft.py --engines vllm
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402

from planner import calibration as cal  # noqa: E402
from planner.calibration.recipes import RECIPES, fit_recipe  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402

MODEL, QUANT = "llama-3.1-70b", "fp8"
KEYS = ["tp", "input_len", "output_len", "batch"]
SHOWN = ("eta_compute_prefill", "request_overhead_ms", "benchmark_wave_share",
         "step_overhead_ms", "allreduce_latency_us", "step_per_seq_us")  # fmt: skip


def side_by_side(rows: pd.DataFrame, engine: str) -> pd.DataFrame:
    """Measured TTFT and TPOT per GPU at the configurations measured on B200 and a Hopper
    card, with B200's TTFT over the Hopper card's (H200 where both Hopper cards ran it)."""
    part = rows[(rows["engine"] == engine) & (rows["model_id"] == MODEL)]
    part = part[(part["quant_id"] == QUANT) & (part["dataset"] == "aic")]
    ttft = part.pivot_table(index=KEYS, columns="gpu_id", values="meas_ttft")
    tpot = part.pivot_table(index=KEYS, columns="gpu_id", values="meas_tpot")
    hopper = [g for g in ("h200", "h100-sxm") if g in ttft]
    if "b200" not in ttft or not hopper:
        return pd.DataFrame()
    out = ttft.round(0).join(tpot.round(1).add_suffix(" tpot"))
    ref = ttft[hopper[0]].fillna(ttft[hopper[-1]])
    out["b200 / hopper ttft"] = (ttft["b200"] / ref).round(2)
    return out[out["b200 / hopper ttft"].notna()]


def family_fits(rows: pd.DataFrame, catalog, engine: str) -> pd.DataFrame:
    """The recipe fitted on MODEL's rows of one GPU family at a time: a few constants."""
    out = {}
    for family in ("hopper", "blackwell"):

        def keep(r: pd.DataFrame, f: str = family) -> pd.Series:
            return (r["gpu_family"] == f) & (r["model_id"] == MODEL)

        profile, report = fit_recipe(
            rows, catalog, RECIPES[engine], row_filter=keep, n_starts=1,
            start=catalog.engines.get(engine),
        )  # fmt: skip
        d = profile.default
        out[f"{family} ({len(report['row_ids'])} rows)"] = {k: getattr(d, k) for k in SHOWN}
    return pd.DataFrame(out).round(3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="vllm,trtllm")
    args = parser.parse_args(argv)
    catalog = load_catalog()
    rows = cal.usable(accuracy.load(catalog))
    pd.set_option("display.width", 200)
    for engine in args.engines.split(","):
        print(f"\n## {engine}: {MODEL} {QUANT}, measured TTFT (ms) and TPOT (ms) by GPU")
        table = side_by_side(rows, engine)
        print(table.to_string() if len(table) else "(no configuration on both families)")
        if len(table):
            slower = table[table["b200 / hopper ttft"] > 1.0]
            print(f"B200 TTFT above the Hopper card's: {len(slower)} of {len(table)}")
        print(f"\n{engine} recipe fitted on {MODEL}'s rows of one family (all its quants)")
        print(family_fits(rows, catalog, engine).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
