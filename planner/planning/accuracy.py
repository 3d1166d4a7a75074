"""How far off a prediction is likely to be (issue #10): the engine profile's measured error
for this model and GPU, and how close a plan's predictions sit to its SLAs.

The figures are the profile's accuracy record (`EngineProfile.accuracy`, written by
`benchmarks/accuracy.py --record`): median and 90th-percentile absolute % error on public
measurements, in sample and out of sample. Which one applies depends on whether the model
and the GPU are among the rows the profile was fitted on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from planner.errors import InputError
from planner.inputs.catalog import Catalog
from planner.perf.table import Table, mapped
from planner.schema.engine import EngineProfile, ErrorStat, FoldErrors, ProfileAccuracy
from planner.schema.plan import Deployment, RequestClassPlan

if TYPE_CHECKING:  # a solve of one scenario never loads the platform schema (test_imports)
    from planner.schema.platform import Platform
    from planner.schema.scenario import Scenario

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
MARGIN_CATEGORY = "prediction margin"  # the factors a plan at the p90 margin applied
_Searched = TypeVar("_Searched", "Scenario", "Platform")  # what has a `search` section


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
    """The largest prediction whose measured value stayed under `sla` in 90% of the profile's
    measured rows: there a latency was measured at most predicted x (1 + margin_p90), so a
    prediction holds when it is at most sla / (1 + margin_p90)."""
    return sla / (1.0 + stat.margin_p90_pct / 100.0)


def _closeness(
    label: str, predicted: float, sla: float | None, stat: ErrorStat | None, where: str, field: str
) -> str | None:
    """A clause when `predicted` would miss `sla` at the p90 margin, else None."""
    if sla is None or stat is None or not math.isfinite(predicted) or predicted <= 0:
        return None
    target = safe_target(sla, stat)
    if predicted <= target:
        return None
    headroom = 1.0 - predicted / sla
    bound = f"{math.floor(target * 10.0) / 10.0:,.1f}".removesuffix(".0")  # down: it must hold
    return (
        f"{label} {predicted:,.1f} ms is {headroom:.0%} under the {sla:,.0f} ms SLA ({where}), "
        f"and in 10% of the profile's measured rows the {label} was more than "
        f"{stat.margin_p90_pct:g}% over its prediction; {field} {bound} would hold it "
        "there (or plan with search.prediction_margin: p90)"
    )


def sla_notes(
    errors: dict[str, ExpectedError | None],
    engine: str,
    fleet: tuple[Deployment, ...],
    classes: tuple[RequestClassPlan, ...],
    margins: Mapping[str, Margin] | None = None,
) -> list[str]:
    """The plan's notes on prediction error: per GPU of the fleet, the error that applies,
    and each line whose predicted TPOT or TTFT would miss its SLA at the p90 margin; or, when
    the plan is made at the margin (`margins`), the factors it was made at."""
    notes = []
    for gpu in dict.fromkeys(d.gpu for d in fleet):
        err = errors.get(gpu)
        if margins and gpu in margins:
            notes.append(f"{describe(err, engine)}. {_margin_text(margins[gpu])}")
            continue
        lines = [d for d in fleet if d.gpu == gpu]
        close = [] if err is None else _close_to_sla(err, lines, classes)
        notes.append(describe(err, engine) + (". " + "; ".join(close) if close else ""))
    return notes


def _margin_text(margin: Margin) -> str:
    """How one GPU's predictions were scaled to plan to the p90 margin."""
    return (
        f"Planned to the p90 margin (search.prediction_margin: p90): every TPOT, TTFT and "
        f"capacity on {margin.error.gpu} is the prediction's TPOT x{margin.tpot:.2f}, TTFT "
        f"x{margin.ttft:.2f} and throughput /{margin.throughput:.2f}, which covered 90% of the "
        "measured rows"
    )


