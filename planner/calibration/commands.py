"""What `planner validate` and `planner calibrate` compute: `validation` (predicted vs
measured per row, error per metric) and `calibrate` (`fit_profile` on the user's rows as a
new profile; refuses a fit of more constants than measured values), with the texts and the
JSON of a calibration. The printed text is in `planner.render.calibration`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from planner.calibration.bounds import held_fewer_than_budget, sequences_in_decode
from planner.calibration.fit import FIT_PARAMS, fit_profile, identifiable, support
from planner.calibration.inputs import _option
from planner.calibration.measurements import MEASURED, METRICS, PREDICTED, usable
from planner.calibration.prediction import (
    CLOSED_LOOP_ASSUMPTION,
    EFF_FIELDS,
    SERVING_KINDS,
    WAVE_ASSUMPTION,
    ProfileArg,
    _deployment,
    predict,
)
from planner.calibration.profile_file import profile_document
from planner.calibration.recipes import _fmt_constants
from planner.calibration.scoring import error_table, overall_errors
from planner.errors import InputError, unknown_name_message
from planner.inputs.catalog import Catalog
from planner.schema.engine import EngineProfile

# ---- validate ---------------------------------------------------------------------------


def profiles_for_rows(
    measurements: pd.DataFrame, catalog: Catalog, engine: str | None = None
) -> tuple[ProfileArg, dict[str, str]]:
    """The profile(s) to predict with and engine label -> profile id: `engine` for every
    row, or (None) each row's engine's own profile where the catalog has one and vllm for
    the rest, as benchmarks/accuracy.py does."""
    labels = sorted(set(measurements["engine"]))
    if engine is not None:
        profile = _option("--engine", catalog.engine, engine)
        return profile, {label: engine for label in labels}
    fallback = catalog.engine("vllm")
    mapping = {"*": fallback, **{lb: catalog.engines[lb] for lb in labels if lb in catalog.engines}}
    return mapping, {lb: mapping.get(lb, fallback).id for lb in labels}


def _skipped_records(measurements: pd.DataFrame, pred: pd.DataFrame, catalog: Catalog) -> list:
    out = []
    predicted = set(pred["row_id"])  # once: a set per row made validate quadratic in rows
    for _, r in measurements.iterrows():
        reason = r["skip_reason"]
        if not reason and r["row_id"] not in predicted:
            reason = _deployment(r, catalog)[1] or "no valid deployment"
        if reason:
            out.append({"row_id": int(r["row_id"]), "input": r.get("input", ""), "reason": reason})
    return out


def _metric_record(r: pd.Series) -> dict:
    out = {}
    for m in METRICS:
        meas, pred = float(r[MEASURED[m]]), float(r[PREDICTED[m]])
        if math.isfinite(meas) and math.isfinite(pred):
            out[m] = {
                "measured": meas,
                "predicted": pred,
                "error_pct": (pred / meas - 1.0) * 100.0,
            }
    return out


def _row_record(r: pd.Series, profile_ids: Mapping[str, str], held_fewer: bool) -> dict:
    return {
        "row_id": int(r["row_id"]),
        "input": r.get("input", ""),
        "input_row": int(r.get("input_row", r["row_id"])),
        "source": r["source_key"],
        "engine": r["engine"],
        "profile": profile_ids[r["engine"]],
        "model": r["model_id"],
        "gpu": r["gpu_id"],
        "tp": int(r["tp"]),
        "quant": r["quant_id"],
        "kv_dtype": r["kv_dtype"],
        "batch": float(r["pred_batch"]),
        "input_len": float(r["input_len"]),
        "output_len": float(r["output_len"]),
        "scenario": r["scenario_kind"],
        "metrics": _metric_record(r),
        "assumptions": r["assumptions"],
        "metric_skips": r["metric_skips"],
        "note": _row_note(r, held_fewer),
    }


def _held_note(r: pd.Series) -> str:
    """The note of a closed-loop row that held fewer sequences than its engine's defaults give
    (`bounds.held_fewer_than_budget`): its clients waited for slots the prediction has."""
    in_decode = float(sequences_in_decode(r.to_frame().T)[0])
    held = min(float(r["batch"]), float(r["max_batch"]))
    over = float(r["meas_ttft"]) / float(r["pred_ttft"])
    return (
        f"Little's law puts {in_decode:.1f} of the {float(r['batch']):g} clients' sequences in "
        "decode (C x (O - 1) x TPOT / (TTFT + (O - 1) x TPOT)) where the engine's default "
        f"memory budget would hold {held:g} of them, and the TTFT is {over:.1f}x the "
        "prediction: the run held fewer sequences than the defaults give (a lower memory "
        "fraction, a cap on running sequences, or memory in other use?), so its clients "
        "waited for slots the prediction does not see"
    )


def _row_note(r: pd.Series, held_fewer: bool) -> str:
    notes = [str(r.get("predict_note", "") or "")]
    if held_fewer:
        notes.append(_held_note(r))
    if r["scenario_kind"] in SERVING_KINDS and not bool(r["fits"]):
        notes.append(
            f"batch {r['pred_batch']:g} exceeds the model's max_batch {r['max_batch']:g}: the "
            "engine would queue or preempt requests the comparison does not see"
        )
    return "; ".join(n for n in notes if n)


def _summary_records(table: pd.DataFrame) -> list[dict]:
    """Each error_table row as JSON, with the one-sided p90 margin the engine profiles record
    (`margin_p90_pct`, issue #10: how far on the slow side 90% of the rows came within)."""
    keep = ["by", "group", "metric", "n", "median_abs_pct", "p90_abs_pct", "median_signed_pct"]
    return [
        {**{k: r[k] for k in keep}, "margin_p90_pct": max(float(r["p90_optimism_pct"]), 0.0)}
        for _, r in table.iterrows()
    ]


def validation(measurements: pd.DataFrame, catalog: Catalog, engine: str | None = None) -> dict:
    """Predicted vs measured for every usable row, and the median and 90th-percentile
    absolute % error per metric: overall, per GPU and per source (`error_table`)."""
    profiles, profile_ids = profiles_for_rows(measurements, catalog, engine)
    used = usable(measurements)
    pred = predict(used, catalog, profiles) if not used.empty else used.assign(row_id=[])
    skipped = _skipped_records(measurements, pred, catalog)
    if pred.empty:
        reasons = sorted({s["reason"] for s in skipped})
        raise InputError(
            f"none of the {len(measurements)} rows can be compared with the model: "
            + "; ".join(reasons[:5])
        )
    return {
        "profiles": profile_ids,
        "rows": [
            _row_record(r, profile_ids, bool(short))
            for (_, r), short in zip(pred.iterrows(), held_fewer_than_budget(pred), strict=True)
        ],
        "summary": _summary_records(error_table(pred)),
        "skipped": skipped,
        "counts": {"rows": len(measurements), "compared": len(pred), "skipped": len(skipped)},
    }


# ---- calibrate --------------------------------------------------------------------------


@dataclass
class Calibration:
    """A profile fitted on user measurements, with what `planner calibrate` prints."""

    profile: EngineProfile
    base: EngineProfile
    report: dict
    params: tuple[str, ...]
    seen_by: dict[str, int]  # rows whose prediction moves with each constant (`support`)
    before: pd.DataFrame  # error_table of the base profile on the fitted rows
    after: pd.DataFrame  # error_table of the fitted profile on the same rows
    inputs: tuple[str, ...]
    start: EngineProfile | None = None  # the base constants of the rows' GPU family


def _check_params(params: Sequence[str]) -> tuple[str, ...]:
    for name in params:
        if name not in FIT_PARAMS:
            raise InputError(f"--params: {unknown_name_message('constant', name, FIT_PARAMS)}")
    if not params:
        raise InputError("--params: name at least one constant")
    return tuple(dict.fromkeys(params))


def _fit_rows(measurements: pd.DataFrame, engines: Sequence[str]) -> pd.DataFrame:
    rows = usable(measurements)
    if engines:
        rows = rows[rows["engine"].isin(list(engines))]
    if rows.empty:
        reasons = sorted(set(measurements["skip_reason"]) - {""})
        which = f" of engine {', '.join(engines)}" if engines else ""
        raise InputError(
            f"no usable row{which} among the {len(measurements)} measured; "
            + ("skipped: " + "; ".join(reasons[:5]) if reasons else "none has a metric")
        )
    return rows


def _start_profile(base: EngineProfile, rows: pd.DataFrame, catalog: Catalog) -> EngineProfile:
    """The base constants of the rows' GPU family (one family) or the default; no families."""
    families = {catalog.gpu(g).family for g in rows["gpu_id"]}
    eff = base.for_family(families.pop()) if len(families) == 1 else base.default
    return base.model_copy(update={"default": eff, "families": {}})


def _check_determined(seen: dict, params: Sequence[str]) -> None:
    """Refuse an underdetermined fit: more constants than measured values."""
    free = seen["identified"]
    if seen["rows"] == 0:
        reasons = sorted(set(seen["rejected"].get("reason", pd.Series(dtype=str))))
        raise InputError("no usable row has a valid deployment: " + "; ".join(reasons[:5]))
    if not free:
        raise InputError(
            f"the {seen['rows']} usable rows depend on none of {', '.join(params)}: nothing to fit"
        )
    if seen["values"] < len(free):
        raise InputError(
            f"{seen['values']} measured value(s) in {seen['rows']} usable row(s) cannot "
            f"determine the {len(free)} constants they depend on ({', '.join(free)}): measure "
            "more operating points (other concurrencies or lengths), or fit fewer, e.g. "
            f"--params {','.join(free[: seen['values']])}"
        )


def calibrate(
    measurements: pd.DataFrame,
    catalog: Catalog,
    base_id: str,
    new_id: str,
    params: Sequence[str] = FIT_PARAMS,
    engines: Sequence[str] = (),
    n_starts: int = 3,
    as_of: str = "",
    inputs: Sequence[str] = (),
) -> Calibration:
    """Fit the constants of profile `base_id` on the usable rows (of `engines`, if given)
    as a new profile `new_id`: `fit_profile` (bounded least squares on the log error, 1-sigma
    from the Jacobian) from the base constants of the rows' GPU family. Constants no row
    depends on keep their base value (reported as not identified); a fit with more
    constants than measured values is refused (InputError naming them). The new profile
    has a default only: the base's family overrides are dropped."""
    base = _option("--base", catalog.engine, base_id)
    params = _check_params(params)
    rows = _fit_rows(measurements, engines)
    start = _start_profile(base, rows, catalog)
    _check_determined(identifiable(rows, catalog, start, params), params)
    fitted, report = fit_profile(
        rows, catalog, start, engine_filter=None, params=params, n_starts=n_starts
    )
    before = error_table(predict(rows, catalog, base))
    after = error_table(predict(rows, catalog, fitted))
    seen_by = support(rows, catalog, fitted, params)
    result = Calibration(fitted, base, report, params, seen_by, before, after, tuple(inputs), start)
    source, notes = describe_user_fit(result, rows, as_of)
    result.profile = fitted.model_copy(
        update={
            "id": new_id,
            "name": f"{base.name}, calibrated as '{new_id}'",
            "source": source,
            "notes": notes,
            "as_of": as_of or "unknown",
            "families": {},
            "accuracy": None,  # the base's record measured other constants (issue #10)
        }
    )
    return result


def _error_change(result: Calibration) -> str:
    before = overall_errors(result.before)
    after = overall_errors(result.after)
    return ", ".join(
        f"{m} {before[m]['median_abs_pct']:.0f}% -> {after[m]['median_abs_pct']:.0f}%"
        for m in after
        if m in before
    )


def describe_user_fit(result: Calibration, rows: pd.DataFrame, as_of: str) -> tuple[str, str]:
    """The `source` and `notes` of a profile fitted by `planner calibrate`."""
    report, rep = result.report, result.report["default"]
    ids = [str(i) for i in report["row_ids"]]
    engines = ", ".join(f"{k} {v}" for k, v in sorted(rows["engine"].value_counts().items()))
    source = (
        f"Fitted {as_of or 'on an unknown date'} by `planner calibrate` from the "
        f"'{result.base.id}' profile on {len(ids)} rows of {', '.join(result.inputs) or 'input'}"
        f" (engines: {engines}; row_id {', '.join(ids[:40])}{' ...' if len(ids) > 40 else ''}). "
        "Least squares on log(predicted/measured) of every measured TPOT, TTFT, throughput and "
        "end-to-end latency, rows weighted 1/sqrt(rows of their source), constants bounded "
        "(eta 0.3-1, allreduce 1-100 us, overheads 0-20 ms)."
    )
    notes = [
        f"Fitted (+/- 1 sigma from the Jacobian of the log residuals): "
        f"{_fmt_constants(result.profile.default, rep.get('sd', {}), rep['fitted'])}; "
        f"rms log error {rep.get('rms_log_before', math.nan):.3f} -> "
        f"{rep.get('rms_log_after', math.nan):.3f}; median abs error {_error_change(result)}."
    ]
    if rep["not_identified"]:
        notes.append(
            f"Not identified by these rows (kept at the '{result.base.id}' value): "
            f"{', '.join(rep['not_identified'])}."
        )
    if rep.get("at_bound"):
        notes.append(f"At a bound: {', '.join(rep['at_bound'])}.")
    weak = [f"{n} ({result.seen_by[n]})" for n in rep["fitted"] if result.seen_by[n] < 3]
    if weak:
        notes.append(f"Seen by fewer than 3 rows (fitted to their noise): {', '.join(weak)}.")
    kept = [n for n in EFF_FIELDS if n not in rep["fitted"] and n not in rep["not_identified"]]
    notes.append(f"Not fitted (the '{result.base.id}' values): {', '.join(kept)}.")
    if result.base.families:
        notes.append(
            f"The base profile's GPU-family overrides ({', '.join(sorted(result.base.families))}) "
            "are dropped: the fitted default applies to every GPU."
        )
    if rows["scenario_kind"].isin(SERVING_KINDS).any():
        notes.append(WAVE_ASSUMPTION)
    if (rows["scenario_kind"] == "closed_loop").any():
        notes.append(CLOSED_LOOP_ASSUMPTION)
    return source, " ".join(notes)


def calibration_header(result: Calibration) -> str:
    """The comment block of a profile written by `planner calibrate`."""
    p = result.profile
    lines = [
        f"{p.id}: efficiency constants of the performance model (docs: MODEL.md), fitted by",
        f"`planner calibrate` on {p.as_of} from the '{result.base.id}' profile on "
        f"{len(result.report['row_ids'])} measured rows of:",
        *[f"  {name}" for name in result.inputs],
        "Least squares on the log error (planner.calibration.calibrate); the constants with",
        "their 1-sigma and the error before/after are in `notes`. Refit rather than edit:",
        f"planner calibrate INPUT... --base {result.base.id} --id {p.id} --force",
    ]
    return "\n".join(lines)


def calibration_dict(result: Calibration, output: str | None = None) -> dict:
    """`planner calibrate --json`: constants, uncertainty, errors, the profile document."""
    rep = result.report["default"]
    constants = {}
    for name in result.params:
        constants[name] = {
            "base": getattr((result.start or result.base).default, name),
            "value": getattr(result.profile.default, name),
            "sigma": rep.get("sd", {}).get(name),
            "at_bound": name in rep.get("at_bound", []),
            "fitted": name in rep["fitted"],
            "rows_seeing": result.seen_by.get(name, 0),
        }
    before, after = overall_errors(result.before), overall_errors(result.after)
    return {
        "id": result.profile.id,
        "base": result.base.id,
        "output": output,
        "inputs": list(result.inputs),
        "rows": len(result.report["row_ids"]),
        "row_ids": [int(i) for i in result.report["row_ids"]],
        "constants": constants,
        "not_identified": rep["not_identified"],
        "measured_values": rep["residuals"],
        "rms_log_before": rep.get("rms_log_before"),
        "rms_log_after": rep.get("rms_log_after"),
        "errors": {m: {"before": before.get(m), "after": after[m]} for m in after},
        "profile": profile_document(result.profile),
    }
