"""Accuracy of the performance model on the public measurements, per engine, in and out of sample.

Reads data/calibration/measured_public.csv and data/calibration/aic_silicon_public.csv (never
/work/shared) and prints:

1. rows used and skipped (by reason) of each set;
2. in-sample errors of the shipped profiles (catalogs/engines/*.yaml), each row with its
   engine's profile: median and 90th-percentile absolute % error of TPOT, TTFT, throughput
   (and end-to-end latency where measured), per engine; the pure roofline for comparison;
3. out of sample, per engine recipe (vllm, sglang, trtllm): leave-one-source-out,
   leave-one-model-out and leave-one-GPU-family-out, the latter twice: strict (the family's
   rows of every engine out) and with other engines' rows of the family in (DONOR_FOLDS)
   and leave-one-GPU-out (one GPU type out, the rest of its family in; llama.cpp only this
   one, its rows are one source and one family); each fold refits the recipe without the
   group and scores the group's rows;
4. the Markdown tables of the README's "Accuracy" section.

    python benchmarks/accuracy.py              # score the shipped profiles, cross-validate
    python benchmarks/accuracy.py --write      # refit, rewrite catalogs/engines/*.yaml first
    python benchmarks/accuracy.py --write --write-only vllm --no-cv   # refit one recipe
    python benchmarks/accuracy.py --no-cv      # in-sample only (seconds, not minutes)
    python benchmarks/accuracy.py --jobs 2     # cross-validation folds in 2 processes
    python benchmarks/accuracy.py --folds leave-one-model-out,leave-one-GPU-family-out
    python benchmarks/accuracy.py --folds "leave-one-GPU-family-out (others' rows in)"
    python benchmarks/accuracy.py --folds leave-one-source-out --engines trtllm   # one fold
    python benchmarks/accuracy.py --folds leave-one-model-out --engines trtllm --by model_id
    python benchmarks/accuracy.py --record --jobs 2 \
        --folds leave-one-model-out,leave-one-GPU-out,leave-one-GPU-family-out
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner import calibration as cal  # noqa: E402
from planner.calibration import record as cal_record  # noqa: E402
from planner.calibration.record import accuracy_record  # noqa: E402
from planner.calibration.transfer import TRANSFER_MIN_MODELS  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402

ENGINE_DIR = ROOT / "catalogs" / "engines"
HEADER = (
    "{id} efficiency constants of the performance model (docs: MODEL.md), fitted on public\n"
    "measurements by `python benchmarks/accuracy.py --write` (planner.calibration, recipe\n"
    "'{id}'); do not edit by hand: change the recipe or the data and refit.\n"
    "Accuracy and cross-validation: `python benchmarks/accuracy.py`."
)
ENGINES = ("vllm", "sglang", "trtllm", "llamacpp")
SERVER_RECIPES = ("vllm", "sglang", "trtllm")
FOLDS = {  # evaluation label -> the measurement column whose groups are left out (cheapest first)
    "leave-one-GPU-family-out (strict)": "gpu_family",
    "leave-one-GPU-family-out (others' rows in)": "gpu_family",
    "leave-one-model-out": "model_id",
    "leave-one-source-out": "source_key",
    # issue #10's "leave-one-GPU-out": one GPU type out, its family's other types in ("a new
    # card of a family we know"); the family folds above ask the harder "a new family"
    "leave-one-GPU-out": "gpu_id",
}
# Leaving GPU family F out of engine X's fit, two questions (never mix their figures up):
# * strict: F's rows of every engine are out of what predicts X's F rows (no other engine's
#   fit is used at all): "nobody has measured this family yet".
# * others' rows in: X's rows of F are out, other engines' rows of F are in: their shipped
#   profiles (fitted on their own rows, F's among them, none of X's) are donors, and a fold
#   fitted on fewer than calibration.transfer.TRANSFER_MIN_MODELS models takes F's
#   constants from them: "my engine has no measurements on this family, others do".
DONOR_FOLDS = frozenset({"leave-one-GPU-family-out (others' rows in)"})
FOLD_ALIASES = {"leave-one-GPU-family-out": "leave-one-GPU-family-out (strict)"}
METRICS = ("tpot", "ttft", "throughput")
RECORDED = cal_record.RECORDED_FOLDS  # the folds a profile's record holds
TARGETS = {"tpot": 10.0, "throughput": 12.0, "ttft": 25.0}


def md_table(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table (no tabulate dependency)."""
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(str(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def pct(x: float) -> str:
    """A percentage cell, '-' when missing."""
    return "-" if pd.isna(x) else f"{x:.0f}%"


def load(catalog) -> pd.DataFrame:
    """Both sets, with each row's GPU family (for the leave-one-family-out folds)."""
    rows = cal.load_all_measurements(catalog)
    fam = {g: catalog.gpu(g).family for g in rows["gpu_id"].dropna().unique()}
    rows["gpu_family"] = rows["gpu_id"].map(fam)
    return rows


def report_rows(rows: pd.DataFrame) -> None:
    """Rows used and skipped, by reason, per set."""
    for name, part in rows.groupby("dataset"):
        used = cal.usable(part)
        print(f"\n{name}: {len(part)} rows, {len(used)} used; by engine:")
        print("  " + ", ".join(f"{e} {n}" for e, n in used["engine"].value_counts().items()))
        skipped = part[part["skip_reason"] != ""]
        print(f"  skipped {len(skipped)}, by reason:")
        for reason, n in skipped["skip_reason"].value_counts().items():
            print(f"    {n:4d}  {reason}")


def profiles(catalog) -> dict:
    """Each row's engine -> its shipped profile (vllm for engines without one)."""
    out = {"*": catalog.engines["vllm"]}
    out.update({k: catalog.engines[k] for k in ENGINES if k in catalog.engines})
    return out


def refit_and_write(
    rows: pd.DataFrame, catalog, today: str, only: tuple[str, ...] | None = None
) -> None:
    """Refit every recipe (or those in `only`) and rewrite catalogs/engines/<id>.yaml."""
    print("Refitting the shipped profiles ...")
    fitted = cal.fit_shipped_profiles(rows, catalog, today, only=only)
    for rid, (profile, report) in fitted.items():
        path = cal.write_profile(profile, ENGINE_DIR / f"{rid}.yaml", HEADER.format(id=rid))
        rep = report["default"]
        print(
            f"  wrote {path.relative_to(ROOT)}: {len(report['row_ids'])} rows, "
            f"rms log error {rep.get('rms_log_after', float('nan')):.3f}"
        )


def errors(pred: pd.DataFrame) -> dict[str, tuple[int, float, float, float]]:
    """metric -> (n, median abs %, p90 abs %, p90 optimism %: the unsafe-side margin)."""
    table = cal.error_table(pred)
    part = table[table["by"] == "all"].set_index("metric")
    return {
        m: (
            int(r["n"]),
            float(r["median_abs_pct"]),
            float(r["p90_abs_pct"]),
            float(r["p90_optimism_pct"]),
        )
        for m, r in part.iterrows()
    }


def _fold(args: tuple) -> tuple[str, str, pd.DataFrame]:
    """One engine x leave-out kind: the held-out predictions (runs in a worker process)."""
    engine, label, col, n_starts, min_models = args
    catalog = load_catalog()
    rows = load(catalog)
    start = catalog.engines.get(engine)  # warm start: the shipped fit on all rows
    donors = (
        {k: catalog.engines[k] for k in SERVER_RECIPES if k != engine and k in catalog.engines}
        if label in DONOR_FOLDS
        else None
    )
    pred = cal.cross_validate(
        rows, catalog, cal.RECIPES[engine], col, n_starts, start, donors, min_models
    )
    return engine, label, pred


def cross_validation(
    jobs: int,
    n_starts: int,
    folds: tuple[str, ...] = tuple(FOLDS),
    engines: tuple[str, ...] = SERVER_RECIPES,
    min_models: int = TRANSFER_MIN_MODELS,
) -> dict[tuple[str, str], pd.DataFrame]:
    """(engine, evaluation) -> held-out predictions, the recipes in `engines` and the leave-out
    kinds named in `folds` (labels of FOLDS; llama.cpp's leave-one-GPU-out with all of them)."""
    tasks = [(e, lab, FOLDS[lab], n_starts, min_models) for lab in folds for e in engines]
    if "leave-one-GPU-out" in folds and set(engines) == set(SERVER_RECIPES):
        tasks.insert(0, ("llamacpp", "leave-one-GPU-out", "gpu_id", n_starts, min_models))
    out = {}
    with ProcessPoolExecutor(max(jobs, 1)) as pool:
        for engine, label, pred in pool.map(_fold, tasks):
            out[(engine, label)] = pred
            errs = errors(pred)
            cells = [f"{m} {pct(errs[m][1])} / {pct(errs[m][2])}" for m in METRICS if m in errs]
            print(f"  done: {engine}, {label}: " + "; ".join(cells), flush=True)
            if label in DONOR_FOLDS and "fit_note" in pred:
                for group, note in pred.groupby("held_out")["fit_note"].first().items():
                    moved = [p for p in str(note).split("; ") if "pooled from" in p]
                    print(f"    {group}: " + (moved[0] if moved else "own constants"))
    return out


def by_group(pred: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Held-out rows per group of `cols`: n, the median |% error| of each metric and the
    signed median % error (negative: predicted fast or low), to see which group sets a
    fold's median."""
    pct_err = {m: (pred[f"pred_{m}"] / pred[f"meas_{m}"] - 1.0) * 100.0 for m in METRICS}
    frame = pred[cols].assign(**{f"e_{m}": e for m, e in pct_err.items()})
    agg: dict[str, tuple[str, object]] = {"n": (f"e_{METRICS[0]}", "size")}
    for m in METRICS:
        agg[f"{m} |%|"] = (f"e_{m}", lambda x: x.abs().median())
        agg[f"{m} signed"] = (f"e_{m}", "median")
    return frame.groupby(cols, observed=True).agg(**agg).round(1)


def summary(results: dict[tuple[str, str], dict]) -> pd.DataFrame:
    """One row per engine x evaluation: n and median / p90 of each metric."""
    out = []
    for (engine, label), errs in results.items():
        row = {"engine": engine, "evaluation": label}
        for m in METRICS:
            n, med, p90, _ = errs.get(m, (0, float("nan"), float("nan"), float("nan")))
            row[m] = f"{pct(med)} / {pct(p90)} (n {n})" if n else "-"
        out.append(row)
    return pd.DataFrame(out)


def targets_met(results: dict[tuple[str, str], dict]) -> list[str]:
    """Out-of-sample medians against the issue's targets, one line per engine x fold."""
    lines = []
    for (engine, label), errs in results.items():
        if label in ("in-sample", "pure roofline") or engine not in SERVER_RECIPES:
            continue
        cells = []
        for m, target in TARGETS.items():
            if m in errs:
                med = errs[m][1]
                cells.append(f"{m} {med:.0f}% {'met' if med <= target else 'NOT met'}")
        lines.append(f"{engine}, {label}: " + "; ".join(cells))
    return lines


def in_sample(rows: pd.DataFrame, catalog) -> dict[tuple[str, str], dict]:
    """In-sample errors of the shipped profiles and of the pure roofline, per engine."""
    used = cal.usable(rows)
    ours = cal.predict(used, catalog, profiles(catalog))
    ideal = cal.predict(used, catalog, None, ideal=True)
    out: dict[tuple[str, str], dict] = {}
    for engine in ENGINES:
        out[(engine, "pure roofline")] = errors(ideal[ideal["engine"] == engine])
        out[(engine, "in-sample")] = errors(ours[ours["engine"] == engine])
    other = ~ours["engine"].isin(ENGINES)
    out[("other (vllm profile)", "in-sample")] = errors(ours[other])
    return out


def record(rows: pd.DataFrame, catalog, results: dict[tuple[str, str], dict], today: str) -> None:
    """Write the accuracy record of every engine cross-validated in `results` into its
    profile (`calibration.record`): constants untouched, the record replaced."""
    used = cal.usable(rows)
    for engine in ENGINES:
        folds = {k: results[(engine, k)] for k in RECORDED if (engine, k) in results}
        if not folds:
            continue
        profile = catalog.engines[engine]
        fitted = used[used["engine"].isin(cal.RECIPES[engine].engines)]
        acc = accuracy_record(profile, fitted, results[(engine, "in-sample")], folds, today)
        path = ENGINE_DIR / f"{engine}.yaml"
        recorded = profile.model_copy(update={"accuracy": acc})
        cal.write_profile(recorded, path, HEADER.format(id=engine))
        print(f"  recorded {path.relative_to(ROOT)}: {', '.join(folds)}")


def _cv_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple:
    """The leave-out kinds and the recipes to cross-validate, checked."""
    folds = tuple(
        FOLD_ALIASES.get(f.strip(), f.strip()) for f in args.folds.split(",") if f.strip()
    )
    if unknown := [f for f in folds if f not in FOLDS]:
        parser.error(f"--folds: unknown {unknown}; allowed: {', '.join(FOLDS)}")
    engines = tuple(e.strip() for e in args.engines.split(",") if e.strip())
    if bad := [e for e in engines if e not in SERVER_RECIPES]:
        parser.error(f"--engines: unknown {bad}; allowed: {', '.join(SERVER_RECIPES)}")
    if args.record and not set(RECORDED) <= set(folds):
        parser.error(f"--record needs the folds {', '.join(RECORDED)}")
    return folds, engines


def main(argv: list[str] | None = None) -> int:
    """Score, cross-validate, print the README tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="refit and rewrite the profiles")
    parser.add_argument(
        "--write-only",
        default="",
        help="with --write: comma-separated recipes to refit (default every recipe)",
    )
    parser.add_argument("--no-cv", action="store_true", help="in-sample errors only")
    parser.add_argument("--jobs", type=int, default=1, help="processes for the CV folds")
    parser.add_argument("--starts", type=int, default=1, help="starts per CV fit")
    parser.add_argument(
        "--folds",
        default=",".join(FOLDS),
        help="comma-separated leave-out kinds (default all): "
        + ", ".join(FOLDS)
        + " ('leave-one-GPU-family-out' means its strict variant)",
    )
    parser.add_argument(
        "--engines",
        default=",".join(SERVER_RECIPES),
        help="comma-separated recipes to cross-validate (default all): "
        + ", ".join(SERVER_RECIPES),
    )
    parser.add_argument(
        "--transfer-min-models",
        type=int,
        default=TRANSFER_MIN_MODELS,
        help="others' rows in: a fold fitted on fewer models than this takes the left-out "
        f"family's constants from the other engines (default {TRANSFER_MIN_MODELS}; a large "
        "number transfers in every fold)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="write each cross-validated engine's accuracy record (in sample, leave-one-model-"
        "out, leave-one-GPU-out, leave-one-GPU-family-out strict) into its profile, which "
        "estimate and solve print (needs those folds)",
    )
    parser.add_argument(
        "--by",
        default="",
        help="comma-separated columns (e.g. model_id,gpu_id): each fold's held-out errors "
        "per group as well",
    )
    args = parser.parse_args(argv)
    start = time.time()
    pd.set_option("display.width", 160)
    catalog = load_catalog()
    rows = load(catalog)
    by = [c.strip() for c in args.by.split(",") if c.strip()]
    if missing := [c for c in by if c not in rows]:
        parser.error(f"--by: no column {missing}; e.g. model_id, gpu_id, source_key")
    if args.write:
        only = tuple(r.strip() for r in args.write_only.split(",") if r.strip()) or None
        if only and (bad := [r for r in only if r not in cal.RECIPES]):
            parser.error(f"--write-only: unknown {bad}; allowed: {', '.join(cal.RECIPES)}")
        refit_and_write(rows, catalog, dt.date.today().isoformat(), only)
        catalog = load_catalog()
    print("# Performance-model accuracy on data/calibration/{measured_public,aic_silicon_public}")
    report_rows(rows)
    results = in_sample(rows, catalog)
    if args.record and args.no_cv:
        parser.error("--record needs the cross-validation (leave out --no-cv)")
    if not args.no_cv:
        folds, engines = _cv_options(args, parser)
        if DONOR_FOLDS & set(folds):
            print(
                "\nOthers' rows in: a fold fitted on fewer than "
                f"{args.transfer_min_models} models takes the left-out family's constants "
                "from the other engines' shipped profiles (calibration.transfer)"
            )
        cv = cross_validation(args.jobs, args.starts, folds, engines, args.transfer_min_models)
        for (engine, label), pred in cv.items():
            results[(engine, label)] = errors(pred)
            if by:
                print(f"\n### {engine}, {label}: held-out errors by {', '.join(by)}\n")
                print(by_group(pred, by).to_string())
    if args.record:
        record(rows, catalog, results, dt.date.today().isoformat())
    table = summary(results).sort_values(["engine", "evaluation"], kind="stable")
    print("\n## Median / p90 absolute error per engine (TPOT, TTFT, throughput)\n")
    print(md_table(table))
    print("\nTargets out of sample (median): TPOT <= 10%, throughput <= 12%, TTFT <= 25%")
    for line in targets_met(results):
        print("  " + line)
    print(f"\n(ran in {time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
