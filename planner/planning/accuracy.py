"""How far off a prediction is likely to be (issue #10): the engine profile's measured error
for this model and GPU, and how close a plan's predictions sit to its SLAs.

The figures are the profile's accuracy record (`EngineProfile.accuracy`, written by
`benchmarks/accuracy.py --record`): median and 90th-percentile absolute % error on public
measurements, in sample and out of sample. Which one applies depends on whether the model
and the GPU are among the rows the profile was fitted on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from planner.inputs.catalog import Catalog
from planner.schema.engine import EngineProfile, ErrorStat, FoldErrors, ProfileAccuracy
from planner.schema.plan import Deployment, RequestClassPlan

IN_SAMPLE = "in sample"
MODEL_OUT = "leave-one-model-out"
GPU_OUT = "leave-one-GPU-out"
FAMILY_OUT = "leave-one-GPU-family-out"
METRICS = tuple(FoldErrors.model_fields)  # tpot, ttft, throughput
LABELS = {  # evaluation -> how the text names it
    IN_SAMPLE: "in sample",
    MODEL_OUT: "a model left out of its fit",
    GPU_OUT: "a GPU left out of its fit",
    FAMILY_OUT: "a GPU family left out of its fit",
}
ASSUMPTION_CATEGORY = "prediction error"


@dataclass(frozen=True)
class ExpectedError:
    """The measured error of the engine's profile that applies to one model on one GPU: the
    larger, per metric, of the folds that leave out what its fit lacks (in sample when it
    lacks nothing)."""

    engine: str
    model: str
    gpu: str
    model_in_fit: bool
    gpu_in_fit: bool
    family_in_fit: bool
    evaluation: str  # IN_SAMPLE, or the folds used joined by " + "
    missing: tuple[str, ...]  # folds it needs that the record lacks
    tpot: ErrorStat | None
    ttft: ErrorStat | None
    throughput: ErrorStat | None
    as_of: str
    source: str

    @property
    def label(self) -> str:
        """The evaluation in words: 'in sample', 'a model left out of its fit', ..."""
        names = self.evaluation.split(" + ")
        if len(names) == 1:
            return LABELS[names[0]]
        return "the larger of " + " and ".join(LABELS[n] for n in names)

    @property
    def why(self) -> str:
        """Why these figures apply, and when they are likely low, in a user's words."""
        if self.model_in_fit and self.gpu_in_fit:
            return f"{self.model} and {self.gpu} are both in the rows it is fitted on"
        lacks = []
        if not self.model_in_fit:
            lacks.append(f"{self.model} is not among the models it is fitted on")
        if not self.gpu_in_fit:
            family = "" if self.family_in_fit else ", nor any GPU of its family"
            lacks.append(f"{self.gpu} is not among the GPUs it is fitted on{family}")
        if len(lacks) > 1:
            lacks.append("each fold leaves only one out, so the error is likely larger")
        if self.missing:
            lacks.append(
                f"its record has no {' or '.join(self.missing)} fold, so the error is likely larger"
            )
        return "; ".join(lacks)


def _larger(a: ErrorStat | None, b: ErrorStat | None) -> ErrorStat | None:
    """The stat with the larger median (either when the other is missing)."""
    if a is None or b is None:
        return a or b
    return a if a.median_pct >= b.median_pct else b


def _needed(acc: ProfileAccuracy, model_in: bool, gpu_in: bool, family_in: bool) -> list:
    """(fold name, its errors or None) for each fold that leaves out what the fit lacks."""
    folds = acc.evaluations()
    names = [MODEL_OUT] if not model_in else []
    if not gpu_in:
        names.append(FAMILY_OUT if not family_in and folds[FAMILY_OUT] is not None else GPU_OUT)
    return [(name, folds[name]) for name in names]


def expected_error(
    profile: EngineProfile, model_id: str, gpu_id: str, catalog: Catalog | None = None
) -> ExpectedError | None:
    """The profile's measured error for `model_id` on `gpu_id`: in sample when both are in
    its fit, else per metric the larger of the folds that leave out what it lacks (a whole
    family when no GPU of `gpu_id`'s family is in it, which needs `catalog`); None without a
    record, or with one measured on other constants than the profile's now."""
    acc = profile.accuracy
    if acc is None or acc.constants_sha256 != profile.constants_sha256():
        return None  # never measured, or measured on constants edited since
    model_in, gpu_in = model_id in acc.models, gpu_id in acc.gpus
    family_in = gpu_in or catalog is None or _family_in(catalog, gpu_id, acc.gpus)
    needed = _needed(acc, model_in, gpu_in, family_in)
    used = [(name, fold) for name, fold in needed if fold is not None]
    stats: dict[str, ErrorStat | None] = {m: getattr(acc.in_sample, m) for m in METRICS}
    if used:
        stats = {m: None for m in METRICS}
        for _, fold in used:
            stats = {m: _larger(stats[m], getattr(fold, m)) for m in METRICS}
    return ExpectedError(
        engine=profile.id,
        model=model_id,
        gpu=gpu_id,
        model_in_fit=model_in,
        gpu_in_fit=gpu_in,
        family_in_fit=family_in,
        evaluation=" + ".join(name for name, _ in used) or IN_SAMPLE,
        missing=tuple(name for name, fold in needed if fold is None),
        tpot=stats["tpot"],
        ttft=stats["ttft"],
        throughput=stats["throughput"],
        as_of=acc.as_of,
        source=acc.source,
    )


def _family_in(catalog: Catalog, gpu_id: str, fitted: tuple[str, ...]) -> bool:
    """Whether a GPU of `gpu_id`'s family is among the `fitted` GPUs."""
    family = catalog.gpu(gpu_id).family
    return any(catalog.gpus[g].family == family for g in fitted if g in catalog.gpus)


