"""Reading a scenario file: strict validation, and a config.json model imported on the way."""

from __future__ import annotations

import io
from collections.abc import Collection
from pathlib import Path

from planner.errors import InputError, unknown_name_message
from planner.inputs.catalog import Catalog
from planner.inputs.loading import read_json, read_text, read_yaml, validate
from planner.schema.limits import MAX_DATA_BYTES
from planner.schema.model import Model
from planner.schema.scenario import Scenario


def _looks_like_path(model: str) -> bool:
    return model.endswith(".json") or "/" in model or "\\" in model


def _import_model(scenario: Scenario, path: Path, catalog: Catalog) -> tuple[Scenario, Catalog]:
    """Resolve `model: path/to/config.json` (relative to the scenario) into a catalog entry."""
    from planner.inputs.hf_import import default_model_id, model_from_hf_config  # issue #16

    config_path = Path(scenario.model)
    if not config_path.is_absolute():
        config_path = path.parent / config_path
    if not config_path.is_file():
        raise InputError(
            f"{path}: model: '{scenario.model}' is neither a catalog id nor an existing "
            f"config.json (looked for {config_path})"
        )
    model_id = default_model_id(config_path) or "imported-model"
    try:
        model = model_from_hf_config(read_json(config_path), model_id, str(config_path))
    except InputError as exc:
        raise InputError(f"{path}: model: {exc.message}") from None
    return scenario.model_copy(update={"model": model.id}), catalog.with_model(model)


def read_demand_csv(path: Path, source: Path) -> list[float]:
    """A CSV of `timestamp,requests_per_second` as 168 hour-of-week fractions of its peak."""
    import numpy as np
    import pandas as pd

    try:
        text = read_text(path, "a CSV of timestamp,requests_per_second", MAX_DATA_BYTES)
    except InputError as exc:
        raise InputError(f"{source}: finance.profile.csv: {exc.message}") from None
    try:
        frame = pd.read_csv(io.StringIO(text))
    except (OSError, ValueError) as exc:
        raise InputError(f"{source}: finance.profile.csv: cannot read {path}: {exc}") from None
    missing = {"timestamp", "requests_per_second"} - set(frame.columns)
    if missing:
        raise InputError(
            f"{source}: finance.profile.csv: {path} lacks column(s) "
            f"{', '.join(sorted(missing))}; expected timestamp,requests_per_second"
        )
    stamps = pd.to_datetime(frame["timestamp"], errors="coerce", utc=True)
    rate = pd.to_numeric(frame["requests_per_second"], errors="coerce")
    bad = stamps.isna() | rate.isna() | (rate < 0) | ~np.isfinite(rate)
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0]) + 2
        raise InputError(
            f"{source}: finance.profile.csv: {path} line {row}: expected an ISO "
            "timestamp and a finite, non-negative requests_per_second"
        )
    hour = stamps.dt.day_of_week * 24 + stamps.dt.hour
    by_hour = rate.groupby(hour).mean().reindex(range(168))
    if by_hour.isna().any():
        by_hour = by_hour.fillna(
            rate.groupby(stamps.dt.hour)
            .mean()
            .reindex([h % 24 for h in range(168)])
            .set_axis(range(168))
        )
    if by_hour.isna().any() or by_hour.max() <= 0:
        raise InputError(
            f"{source}: finance.profile.csv: {path} must cover every hour of the "
            "day with some demand"
        )
    return list((by_hour / by_hour.max()).astype(float))


def _resolve_profile(scenario: Scenario, path: Path) -> Scenario:
    """Read a demand CSV named in the scenario (relative to it) into the hourly profile."""
    fin = scenario.finance
    if fin is None or fin.profile.csv is None:
        return scenario
    csv = Path(fin.profile.csv)
    csv = csv if csv.is_absolute() else path.parent / csv
    profile = fin.profile.model_copy(update={"hourly": read_demand_csv(csv, path), "csv": None})
    return scenario.model_copy(update={"finance": fin.model_copy(update={"profile": profile})})


