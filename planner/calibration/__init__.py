"""Calibrate the performance model's efficiency constants on published measurements.

Four steps, each a function:

* `load_measurements(path)`: read `data/calibration/measured_public.csv` (the format of its
  SOURCES.md) and map every row to catalog ids (model, GPU, quant, KV dtype), an engine label,
  the parallelism, the request shape and the measured metrics, converted to one unit each:
  TPOT ms, TTFT ms, output tokens/s of the whole replica, end-to-end ms. Rows (or single
  metrics) that cannot be compared honestly keep a reason in `skip_reason` / `metric_skips`.
* `predict(measurements, catalog, profile)`: the performance model's prediction of the same
  metric at the same operating point (see `predict` for which output is compared with what).
* `error_table(pred)`: median and 90th-percentile absolute % error per metric, GPU and source.
* `fit_profile(measurements, catalog, base_profile, engine_filter)`: bounded least squares on
  the log error (scipy.optimize.least_squares), with the uncertainty of every
  constant from the Jacobian of the log residuals.

Your own measurements (`planner validate`, `planner calibrate`):

* `read_measurements(paths, catalog, identity)`: CSVs in the measured_public.csv format and
  the JSON of `vllm bench serve --save-result` (`vllm_result_rows`; the JSON does not say
  what ran, so `Identity` names the model, GPU, tp and quant), as rows of the same schema.
* `validation(...)` / `render_validation`: predicted vs measured per row, error per metric.
* `calibrate(...)` / `render_calibration` / `calibration_header`: `fit_profile` on those rows
  as a new profile; refuses a fit of more constants than measured values.
* A serving-benchmark row at request rate inf with max_concurrency C below num_prompts is a
  closed loop of C clients: its first round (C / num_prompts of the requests) one wave
  (`serving_wave_ms`), the rest the steady state (`closed_loop_benchmark_ms`); with every
  prompt at once, one wave.

Nothing here writes a file except `write_profile` (`profile_yaml` gives the text).

The modules, each importing only the ones above it:

* `measurements`: the CSV format, mapping published names to catalog ids (and the
  assumptions made doing so), `load_measurements`, `usable`, `read_csv_measurements`.
* `vllm_results`: vLLM benchmark JSON as measurement rows.
* `quality`: rule-based data-quality checks of closed-loop series (`skip_inconsistent_series`).
* `aic`: the AIConfigurator silicon sample (`aic_silicon_public.csv`) as closed-loop rows.
* `prediction`: `Design`, `build_design`, `predict` and the batched / serving-wave timings.
* `scoring`: `long_errors`, `error_table`, `overall_errors`.
* `fit`: Levenberg-Marquardt, `fit_profile`, `identifiable`, `support`.
* `transfer`: a GPU family's constants pooled from other engines' overrides for an engine
  without rows of it (`pooled_family`, `transfer_family`, `needs_transfer`).
* `recipes`: `BASE_EFFICIENCY`, `RECIPES`, `fit_recipe`, `cross_validate`,
  `fit_shipped_profiles`, `describe_fit`.
* `profile_file`: `profile_document`, `profile_yaml`, `write_profile`.
* `inputs`: the inputs of the two commands (`read_measurements`, `resolve_identity`).
* `commands`: `validation`, `calibrate` and a calibration's header and JSON.
* `render`: the text the two commands print.

Every public name of these modules is importable from `planner.calibration` itself.
"""

from __future__ import annotations

