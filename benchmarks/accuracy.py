"""Accuracy of the performance model on the public measurements.

Prints, for data/calibration/measured_public.csv (never /work/shared):

1. the shipped engine profiles (catalogs/engines/*.yaml): median and 90th-percentile absolute
   % error of TPOT, TTFT, throughput and end-to-end latency, overall, per GPU, per source;
2. the pure roofline (ideal=True: eta = 1, no overheads) on the same rows;
3. cross-validation: each recipe refitted with one source left out (one GPU for llama.cpp,
   whose rows come from one source) and scored on the rows left out;
4. a Markdown summary to paste into the README.

    python benchmarks/accuracy.py           # score the shipped profiles
    python benchmarks/accuracy.py --write   # refit and rewrite catalogs/engines/{vllm,
                                            # trtllm,llamacpp}.yaml first, then score
    python benchmarks/accuracy.py --quick   # one start per cross-validation fit (faster)
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner import calibration as cal  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402

ENGINE_DIR = ROOT / "catalogs" / "engines"
HEADER = (
    "{id} efficiency constants of the performance model (docs: MODEL.md), fitted on public\n"
    "measurements by `python benchmarks/accuracy.py --write` (planner.calibration, recipe\n"
    "'{id}'); do not edit by hand: change the recipe or the data and refit.\n"
    "Accuracy and cross-validation: `python benchmarks/accuracy.py`."
)


def md_table(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table (no tabulate dependency)."""
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(str(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def pct(x: float) -> str:
    return "-" if pd.isna(x) else f"{x:.0f}%"


def signed(x: float) -> str:
    return "-" if pd.isna(x) else f"{x:+.0f}%"


def overall(table: pd.DataFrame) -> pd.DataFrame:
    """The by='all' rows of an error table, indexed by metric."""
    return table[table["by"] == "all"].set_index("metric")


def show(title: str, table: pd.DataFrame, by: tuple[str, ...] = ("all", "gpu", "source")) -> None:
    print(f"\n## {title}\n")
    for kind in by:
        part = table[table["by"] == kind].copy()
        if part.empty:
            continue
        part = part.assign(
            median=part["median_abs_pct"].map(pct),
            p90=part["p90_abs_pct"].map(pct),
            signed_median=part["median_signed_pct"].map(signed),
        )[["group", "metric", "n", "median", "p90", "signed_median"]]
        print(f"by {kind}:")
        print(part.to_string(index=False))
        print()


def engine_profiles(catalog) -> dict:
    """Each row's engine -> the shipped profile that describes it (vllm for the rest)."""
    engines = catalog.engines
    out = {"*": engines["vllm"]}
    for key in ("trtllm", "llamacpp"):
        if key in engines:
            out[key] = engines[key]
    return out


def refit_and_write(measurements: pd.DataFrame, catalog, today: str) -> None:
    print("Refitting the shipped profiles ...")
    fitted = cal.fit_shipped_profiles(measurements, catalog, today)
    for rid, (profile, report) in fitted.items():
        path = cal.write_profile(profile, ENGINE_DIR / f"{rid}.yaml", HEADER.format(id=rid))
        rep = report["default"]
        print(
            f"  wrote {path.relative_to(ROOT)}: {len(report['row_ids'])} rows, "
            f"rms log error {rep.get('rms_log_after', float('nan')):.3f}"
        )


def cross_validation(measurements, catalog, n_starts: int) -> dict[str, pd.DataFrame]:
    """Held-out predictions per recipe: leave one source out (one GPU for llama.cpp)."""
    return {
        "vllm (server engines), leave one source out": cal.cross_validate(
            measurements, catalog, cal.RECIPES["vllm"], "source_key", n_starts
        ),
        "trtllm, leave one source out": cal.cross_validate(
            measurements, catalog, cal.RECIPES["trtllm"], "source_key", n_starts
        ),
        "llamacpp, leave one GPU out": cal.cross_validate(
            measurements, catalog, cal.RECIPES["llamacpp"], "gpu_id", n_starts
        ),
    }


def summary_rows(label: str, table: pd.DataFrame) -> list[dict]:
    rows = []
    for metric, r in overall(table).iterrows():
        rows.append(
            {
                "model": label,
                "metric": metric,
                "n": int(r["n"]),
                "median abs err": pct(r["median_abs_pct"]),
                "p90 abs err": pct(r["p90_abs_pct"]),
                "median signed": signed(r["median_signed_pct"]),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="refit and rewrite the profiles")
    parser.add_argument("--quick", action="store_true", help="one start per CV fit")
    args = parser.parse_args(argv)
    start = time.time()
    pd.set_option("display.width", 160)
    catalog = load_catalog()
    measurements = cal.load_measurements(cal.DEFAULT_CSV, catalog)
    if args.write:
        refit_and_write(measurements, catalog, dt.date.today().isoformat())
        catalog = load_catalog()

    used = cal.usable(measurements)
    print(f"# Performance-model accuracy on {cal.DEFAULT_CSV.relative_to(ROOT)}\n")
    print(f"{len(measurements)} rows, {len(used)} usable; skipped:")
    skipped = measurements[measurements["skip_reason"] != ""]
    for reason, ids in skipped.groupby("skip_reason")["row_id"]:
        print(f"  - {reason}: rows {', '.join(map(str, ids))}")
    metric_skips = measurements[measurements["metric_skips"] != ""]
    for reason, ids in metric_skips.groupby("metric_skips")["row_id"]:
        print(f"  - (metric only) {reason}: rows {', '.join(map(str, ids))}")

    profiles = engine_profiles(catalog)
    server = used["engine"].isin(cal.SERVER_ENGINES)
    ours_server = cal.predict(used[server], catalog, catalog.engines["vllm"])
    ours_all = cal.predict(used, catalog, profiles)
    ideal_all = cal.predict(used, catalog, None, ideal=True)
    ideal_server = ideal_all[ideal_all["engine"].isin(cal.SERVER_ENGINES)]

    for name in ("vllm", "trtllm", "llamacpp"):
        if name in catalog.engines:
            d = catalog.engines[name].default
            print(
                f"\n{name} default: eta_mem {d.eta_mem}, eta_compute_decode "
                f"{d.eta_compute_decode}, eta_compute_prefill {d.eta_compute_prefill}, "
                f"allreduce {d.allreduce_latency_us} us, step overhead {d.step_overhead_ms} "
                f"ms, prefill overhead {d.prefill_overhead_ms} ms; families "
                f"{sorted(catalog.engines[name].families) or '-'}"
            )

    t_ours_server = cal.error_table(ours_server)
    t_ours_all = cal.error_table(ours_all)
    t_ideal_server = cal.error_table(ideal_server)
    t_ideal_all = cal.error_table(ideal_all)
    show("Shipped vllm profile (the default) on the server-engine rows", t_ours_server)
    show("Shipped profiles, each row with its engine's profile (all usable rows)", t_ours_all)
    show(
        "Pure roofline (ideal: eta = 1, no overheads), server-engine rows", t_ideal_server, ("all",)
    )
    show("Pure roofline, all usable rows", t_ideal_all, ("all", "source"))

    thr = ours_server[ours_server["meas_throughput"].notna()]
    ratio = thr["throughput_serving_model"] / thr["meas_throughput"] - 1.0
    print("\n## Throughput through evaluate()'s serving rate (per-request prefill), vllm profile\n")
    print(
        f"n {len(ratio)}, median abs {pct(ratio.abs().median() * 100)}, p90 abs "
        f"{pct(np.percentile(ratio.abs(), 90) * 100)}, median signed "
        f"{signed(ratio.median() * 100)} (vs the batched-prefill prediction above)"
    )

    split = measurements[
        measurements["skip_reason"].str.contains("layer", na=False) & measurements["gpu_id"].notna()
    ]
    if not split.empty and "llamacpp" in catalog.engines:
        lay = cal.predict(split, catalog, catalog.engines["llamacpp"])
        err = cal.long_errors(lay, include_skipped=True)
        print(
            "\nllama.cpp layer-split rows (not fitted; predicted as one sequential device): "
            + ", ".join(
                f"{m} median abs {pct(g['abs_pct'].median())} (n {len(g)})"
                for m, g in err.groupby("metric")
            )
        )

    cv = cross_validation(measurements, catalog, 1 if args.quick else 3)
    cv_tables = {k: cal.error_table(v) for k, v in cv.items()}
    for title, table in cv_tables.items():
        show(
            f"Cross-validation: {title}",
            table,
            ("all", "source") if "source" in title else ("all", "gpu"),
        )

    print("\n## Markdown summary (for the README)\n")
    rows = (
        summary_rows("pure roofline (server rows)", t_ideal_server)
        + summary_rows("shipped vllm profile (server rows)", t_ours_server)
        + summary_rows("vllm recipe, leave-one-source-out", cv_tables[next(iter(cv_tables))])
        + summary_rows(
            "pure roofline (llama.cpp rows)",
            cal.error_table(ideal_all[ideal_all["engine"] == "llamacpp"]),
        )
        + summary_rows(
            "shipped llamacpp profile", cal.error_table(ours_all[ours_all["engine"] == "llamacpp"])
        )
        + summary_rows(
            "llamacpp recipe, leave-one-GPU-out", cv_tables["llamacpp, leave one GPU out"]
        )
    )
    print(md_table(pd.DataFrame(rows)))
    print(
        "\nSigned error = predicted/measured - 1: negative latency or positive throughput "
        "means the model is optimistic."
    )
    opt_ideal = overall(t_ideal_server)["median_optimism_pct"]
    opt_ours = overall(t_ours_server)["median_optimism_pct"]
    print(
        "\nMedian optimism (how much faster than measured the model predicts; server rows): "
        + "; ".join(
            f"{m}: pure roofline {signed(opt_ideal.get(m))}, ours {signed(opt_ours.get(m))}"
            for m in opt_ideal.index
        )
    )
    print(f"\n(ran in {time.time() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
