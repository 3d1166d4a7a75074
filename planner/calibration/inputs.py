"""The inputs of `planner validate` and `planner calibrate`: CSVs in the measured_public.csv
format and vLLM benchmark JSON, read as rows of the `load_measurements` schema
(`read_measurements`), with the deployment of JSON inputs checked (`resolve_identity`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

from planner.calibration.checks import check_row_count
from planner.calibration.measurements import read_csv_measurements
from planner.calibration.prediction import _deployment
from planner.calibration.vllm_results import Identity, read_json_results, vllm_result_rows
from planner.errors import InputError, shorten
from planner.inputs.catalog import Catalog
from planner.inputs.loading import read_text
from planner.schema.bounded import Range
from planner.schema.limits import MAX_DATA_BYTES, MAX_TOKENS, MAX_TP

_T = TypeVar("_T")


def _option(option: str, lookup: Callable[[str], _T], value: str) -> _T:
    """`lookup(value)`, an unknown id's message prefixed with the option that gave it."""
    try:
        return lookup(value)
    except InputError as exc:
        raise InputError(f"{option}: {exc.message}") from None


def resolve_identity(identity: Identity, catalog: Catalog) -> dict:
    """Catalog ids of `identity`, checked: an unknown id names its closest match, an
    impossible combination (tp, KV dtype, quant on that GPU) says why."""
    for name, value, bounds in (
        ("--tp", identity.tp, Range(0, MAX_TP, low_open=True, whole=True)),
        ("--input-len", identity.input_len, Range(0, MAX_TOKENS, low_open=True, unit="tokens")),
        ("--output-len", identity.output_len, Range(0, MAX_TOKENS, low_open=True, unit="tokens")),
    ):
        if value is not None:
            try:
                bounds.check(value)
            except ValueError as exc:
                raise InputError(f"{name}: {exc} (got {shorten(value)})") from None
    model = _option("--model", catalog.model, str(identity.model))
    gpu = _option("--gpu", catalog.gpu, str(identity.gpu))
    quant = _option("--quant", catalog.quant, str(identity.quant))
    ids = {
        "model_id": model.id,
        "gpu_id": gpu.id,
        "quant_id": quant.id,
        "kv_dtype": identity.kv_dtype or quant.default_kv_dtype,
        "tp": int(identity.tp or 1),
    }
    dep, reason, _ = _deployment(pd.Series(ids), catalog)
    if dep is None:
        raise InputError(f"impossible combination: {reason}")
    return ids


# what repositories of one model's variants add to its name: instruction tuning, a weight
# format, the Hub's "-hf" conversions and Meta's older "Meta-" prefix
_VARIANT = re.compile(r"-(instruct|chat|it|hf|base|fp8(-dynamic)?)(?=-|$)")


def repo_key(repo: str) -> str:
    """A Hugging Face repository's model name as variants of one model share it:
    'meta-llama/Meta-Llama-3.1-8B-Instruct' and 'meta-llama/Llama-3.1-8B' both 'llama-3.1-8b'."""
    name = repo.rsplit("/", 1)[-1].lower().removeprefix("meta-")
    return _VARIANT.sub("", name)


def catalog_model_of(repo: str, catalog: Catalog) -> str | None:
    """The catalog model whose `hf_repo` is a variant of `repo`, where exactly one is."""
    key = repo_key(repo)
    found = [m.id for m in catalog.models.values() if m.hf_repo and repo_key(m.hf_repo) == key]
    return found[0] if len(found) == 1 else None


def _model_from_results(
    results: Sequence[list[dict]], identity: Identity, catalog: Catalog
) -> Identity:
    """`identity` with the model named by the results' own `model_id` (vllm bench serve writes
    the served repository) when --model is not given and every result names the same catalog
    model; else unchanged (the caller asks for --model)."""
    if identity.model is not None:
        return identity
    repos = {str(doc.get("model_id") or "") for docs in results for doc in docs}
    models = {catalog_model_of(repo, catalog) for repo in repos if repo}
    if len(repos) != 1 or len(models) != 1 or None in models:
        return identity
    return replace(identity, model=models.pop())


def input_kind(path: str | Path) -> str:
    """'csv' or 'json', by the file name's suffix, else by the first character."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".csv", ".json", ".jsonl"):
        return "csv" if suffix == ".csv" else "json"
    text = read_text(path, "a CSV or JSON file", MAX_DATA_BYTES)
    return "json" if text.lstrip()[:1] in ("{", "[") else "csv"


def read_measurements(
    paths: Sequence[str | Path], catalog: Catalog, identity: Identity = Identity()
) -> pd.DataFrame:
    """Every input as rows of the `load_measurements` schema, plus `input` (the file) and
    `input_row` (the row's id in it); row_id is renumbered 1..N when inputs collide."""
    kinds = [(Path(p), input_kind(p)) for p in paths]
    ids: dict = {}
    json_inputs = [p for p, k in kinds if k == "json"]
    results = {p: read_json_results(p) for p in json_inputs}  # each file read once
    if json_inputs:
        identity = _model_from_results(list(results.values()), identity, catalog)
        missing = identity.missing()
        if missing:
            raise InputError(
                f"{json_inputs[0]}: a vLLM benchmark result does not say what was measured: "
                f"pass {', '.join(missing)} (catalog ids of the model, GPU, tensor-parallel "
                "degree and quantization; the model is read from the result's model_id where "
                "one catalog model's hf_repo matches it)"
            )
        ids = resolve_identity(identity, catalog)
    parts = []
    for path, kind in kinds:
        if kind == "csv":
            frame = read_csv_measurements(path, catalog)
        else:
            frame = vllm_result_rows(results[path], ids, str(path), identity)
        parts.append(frame.assign(input=str(path), input_row=frame["row_id"].to_numpy()))
    out = pd.concat(parts, ignore_index=True)
    check_row_count(len(out), ", ".join(str(p) for p in paths))
    if out.empty:
        raise InputError(f"no measurement rows in {', '.join(str(p) for p in paths)}")
    if out["row_id"].duplicated().any():
        out["row_id"] = np.arange(1, len(out) + 1)
    return out