from planner.calibration.aic import (
    AIC_CSV,
    aic_source_key,
    load_aic_measurements,
    load_all_measurements,
)
from planner.calibration.commands import (
    Calibration,
    calibrate,
    calibration_dict,
    calibration_header,
    describe_user_fit,
    profiles_for_rows,
    validation,
)
from planner.calibration.fit import (
    BOUNDS,
    FAMILY_PRIOR_SCALE,
    FIT_PARAMS,
    fit_profile,
    identifiable,
    least_squares_fit,
    support,
)
from planner.calibration.inputs import input_kind, read_measurements, resolve_identity
from planner.calibration.measurements import (
    CSV_COLUMNS,
    CSV_METRIC_COLUMNS,
    CSV_REQUIRED,
    DATA_DIR,
    DEFAULT_CSV,
    MEASURED,
    MEASUREMENT_COLUMNS,
    METRIC_UNITS,
    METRICS,
    PREDICTED,
    SERVER_ENGINES,
    engine_label,
    load_measurements,
    map_gpu,
    map_model,
    map_quant,
    measurements_from_frame,
    read_csv_measurements,
    source_key,
    usable,
)
from planner.calibration.prediction import (
    CLOSED_LOOP_ASSUMPTION,
    EFF_FIELDS,
    SERVING_KINDS,
    WAVE_ASSUMPTION,
    Design,
    ProfileArg,
    batch_prefill_ms,
    build_design,
    predict,
    serving_wave_ms,
    static_batch_e2e_ms,
)
from planner.calibration.prediction import _evaluate_core as _evaluate_core
from planner.calibration.prediction import _set_eff as _set_eff
from planner.calibration.profile_file import profile_document, profile_yaml, write_profile
from planner.calibration.recipes import (
    BASE_EFFICIENCY,
    RECIPES,
    Recipe,
    cross_validate,
    describe_fit,
    fit_recipe,
    fit_shipped_profiles,
)
from planner.calibration.scoring import error_table, long_errors, overall_errors
from planner.calibration.transfer import (
    TRANSFER_MIN_MODELS,
    needs_transfer,
    pooled_family,
    transfer_family,
)
from planner.calibration.vllm_results import (
    VLLM_METRIC_KEYS,
    VLLM_SOURCE_KEY,
    Identity,
    read_json_results,
    vllm_result_rows,
)

__all__ = [
    # aic
    "AIC_CSV",
    "aic_source_key",
    "load_aic_measurements",
    "load_all_measurements",
    # measurements
    "DATA_DIR",
    "DEFAULT_CSV",
    "METRICS",
    "METRIC_UNITS",
    "MEASURED",
    "PREDICTED",
    "SERVER_ENGINES",
    "CSV_COLUMNS",
    "CSV_REQUIRED",
    "CSV_METRIC_COLUMNS",
    "MEASUREMENT_COLUMNS",
    "source_key",
    "engine_label",
    "map_gpu",
    "map_model",
    "map_quant",
    "load_measurements",
    "measurements_from_frame",
    "usable",
    "read_csv_measurements",
    # vllm_results
    "VLLM_SOURCE_KEY",
    "VLLM_METRIC_KEYS",
    "Identity",
    "read_json_results",
    "vllm_result_rows",
    # prediction
    "ProfileArg",
    "EFF_FIELDS",
    "SERVING_KINDS",
    "CLOSED_LOOP_ASSUMPTION",
    "WAVE_ASSUMPTION",
    "Design",
    "batch_prefill_ms",
    "static_batch_e2e_ms",
    "serving_wave_ms",
    "build_design",
    "predict",
    # scoring
    "long_errors",
    "error_table",
    "overall_errors",
    # fit
    "FIT_PARAMS",
    "BOUNDS",
    "FAMILY_PRIOR_SCALE",
    "least_squares_fit",
    "fit_profile",
    "identifiable",
    "support",
    # transfer
    "TRANSFER_MIN_MODELS",
    "pooled_family",
    "transfer_family",
    "needs_transfer",
    # recipes
    "BASE_EFFICIENCY",
    "Recipe",
    "RECIPES",
    "fit_recipe",
    "cross_validate",
    "describe_fit",
    "fit_shipped_profiles",
    # profile_file
    "profile_document",
    "profile_yaml",
    "write_profile",
    # inputs
    "resolve_identity",
    "input_kind",
    "read_measurements",
    # commands
    "profiles_for_rows",
    "validation",
    "Calibration",
    "calibrate",
    "describe_user_fit",
    "calibration_header",
    "calibration_dict",
]
