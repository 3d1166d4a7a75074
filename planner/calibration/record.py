"""An engine profile's accuracy record (issue #10): its measured error in and out of sample,
tied by digests to the constants and the data it was measured with.

`benchmarks/accuracy.py --record` cross-validates and calls `accuracy_record`; the shipped
profiles carry the result (`EngineProfile.accuracy`), which `planner estimate` and
`planner solve` print beside their predictions (planning.accuracy).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import pandas as pd

from planner.calibration.aic import AIC_CSV
from planner.calibration.measurements import DEFAULT_CSV
from planner.schema.engine import EngineProfile, ErrorStat, FoldErrors, ProfileAccuracy

# metric -> (rows, median |%|, p90 |%|, p90 optimism %), as benchmarks/accuracy.py's
# `errors` gives them (scoring.error_table's columns)
Errors = Mapping[str, tuple[int, float, float, float]]
FAMILY_FOLD = "leave-one-GPU-family-out (strict)"
RECORDED_FOLDS = ("leave-one-model-out", "leave-one-GPU-out", FAMILY_FOLD)
RECORD_SOURCE = (
    "benchmarks/accuracy.py --record: {evaluations} on the public rows of "
    "data/calibration (measured_public.csv, aic_silicon_public.csv; SOURCES.md); {rows} rows "
    "fitted"
)


def data_sha256() -> str:
    """A digest of the calibration data the shipped profiles are fitted and scored on."""
    digest = hashlib.sha256()
    for path in (DEFAULT_CSV, AIC_CSV):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def fold_errors(errors: Errors) -> FoldErrors:
    """One evaluation's errors as the profile stores them (metrics without rows left out)."""
    stats = {
        metric: ErrorStat(
            median_pct=round(med, 1),
            p90_pct=round(p90, 1),
            rows=n,
            margin_p90_pct=round(max(optimism, 0.0), 1),  # a model slow at p90 needs none
        )
        for metric, (n, med, p90, optimism) in errors.items()
        if metric in FoldErrors.model_fields and n > 0
    }
    return FoldErrors(**stats)


def accuracy_record(
    profile: EngineProfile,
    fitted_rows: pd.DataFrame,
    in_sample: Errors,
    folds: Mapping[str, Errors],
    today: str,
) -> ProfileAccuracy:
    """The record of `profile`: its in-sample errors on `fitted_rows` (the rows its recipe
    fits), and the leave-one-model-out, leave-one-GPU-out and strict leave-one-GPU-family-out
    folds given in `folds` (evaluation label -> errors)."""
    lomo, logpu = folds.get("leave-one-model-out"), folds.get("leave-one-GPU-out")
    logfo = folds.get(FAMILY_FOLD)
    names = ["in sample", *(k for k in RECORDED_FOLDS if k in folds)]
    return ProfileAccuracy(
        as_of=today,
        source=RECORD_SOURCE.format(evaluations=", ".join(names), rows=len(fitted_rows)),
        constants_sha256=profile.constants_sha256(),
        data_sha256=data_sha256(),
        models=tuple(sorted(fitted_rows["model_id"].dropna().unique())),
        gpus=tuple(sorted(fitted_rows["gpu_id"].dropna().unique())),
        in_sample=fold_errors(in_sample),
        leave_one_model_out=None if lomo is None else fold_errors(lomo),
        leave_one_gpu_out=None if logpu is None else fold_errors(logpu),
        leave_one_family_out=None if logfo is None else fold_errors(logfo),
    )