def _close_to_sla(
    err: ExpectedError, lines: list[Deployment], classes: tuple[RequestClassPlan, ...]
) -> list[str]:
    """A clause for each line's TPOT or TTFT, per class, that would miss its SLA at the p90
    margin."""
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


def gpu_notes(
    catalog: Catalog, engine: str, model_id: str, gpus: Iterable[str], margin: str = "none"
) -> list[str]:
    """One note per GPU (in order, once each) on the error the engine's predictions of the
    model on it carry, and the factors they were planned at under `margin` 'p90': for
    answers without per-class SLA lines to flag (capacity, jobs)."""
    errors = prediction_errors(catalog, engine, model_id, gpus)
    margins = planning_margins(errors, engine, margin)
    return [
        describe(err, engine) + (f". {_margin_text(margins[gpu])}" if gpu in margins else "")
        for gpu, err in errors.items()
    ]


def assumption_rows(profile: EngineProfile) -> list[tuple]:
    """The record as Assumptions rows (planning.assumptions.COLUMNS): each evaluation's median
    and p90 absolute % error and p90 margin per metric (none when it was measured on other
    constants)."""
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
            for name, value in (
                ("median |error|", stat.median_pct),
                ("p90 |error|", stat.p90_pct),
                ("p90 margin", stat.margin_p90_pct),  # what prediction_margin p90 plans to
            ):
                field = f"{metric} {name} ({stat.rows} rows)"
                rows.append(
                    (ASSUMPTION_CATEGORY, item, field, value, "%", acc.source, acc.as_of, False)
                )
    return rows


# ---- planning to the error (search.prediction_margin) -------------------------------------
# the candidate table's columns a margin scales: latencies (ms) by the TPOT or the TTFT
# factor, rates divided by the throughput one and costs per unit of work times it
_SCALED = {
    "tpot": ("tpot_ms", "tpot_step_ms"),
    "ttft": ("ttft_ms", "ttft_unloaded_ms", "ttft_scheduler_lag_ms", "prefill_share_ms"),
}
_RATES = ("requests_per_s", "capacity_requests_per_s", "throughput_tok_s", "total_tok_s")
_COSTS = ("cost_per_request_usd", "cost_per_1k_output_tokens_usd")


@dataclass(frozen=True)
class Margin:
    """The factors one GPU's predictions are planned at under `prediction_margin: p90`: the
    TPOT and the TTFT times, the throughput divided by, 1 + the record's 90th-percentile
    margin (`ErrorStat.margin_p90_pct`; 1 where the record does not measure the metric)."""

    error: ExpectedError
    tpot: float
    ttft: float
    throughput: float


def margin_of(err: ExpectedError) -> Margin:
    """The p90 margin factors of the error that applies to one model on one GPU."""

    def factor(stat: ErrorStat | None) -> float:
        return 1.0 if stat is None else 1.0 + stat.margin_p90_pct / 100.0

    return Margin(err, factor(err.tpot), factor(err.ttft), factor(err.throughput))


def margin_assumption_rows(margins: Iterable[Margin]) -> list[tuple]:
    """The factors a plan at the p90 margin applied, one GPU at a time, as Assumptions rows
    (planning.assumptions.COLUMNS), so a reader sees what the fleet was sized to."""
    rows = []
    for m in margins:
        e = m.error
        item = f"{e.engine}/{e.model} on {e.gpu}"
        source = f"{e.source}: {e.label}"
        for field, factor in (
            ("TPOT factor (x predicted)", m.tpot),
            ("TTFT factor (x predicted)", m.ttft),
            ("throughput factor (predicted / this)", m.throughput),
        ):
            rows.append(
                (MARGIN_CATEGORY, item, field, round(factor, 4), "x", source, e.as_of, False)
            )
    return rows


@dataclass(frozen=True)
class MarginBounds:
    """One answer's figures at the p90 margin: the TPOT and TTFT its measurement stayed under,
    and the throughput it stayed over, in 90% of the profile's measured rows (None where
    the record lacks the metric or the prediction is undefined)."""

    tpot_ms: float | None
    ttft_ms: float | None
    throughput_tok_s: float | None