def error_text(err: ExpectedError) -> str:
    """'TPOT 12.6% median, 31% p90; TTFT ...' for the metrics measured."""
    parts = [
        f"{label} {stat.median_pct:g}% median, {stat.p90_pct:g}% p90"
        for label, stat in (("TPOT", err.tpot), ("TTFT", err.ttft), ("throughput", err.throughput))
        if stat is not None
    ]
    return "; ".join(parts)


def describe(err: ExpectedError | None, engine: str) -> str:
    """One paragraph on the error a prediction of this engine's profile carries."""
    if err is None:
        return (
            f"Prediction error: not measured for the {engine} profile's constants (a profile "
            "`planner calibrate` wrote, or one edited after `benchmarks/accuracy.py --record`, "
            "has no record that applies; `planner validate` measures it on your own runs)"
        )
    return (
        f"Prediction error ({err.engine} profile, {err.label}; public "
        f"measurements, {err.as_of}): {error_text(err)}; {err.why}"
    )


def safe_target(sla: float, stat: ErrorStat) -> float:
    """The largest prediction whose measured value stays under `sla` at the p90 error. The
    error is (predicted - measured) / measured, so a prediction p90 low is measured at
    predicted / (1 - p90): it stays under `sla` when predicted <= sla x (1 - p90). Zero when
    the p90 is 100% or more (no prediction bounds it)."""
    return max(sla * (1.0 - stat.p90_pct / 100.0), 0.0)


def _closeness(
    label: str, predicted: float, sla: float | None, stat: ErrorStat | None, where: str, field: str
) -> str | None:
    """A clause when `predicted` sits closer to `sla` than the p90 error, else None."""
    if sla is None or stat is None or not math.isfinite(predicted) or predicted <= 0:
        return None
    headroom = 1.0 - predicted / sla
    if headroom * 100.0 >= stat.p90_pct:
        return None
    inside = "the median" if headroom * 100.0 < stat.median_pct else "the p90"
    text = f"{label} {predicted:,.1f} ms is {headroom:.0%} under the {sla:,.0f} ms SLA ({where})"
    target = safe_target(sla, stat)
    if target <= 0:
        return f"{text}, inside {inside} error (a p90 of {stat.p90_pct:g}%: no SLA holds it)"
    return f"{text}, inside {inside} error; {field} {target:,.0f} would hold it at the p90"


def sla_notes(
    errors: dict[str, ExpectedError | None],
    engine: str,
    fleet: tuple[Deployment, ...],
    classes: tuple[RequestClassPlan, ...],
) -> list[str]:
    """The plan's notes on prediction error: per GPU of the fleet, the error that applies,
    and each line whose predicted TPOT or TTFT is closer to its SLA than the p90 error."""
    notes = []
    for gpu in dict.fromkeys(d.gpu for d in fleet):
        err = errors.get(gpu)
        lines = [d for d in fleet if d.gpu == gpu]
        close = [] if err is None else _close_to_sla(err, lines, classes)
        notes.append(describe(err, engine) + (". " + "; ".join(close) if close else ""))
    return notes


def _close_to_sla(
    err: ExpectedError, lines: list[Deployment], classes: tuple[RequestClassPlan, ...]
) -> list[str]:
    """A clause for each line's TPOT or TTFT, per class, closer to its SLA than the p90."""
    out = []
    for d in lines:
        for cl in classes:
            where = f"class {cl.name} on {d.gpu}"
            tpot = d.tpot_ms_by_class.get(cl.name, math.nan)
            ttft = d.ttft_ms_by_class.get(cl.name, math.nan)
            found = (
                _closeness("TPOT", tpot, cl.tpot_ms, err.tpot, where, "tpot_ms"),
                _closeness("TTFT", ttft, cl.ttft_ms, err.ttft, where, "ttft_ms"),
            )
            out += [c for c in found if c]
    return out


def prediction_errors(
    catalog: Catalog, engine: str, model_id: str, gpus: Iterable[str]
) -> dict[str, ExpectedError | None]:
    """Each GPU (in order, once each) -> the engine profile's measured error for the model on
    it."""
    profile = catalog.engine(engine)
    return {gpu: expected_error(profile, model_id, gpu, catalog) for gpu in dict.fromkeys(gpus)}


def gpu_notes(catalog: Catalog, engine: str, model_id: str, gpus: Iterable[str]) -> list[str]:
    """One note per GPU (in order, once each) on the error the engine's predictions of the
    model on it carry: for answers without per-class SLA lines to flag (capacity, jobs)."""
    errors = prediction_errors(catalog, engine, model_id, gpus)
    return [describe(err, engine) for err in errors.values()]


def assumption_rows(profile: EngineProfile) -> list[tuple]:
    """The record as Assumptions rows (planning.assumptions.COLUMNS): each evaluation's median
    and p90 absolute % error per metric (none when it was measured on other constants)."""
    acc = profile.accuracy
    if acc is None or acc.constants_sha256 != profile.constants_sha256():
        return []
    rows = []
    for evaluation, folds in acc.evaluations().items():
        for metric in METRICS:
            stat = None if folds is None else getattr(folds, metric)
            if stat is None:
                continue
            item = f"{profile.id}/{evaluation}"
            for name, value in (("median", stat.median_pct), ("p90", stat.p90_pct)):
                field = f"{metric} {name} |error| ({stat.rows} rows)"
                rows.append(
                    (ASSUMPTION_CATEGORY, item, field, value, "%", acc.source, acc.as_of, False)
                )
    return rows