def load_scenario(path: str | Path, catalog: Catalog) -> tuple[Scenario, Catalog]:
    """Validate a scenario file; its name defaults to the file's stem."""
    path = Path(path)
    data = read_yaml(path)
    if isinstance(data, dict) and "models" in data:  # a platform (issue 12)
        raise InputError(
            f"{path}: models: a platform of several models; only `planner solve` plans one "
            "yet (give one model: for this command)"
        )
    scenario = validate(data, Scenario, path)
    scenario = _resolve_profile(scenario, path)
    if scenario.name is None:
        scenario = scenario.model_copy(update={"name": path.stem})
    if scenario.model not in catalog.models:
        if not _looks_like_path(scenario.model):
            raise InputError(
                f"{path}: model: " + unknown_name_message("model", scenario.model, catalog.models)
            )
        scenario, catalog = _import_model(scenario, path, catalog)
    _check_ids(scenario, path, catalog)
    _check_context(scenario, path, catalog.models[scenario.model])
    return scenario, catalog


def _check_context(scenario: Scenario, path: Path, model: Model) -> None:
    """A request longer than the model's context window cannot be served: refuse it here
    rather than plan it."""
    window = model.max_position_embeddings
    classes = scenario.workload.resolved_classes()
    for i, (name, _, i_len, o_len, _) in enumerate(classes):
        if i_len + o_len > window:
            where = "workload" if scenario.workload.classes is None else f"workload.classes[{i}]"
            raise InputError(
                f"{path}: {where}: input_tokens + output_tokens = {i_len + o_len:,} tokens, "
                f"more than the context window of {model.id} ({window:,} tokens, "
                f"max_position_embeddings){'' if name == 'all' else f' (class {name})'}"
            )


def _finance_ids(
    scenario: Scenario, catalog: Catalog
) -> list[tuple[str, list[str], Collection[str], str]]:
    """The ids inside `finance:`: GPUs of owned, reserved and spot prices, class profiles."""
    fin = scenario.finance
    if fin is None:
        return []
    classes = [name for name, *_ in scenario.workload.resolved_classes()]
    return [
        ("finance.owned", list(fin.owned), catalog.gpus, "GPU"),
        (
            "finance.reserved.usd_per_gpu_hour",
            list(fin.reserved.usd_per_gpu_hour) if fin.reserved else [],
            catalog.gpus,
            "GPU",
        ),
        (
            "finance.spot.usd_per_gpu_hour",
            list(fin.spot.usd_per_gpu_hour) if fin.spot else [],
            catalog.gpus,
            "GPU",
        ),
        ("finance.profile.by_class", list(fin.profile.by_class), classes, "request class"),
    ]


def _check_provider(scenario: Scenario, path: Path, catalog: Catalog) -> None:
    """hardware.pricing.provider must be a provider some catalog price comes from."""
    provider = scenario.hardware.pricing.provider
    if provider is None:
        return
    known = {p.provider for gpu in catalog.gpus.values() for p in gpu.prices}
    if provider.lower() not in {k.lower() for k in known}:
        raise InputError(
            f"{path}: hardware.pricing.provider: "
            + unknown_name_message("price provider", provider, known)
        )


def _check_ids(scenario: Scenario, path: Path, catalog: Catalog) -> None:
    """Every id the scenario names, in every section, must be in the catalog (or, for class
    profiles, a class of the workload); misspellings get a suggestion."""
    _check_provider(scenario, path, catalog)
    checks: list[tuple[str, list[str], Collection[str], str]] = [
        ("engine", [scenario.engine], catalog.engines, "engine profile"),
        ("search.quants", scenario.search.quants, catalog.quants, "quantization"),
        ("hardware.gpus", scenario.hardware.gpus or [], catalog.gpus, "GPU"),
        ("hardware.exclude", scenario.hardware.exclude, catalog.gpus, "GPU"),
        ("hardware.inventory", list(scenario.hardware.inventory), catalog.gpus, "GPU"),
        ("hardware.fleet", list(scenario.hardware.fleet), catalog.gpus, "GPU"),
        (
            "hardware.pricing.usd_per_gpu_hour",
            list(scenario.hardware.pricing.usd_per_gpu_hour),
            catalog.gpus,
            "GPU",
        ),
        *_finance_ids(scenario, catalog),
    ]
    for key, ids, table, kind in checks:
        for i, item in enumerate(ids):
            if item not in table:
                where = (
                    f"{key}[{i}]"
                    if key in ("search.quants", "hardware.gpus", "hardware.exclude")
                    else key
                )
                raise InputError(f"{path}: {where}: " + unknown_name_message(kind, item, table))
    emptied = scenario.hardware.nothing_left(catalog.gpus)
    if emptied is not None:
        raise InputError(f"{path}: {emptied}")