def at_margin(
    err: ExpectedError, tpot_ms: float, ttft_ms: float, throughput_tok_s: float
) -> MarginBounds:
    """`estimate`'s predictions taken to the p90 margin of the error that applies."""
    m = margin_of(err)

    def bound(value: float, stat: ErrorStat | None, factor: float) -> float | None:
        return value * factor if stat is not None and math.isfinite(value) else None

    return MarginBounds(
        tpot_ms=bound(tpot_ms, err.tpot, m.tpot),
        ttft_ms=bound(ttft_ms, err.ttft, m.ttft),
        throughput_tok_s=bound(throughput_tok_s, err.throughput, 1.0 / m.throughput),
    )


def planning_margins(
    errors: Mapping[str, ExpectedError | None], engine: str, kind: str
) -> dict[str, Margin]:
    """Each GPU of `errors` (`prediction_errors`) -> the factors its predictions are planned
    at (none for kind 'none'); exit 2 when the engine's profile has no accuracy record for
    its constants."""
    if kind == "none":
        return {}
    if any(err is None for err in errors.values()):
        raise InputError(
            f"search.prediction_margin: {kind} plans to the error the {engine} profile's "
            "accuracy record measured, and it has none for its constants (a profile `planner "
            "calibrate` wrote, or one edited since `benchmarks/accuracy.py --record`); set "
            "search.prediction_margin: none, or tighten the SLA by hand"
        )
    return {gpu: margin_of(err) for gpu, err in errors.items() if err is not None}


def with_margin_setting(scenario: _Searched, kind: str | None) -> _Searched:
    """A scenario (or platform) with `search.prediction_margin` set to `kind` (unchanged for
    None): `solve --prediction-margin` and the plan to the predictions a margin is priced by."""
    if kind is None:
        return scenario
    search = scenario.search.model_copy(update={"prediction_margin": kind})
    return scenario.model_copy(update={"search": search})


def margin_cost_note(
    planned: str, bare_name: str, proven: bool, margined: tuple[float, int], bare: tuple[float, int]
) -> str:
    """What planning to the p90 margin costs: `planned` names what was planned ('' or 'every
    model'), `bare_name` the plan to the predictions; (cost a month, GPUs) of each. That it is
    not priced when either plan is not proven optimal."""
    if not proven:
        return (
            "what the prediction margin costs is not priced: the solver stopped before proving "
            "both plans optimal (raise solver.time_limit_s or solver.max_nodes)"
        )
    (cost, gpus), (bare_cost, bare_gpus) = margined, bare
    subject = f"{planned} " if planned else ""
    return (
        f"planning {subject}to the p90 prediction margin costs ${cost - bare_cost:,.0f} a month "
        f"({bare_name}: ${bare_cost:,.0f} a month, {bare_gpus} GPUs, against {gpus})"
    )


def with_margins(rows: Table, margins: Mapping[str, Margin]) -> Table:
    """Evaluated candidates as planned at their GPU's margin: latencies longer, rates lower,
    costs per request and per token higher (rows of a GPU without one unchanged)."""
    if not margins or rows.empty:
        return rows

    def factor(metric: str) -> np.ndarray:
        by_gpu = {gpu: getattr(m, metric) for gpu, m in margins.items()}
        return mapped(rows, "gpu", by_gpu, missing=1.0)

    scaled = {
        name: np.asarray(rows[name], dtype=float) * factor(metric)
        for metric, names in _SCALED.items()
        for name in names
    }
    slower = factor("throughput")
    scaled.update({name: np.asarray(rows[name], dtype=float) / slower for name in _RATES})
    scaled.update({name: np.asarray(rows[name], dtype=float) * slower for name in _COSTS})
    return rows.assign(**scaled)
