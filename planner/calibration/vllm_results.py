"""`vllm bench serve --save-result` JSON as measurement rows (the `load_measurements` schema).

The JSON does not say what ran, so `Identity` names the model, GPU, tp and quant (checked by
`planner.calibration.inputs.resolve_identity`). A row at request rate inf with max_concurrency
C is a closed loop of C clients over num_prompts requests, compared as the aic closed loops
are (`closed_loop_benchmark_ms`): the first round, C / num_prompts of the requests, arrives
as one wave, the rest in the steady state `planner estimate --concurrency C` reports. Without
max_concurrency every prompt arrives at once: one wave (`serving_wave_ms`). At a finite rate
only TPOT is compared.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from planner.calibration.checks import check_row_count, check_vllm_values
from planner.calibration.measurements import (
    MEASURED,
    MEASUREMENT_COLUMNS,
    _num,
    _RowMap,
    engine_label,
)
from planner.errors import InputError, shorten
from planner.inputs.loading import json_error, parse_json, read_text
from planner.schema.limits import MAX_DATA_BYTES

VLLM_SOURCE_KEY = "vllm-bench-serve"
VLLM_METRIC_KEYS: dict[str, tuple[str, ...]] = {
    "tpot": ("mean_tpot_ms", "median_tpot_ms"),
    "ttft": ("mean_ttft_ms", "median_ttft_ms"),
    "throughput": ("output_throughput",),
}


@dataclass(frozen=True)
class Identity:
    """What a vLLM benchmark result does not say: the deployment that was measured (catalog
    ids), and optionally the request lengths (default: the result's mean lengths)."""

    model: str | None = None
    gpu: str | None = None
    tp: int | None = None
    quant: str | None = None
    kv_dtype: str | None = None
    input_len: float | None = None
    output_len: float | None = None

    def missing(self) -> list[str]:
        """The command-line options still needed for a JSON input."""
        return [f"--{n}" for n in ("model", "gpu", "tp", "quant") if getattr(self, n) is None]


def read_json_results(path: str | Path) -> list[dict]:
    """The result objects of one JSON file: one object (`--save-result`), a list of them,
    or JSON Lines (`--append-result` appends one object per line). A syntax error names
    the line and column."""
    path = Path(path)
    text = read_text(path, "a CSV or JSON file", MAX_DATA_BYTES)
    try:
        data = parse_json(text, path)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise InputError(json_error(path, exc)) from None
        data = []
        for number, line in enumerate(text.splitlines(), start=1):
            try:
                data.append(parse_json(line, path, number)) if line.strip() else None
            except json.JSONDecodeError as line_exc:
                raise InputError(json_error(path, line_exc, number)) from None
    docs = data if isinstance(data, list) else [data]
    if not docs:
        raise InputError(f"{path}: no benchmark result in the file")
    check_row_count(len(docs), str(path))
    for number, doc in enumerate(docs, start=1):
        if not isinstance(doc, dict):
            raise InputError(
                f"{path}: expected JSON objects (vLLM benchmark results), got a "
                f"{type(doc).__name__}"
            )
        check_vllm_values(doc, str(path) if len(docs) == 1 else f"{path} (result {number})")
    return docs


def _first_metric(doc: Mapping, keys: Sequence[str]) -> tuple[float, str]:
    for key in keys:
        value = _num(doc.get(key))
        if value > 0:
            return value, key
    return math.nan, ""


def _request_rate(doc: Mapping, where: str) -> float:
    value = doc.get("request_rate", "inf")
    if value is None or str(value).strip().lower() in ("inf", "infinity"):
        return math.inf
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise InputError(
            f"{where}: request_rate: expected a number or 'inf', got {shorten(value)}"
        ) from None
    return rate if rate > 0 else math.inf


def _vllm_lengths(
    doc: Mapping, where: str, input_len: float | None, output_len: float | None
) -> tuple[float, float]:
    """Mean request lengths: the options, else total tokens / completed requests."""
    completed = _num(doc.get("completed"))
    out = []
    for given, key, option in (
        (input_len, "total_input_tokens", "--input-len"),
        (output_len, "total_output_tokens", "--output-len"),
    ):
        total = _num(doc.get(key))
        if given is not None:
            out.append(float(given))
        elif completed > 0 and total > 0:
            out.append(total / completed)
        elif completed == 0:
            out.append(math.nan)  # nothing completed: the row is skipped
        else:
            raise InputError(
                f"{where}: no {key} and completed to take the mean from; pass {option}"
            )
    return out[0], out[1]


def _vllm_operating_point(doc: Mapping, where: str, out: _RowMap) -> tuple[float, str, float]:
    """(batch, scenario kind, wave share): the requests in flight, which comparison applies
    and, for a closed loop, the share of its requests in the clients' first round."""
    rate = _request_rate(doc, where)
    conc, prompts = _num(doc.get("max_concurrency")), _num(doc.get("num_prompts"))
    if math.isinf(rate):
        if conc > 0 and not (prompts > 0 and prompts <= conc):
            share = conc / prompts if prompts > 0 else 1.0
            out.assumptions.append(
                f"request rate inf, max_concurrency {conc:g}: a closed loop of {conc:g} "
                f"clients, its first round ({share:.3g} of the requests) one wave, the rest "
                "in the steady state (closed_loop_benchmark_ms)"
            )
            return conc, "closed_loop", share
        if prompts > 0:
            batch = prompts
            why = "without max_concurrency" if not conc > 0 else f"num_prompts <= {conc:g}"
            out.assumptions.append(
                f"request rate inf, {why}: all num_prompts requests in flight at once (one wave)"
            )
        else:
            batch = math.nan
            out.skips.append("neither max_concurrency nor num_prompts: the batch is unknown")
        return batch, "serving", math.nan
    out.metric_skips += [
        "ttft: Poisson arrivals at a finite request rate (queueing is not modelled)",
        "throughput: at a finite request rate it is the offered load, not the capacity",
    ]
    in_flight = _num(doc.get("request_throughput")) * _num(doc.get("mean_e2el_ms")) / 1000.0
    if not in_flight > 0:
        out.skips.append(
            f"request rate {rate:g}/s without request_throughput and mean_e2el_ms: the "
            "batch is unknown"
        )
        return math.nan, "serving_poisson", math.nan
    batch = float(max(round(in_flight), 1))
    batch = min(batch, conc) if conc > 0 else batch
    out.assumptions.append(
        f"request rate {rate:g}/s: batch {batch:g} from Little's law (request_throughput x "
        "mean_e2el_ms); TPOT compared with continuous batching's TPOT with prefill interleaved"
    )
    return batch, "serving_poisson", math.nan


def _vllm_metrics(doc: Mapping, where: str, o_len: float, out: _RowMap) -> dict[str, Any]:
    if not any(k in doc for keys in VLLM_METRIC_KEYS.values() for k in keys):
        raise InputError(
            f"{where}: not a vLLM serving benchmark result (none of "
            f"{', '.join(k for keys in VLLM_METRIC_KEYS.values() for k in keys)})"
        )
    values: dict[str, float] = {}
    basis: list[str] = []
    for metric, keys in VLLM_METRIC_KEYS.items():
        value, key = _first_metric(doc, keys)
        if any(s.startswith(f"{metric}:") for s in out.metric_skips):
            value = math.nan
        elif key:
            basis.append(f"{metric}: {key}")
        values[MEASURED[metric]] = value
    if not o_len > 1.5 and not math.isnan(values["meas_tpot"]):
        out.metric_skips.append("tpot: one output token per request")
        values["meas_tpot"] = math.nan
    if all(math.isnan(v) for v in values.values()):
        out.skips.append("no usable metric")
    return {**values, "meas_e2e": math.nan, "metric_basis": "; ".join(basis)}


def _varying_lengths(doc: Mapping, out: _RowMap) -> None:
    for key in ("input_lens", "output_lens"):
        lens = doc.get(key)
        if isinstance(lens, list) and len(lens) > 1 and max(lens) > 1.1 * max(min(lens), 1):
            out.assumptions.append(
                f"{key} vary ({min(lens)}-{max(lens)}): predicted at the mean length, while "
                "the comparison assumes equal lengths"
            )


def _vllm_row(doc: Mapping, ids: Mapping, where: str, identity: Identity) -> dict:
    out = _RowMap()
    backend = str(doc.get("backend") or doc.get("endpoint_type") or "vllm")
    engine = engine_label(backend)
    i_len, o_len = _vllm_lengths(doc, where, identity.input_len, identity.output_len)
    if _num(doc.get("completed")) == 0:
        out.skips.append("no completed requests")
    batch, kind, wave_share = _vllm_operating_point(doc, where, out)
    metrics = _vllm_metrics(doc, where, o_len, out)
    _varying_lengths(doc, out)
    out.values.update(
        source_key=VLLM_SOURCE_KEY,
        source=where,
        framework=f"{backend} (vllm bench serve)",
        model_raw=str(doc.get("model_id") or ids["model_id"]),
        gpu_raw=ids["gpu_id"],
        precision_raw=ids["quant_id"],
        engine="vllm" if engine == "other" else engine,
        engine_class="server",
        model_id=ids["model_id"],
        gpu_id=ids["gpu_id"],
        quant_id=ids["quant_id"],
        kv_dtype=ids["kv_dtype"],
        num_gpus=ids["tp"],
        tp=ids["tp"],
        layer_split=False,
        batch=batch,
        input_len=i_len,
        output_len=o_len,
        scenario_kind=kind,
        ttft_input_len=i_len,
        ttft_batch=1.0 if math.isnan(batch) else batch,
        **metrics,
        assumptions="; ".join(out.assumptions),
        skip_reason="; ".join(out.skips),
        metric_skips="; ".join(out.metric_skips),
        wave_share=wave_share,
        prefill_budget_tokens=math.nan,  # the run does not say: the engine's own
        harness_mixes_prefill=math.nan,
    )
    return out.values


def vllm_result_rows(
    docs: Sequence[Mapping], ids: Mapping, source: str, identity: Identity = Identity()
) -> pd.DataFrame:
    """Rows of the `load_measurements` schema from vLLM serving-benchmark results
    (`vllm bench serve --save-result`, or the older benchmarks/benchmark_serving.py).

    `ids` are the checked catalog ids of the deployment (`resolve_identity`): model_id,
    gpu_id, quant_id, kv_dtype, tp. Per result: TPOT = `mean_tpot_ms` (else the median),
    TTFT = `mean_ttft_ms` (else the median), throughput = `output_throughput` (output
    tokens/s of the whole deployment); lengths = total_input_tokens / completed and
    total_output_tokens / completed unless `identity` gives them. At request rate inf with
    max_concurrency C below num_prompts the row is a closed loop of C clients whose first
    round, C / num_prompts of the requests, arrives as one wave (`wave_share`,
    `closed_loop_benchmark_ms`); with all prompts at once it is one wave of num_prompts
    (`serving_wave_ms`). At a finite rate only TPOT is compared, at the batch of Little's
    law.
    """
    rows = []
    for number, doc in enumerate(docs, start=1):
        where = source if len(docs) == 1 else f"{source} (result {number})"
        rows.append({"row_id": number, **_vllm_row(doc, ids, where, identity)})
    return pd.DataFrame(rows, columns=list(MEASUREMENT_COLUMNS))
