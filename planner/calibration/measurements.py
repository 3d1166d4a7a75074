"""Measurement rows: published (and your own) measurements mapped to catalog ids.

`load_measurements(path)` reads `data/calibration/measured_public.csv` (the format of its
SOURCES.md) and maps every row to catalog ids (model, GPU, quant, KV dtype), an engine label,
the parallelism, the request shape and the measured metrics, converted to one unit each:
TPOT ms, TTFT ms, output tokens/s of the whole replica, end-to-end ms. Rows (or single
metrics) that cannot be compared honestly keep a reason in `skip_reason` / `metric_skips`.
`read_csv_measurements` reads a user CSV of the same format (catalog ids allowed in cells).

Assumptions made when mapping the public rows (each row's `assumptions` column repeats the
ones that apply to it):

* llama-bench `tg 512` starts from an empty context: input_len = 1 (the BOS token), 512
  generated tokens, so the mean context is ~257. `pp 512` is a separate 512-token prefill at
  batch 1: TTFT = 512 / pp * 1000 ms, compared with the prefill time (no queueing).
* Single-stream decode rates are TPOT = 1000 / (tokens/s); AutoAWQ's "decode tokens/s" at
  batch B is B sequences: TPOT = B * 1000 / (tokens/s).
* Throughput is output tokens/s of the whole replica: `total_output_tok_s`, or
  `output_tok_s_per_gpu * num_gpus`. A value whose per-GPU/total meaning is not stated is
  used only when tp = 1 (the two coincide); `other_throughput_tok_s` (output-only or
  input+output not stated) is never used.
* KV dtype when unstated: fp8 for TensorRT-LLM FP8/FP4 rows (the v0.5/v0.6 performance.md
  methodology builds the H100/L40S engines with `--enable_fp8 --fp8_kv_cache` and drops both
  on A100; the v1.0 ModelOpt FP8/FP4 checkpoints quantize the KV cache to FP8), else the
  quant's default. vLLM rows without a dtype run bf16 (vLLM's default for these
  checkpoints, whose config says bfloat16).
* Llama 3 8B/70B use the Llama 3.1 architecture entries; "LLaMA 7B/13B/70B" of the TensorRT-LLM
  tables (methodology text: Llama 2), Vicuna 7B and Llama-2-*-chat use llama-2-*.
* llama.cpp multi-GPU rows split layers across GPUs (no tensor parallelism): flagged
  `layer_split`, never fitted; their prediction treats the GPUs as one sequential device
  (tp = 1 timing, memory ignored).
* TP across PCIe GPUs whose catalog scale-up domain is 1 (2x RTX 4090 in the MLC blog) is
  modelled over the catalog's PCIe link bandwidth.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from planner.errors import InputError, shorten
from planner.inputs.catalog import Catalog, load_catalog
from planner.inputs.loading import package_folder, read_text
from planner.schema.limits import MAX_DATA_BYTES

# data/ of the repository, shipped as the package planner.data
DATA_DIR = package_folder("planner.data")
DEFAULT_CSV = DATA_DIR / "calibration" / "measured_public.csv"

METRICS: tuple[str, ...] = ("tpot", "ttft", "throughput", "e2e")
METRIC_UNITS = {"tpot": "ms", "ttft": "ms", "throughput": "tok/s", "e2e": "ms"}
MEASURED = {m: f"meas_{m}" for m in METRICS}
PREDICTED = {m: f"pred_{m}" for m in METRICS}

SERVER_ENGINES: tuple[str, ...] = ("trtllm", "vllm", "lmdeploy", "mlc")


_SOURCE_KEYS: tuple[tuple[str, str], ...] = (
    ("XiongjieDai/GPU-Benchmarks-on-LLM-Inference", "llamacpp-gpu-benchmarks"),
    ("perf-overview.md", "trtllm-perf-overview-v1.0"),
    ("docs/source/performance.md", "trtllm-performance-md-v0.6"),
    ("H200launch.md", "trtllm-h200-blogs"),
    ("Falcon180B-H200.md", "trtllm-h200-blogs"),
    ("lmdeploy", "lmdeploy-w4a16"),
    ("AutoAWQ", "autoawq-readme"),
    ("mlc-ai/blog", "mlc-blog-2023-10"),
    ("amd.com", "amd-rocm-vllm-mi300x"),
    ("buildkite.com/vllm", "vllm-buildkite-9515"),
)

# First match wins: "mlc-llm (as measured by LMDeploy team)" is mlc, not lmdeploy.
_ENGINES: tuple[tuple[str, str], ...] = (
    ("llama.cpp", "llamacpp"),
    ("tensorrt-llm", "trtllm"),
    ("llm-awq", "llm-awq"),
    ("autoawq", "autoawq"),
    ("mlc", "mlc"),
    ("turbomind", "lmdeploy"),
    ("lmdeploy", "lmdeploy"),
    ("sglang", "sglang"),
    ("vllm", "vllm"),
)
# Labels whose rows are continuous-batching servers (engine_class 'server'); SERVER_ENGINES,
# the rows the vllm recipe fits, stays as it is.
_SERVER_LABELS: tuple[str, ...] = (*SERVER_ENGINES, "sglang")

_GPUS: tuple[tuple[str, str | None], ...] = (
    ("rtx 3090", None),
    ("a6000", None),
    ("a40", None),
    ("apple", None),
    ("radeon", None),
    ("rtx 4090", "rtx-4090"),
    ("rtx 6000 ada", "rtx-6000-ada"),
    ("l40s", "l40s"),
    ("h100 pcie", "h100-pcie"),
    ("h100", "h100-sxm"),
    ("h200", "h200"),
    ("a100 pcie", "a100-80gb-pcie"),
    ("a100", "a100-80gb"),
    ("mi300x", "mi300x"),
    ("b200", "b200"),
)

_QUANTS: tuple[tuple[str, str], ...] = (
    (r"q4_k_m", "gguf-q4_k_m"),
    (r"int4|4-bit|q4f16|awq", "int4-awq"),
    (r"\bbf16\b", "bf16"),
    (r"\bfp?16\b", "fp16"),
    (r"\bfp8\b", "fp8"),
    (r"\bfp4\b", "fp4"),
)


def source_key(source: str) -> str:
    """A short stable key for one publication (the numbered sections of SOURCES.md)."""
    for needle, key in _SOURCE_KEYS:
        if needle.lower() in source.lower():
            return key
    return re.sub(r"[^a-z0-9]+", "-", source.lower()).strip("-")[:40]


def engine_label(framework: str) -> str:
    """llamacpp, trtllm, vllm, lmdeploy, mlc, autoawq, llm-awq or 'other'."""
    text = framework.lower()
    for needle, label in _ENGINES:
        if needle in text:
            return label
    return "other"


def map_gpu(name: str) -> str | None:
    """Catalog GPU id of a published GPU name; None for GPUs the catalog lacks."""
    text = name.lower()
    for needle, gpu_id in _GPUS:
        if needle in text:
            return gpu_id
    return None


def map_model(name: str) -> str | None:
    """Catalog model id of a published model name; None when the catalog has no entry."""
    text = name.lower().replace("_", " ")
    if "codellama" in text or "code llama" in text:
        return None
    if "mixtral" in text and "8x7" in text:
        return "mixtral-8x7b"
    if "mistral" in text and "7b" in text:
        return "mistral-7b"
    size = re.search(r"(\d+)\s*b\b", text)
    if size is None:
        return None
    billions = int(size.group(1))
    if "vicuna" in text and billions == 7:
        return "llama-2-7b"
    if re.search(r"llama[\s-]*3", text):
        if "3.3" in text and billions == 70:
            return "llama-3.3-70b"
        return {8: "llama-3.1-8b", 70: "llama-3.1-70b", 405: "llama-3.1-405b"}.get(billions)
    if "llama" in text:  # LLaMA 7B (methodology: Llama 2), llama 13b, Llama2-70B, Llama-2-*
        return {7: "llama-2-7b", 13: "llama-2-13b", 70: "llama-2-70b"}.get(billions)
    return None


def map_quant(precision: str, engine: str) -> tuple[str | None, str]:
    """Catalog quant id of a published precision, and the assumption made (if any)."""
    text = precision.lower()
    if not text.strip():
        if engine == "vllm":
            return "bf16", "dtype not published: vLLM default (checkpoint bfloat16) assumed"
        return None, ""
    for pattern, quant_id in _QUANTS:
        if re.search(pattern, text):
            note = ""
            if "q4f16_1" in text:
                note = "MLC q4f16_1 (group 32, 4.5 bits) mapped to int4-awq (4.16 bits)"
            return quant_id, note
    return None, ""


TRTLLM_FP8_KV_NOTE = "KV dtype not published: FP8 KV assumed for TensorRT-LLM FP8/FP4"


def trtllm_fp8_kv(engine: str, quant_id: str | None) -> bool:
    """TensorRT-LLM serving an FP8/FP4 checkpoint: FP8 KV assumed where the KV dtype is not
    published (ModelOpt's kv_cache_quant_algo FP8); the public and the aic rows alike."""
    return engine == "trtllm" and quant_id in ("fp8", "fp4")


def _kv_dtype(
    raw: pd.Series, engine: str, quant_id: str | None, catalog: Catalog
) -> tuple[str | None, str]:
    stated = str(raw.get("kv_cache_precision") or "").lower()
    if "fp8" in stated:
        return "fp8", ""
    if trtllm_fp8_kv(engine, quant_id):
        return "fp8", TRTLLM_FP8_KV_NOTE
    if quant_id is None:
        return None, ""
    if quant_id in catalog.quants:
        return catalog.quants[quant_id].default_kv_dtype, ""
    return None, ""


def _num(value: object) -> float:
    try:
        out = float(str(value).strip())
    except (TypeError, ValueError):
        return math.nan
    return out if math.isfinite(out) else math.nan


def _scenario_kind(scenario: str) -> str:
    text = scenario.lower()
    if "first-token" in text:
        return "ttft_probe"
    if "latency" in text:
        return "latency"
    if "infinite" in text:
        return "offline_throughput"
    if "static batch" in text:
        return "static_batch"
    return "single_stream"


@dataclass
class _RowMap:
    """What `_map_row` builds for one CSV row before it becomes a DataFrame row."""

    values: dict = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)
    metric_skips: list[str] = field(default_factory=list)


def _map_identity(raw: pd.Series, out: _RowMap, catalog: Catalog) -> None:
    engine = engine_label(str(raw["framework"]))
    # A cell that is a catalog id is taken as it is (user CSVs); published names are mapped.
    model_text, gpu_text = str(raw["model"]).strip(), str(raw["gpu"]).strip()
    precision = str(raw["weight_precision"] or "").strip()
    model_id = model_text if model_text in catalog.models else map_model(model_text)
    gpu_id = gpu_text if gpu_text in catalog.gpus else map_gpu(gpu_text)
    quant_id: str | None
    if precision in catalog.quants:
        quant_id, q_note = precision, ""
    else:
        quant_id, q_note = map_quant(precision, engine)
    kv, kv_note = _kv_dtype(raw, engine, quant_id, catalog)
    out.assumptions += [n for n in (q_note, kv_note) if n]
    if model_id is None:
        out.skips.append(f"model '{raw['model']}' has no catalog entry")
    if gpu_id is None:
        out.skips.append(f"GPU '{raw['gpu']}' is not in the catalog")
    if quant_id is None:
        out.skips.append(f"precision '{raw['weight_precision']}' not mapped")
    out.values.update(
        engine=engine,
        engine_class=(
            "server" if engine in _SERVER_LABELS else "local" if engine == "llamacpp" else "hf"
        ),
        model_id=model_id,
        gpu_id=gpu_id,
        quant_id=quant_id,
        kv_dtype=kv,
    )


def _map_shape(raw: pd.Series, out: _RowMap) -> None:
    engine = out.values["engine"]
    n_gpus = 1 if math.isnan(_num(raw["num_gpus"])) else int(_num(raw["num_gpus"]))
    tp = _num(raw["tp"])
    layer_split = engine == "llamacpp" and n_gpus > 1 and math.isnan(tp)
    if layer_split:
        out.skips.append(
            "llama.cpp multi-GPU run splits layers across GPUs (not tensor parallel); "
            "the model has no layer-split mode"
        )
    tp = 1 if layer_split else int(tp) if not math.isnan(tp) else n_gpus
    batch = _num(raw["batch_size"])
    i_len, o_len = _num(raw["input_len"]), _num(raw["output_len"])
    kind = _scenario_kind(str(raw["scenario"]))
    ttft_len = i_len
    if engine == "llamacpp" and math.isnan(i_len):
        i_len, ttft_len = 1.0, 512.0
        out.assumptions.append(
            "llama-bench tg starts from an empty context: input_len 1; TTFT from pp 512"
        )
    if kind == "offline_throughput" and math.isnan(batch):
        out.assumptions.append("batch not published: the largest batch that fits (max_batch)")
    out.values.update(
        num_gpus=n_gpus,
        tp=tp,
        layer_split=layer_split,
        batch=batch,
        input_len=i_len,
        output_len=o_len,
        scenario_kind=kind,
        ttft_input_len=ttft_len,
        ttft_batch=1.0 if math.isnan(batch) else batch,
    )


def _map_metrics(raw: pd.Series, out: _RowMap) -> None:
    v = out.values
    per_user, total = _num(raw["output_tok_s_per_user"]), _num(raw["total_output_tok_s"])
    per_gpu, tpot = _num(raw["output_tok_s_per_gpu"]), _num(raw["tpot_itl_ms"])
    batch = v["batch"]
    basis: dict[str, str] = {}
    if math.isnan(tpot) and not math.isnan(per_user):
        tpot, basis["tpot"] = 1000.0 / per_user, "1000 / output_tok_s_per_user"
    throughput = math.nan
    if v["engine"] == "autoawq" and not math.isnan(total):  # decode tokens/s of B sequences
        tpot, basis["tpot"] = batch * 1000.0 / total, "batch * 1000 / decode tok/s"
    elif not math.isnan(total):
        ambiguous = "per-gpu vs total not stated" in str(raw["notes"]).lower()
        if ambiguous and v["tp"] > 1:
            out.metric_skips.append(
                "throughput: per-GPU vs total not stated and tp > 1 (ambiguous)"
            )
        else:
            throughput, basis["throughput"] = total, "total_output_tok_s"
    elif not math.isnan(per_gpu):
        throughput = per_gpu * v["num_gpus"]
        basis["throughput"] = "output_tok_s_per_gpu * num_gpus"
    if not math.isnan(_num(raw["other_throughput_tok_s"])):
        out.metric_skips.append("throughput: output-only vs input+output not stated (unused)")
    ttft = _num(raw["ttft_ms"])
    prefill_rate = _num(raw["prefill_tok_s"])
    if math.isnan(ttft) and not math.isnan(prefill_rate):
        ttft = v["ttft_batch"] * v["ttft_input_len"] / prefill_rate * 1000.0
        basis["ttft"] = "ttft_batch * ttft_input_len / prefill_tok_s"
        if "anomalous" in str(raw["notes"]).lower():
            out.metric_skips.append("ttft: prefill rate flagged anomalous in SOURCES.md")
            ttft = math.nan
    v.update(
        meas_tpot=tpot,
        meas_ttft=ttft,
        meas_throughput=throughput,
        meas_e2e=_num(raw["e2e_latency_ms"]),
        metric_basis="; ".join(f"{k}: {b}" for k, b in basis.items()),
    )
    if all(math.isnan(v[MEASURED[m]]) for m in METRICS):
        out.skips.append("no unambiguous metric")


def _map_row(raw: pd.Series, catalog: Catalog) -> dict:
    out = _RowMap()
    out.values.update(
        row_id=int(raw["row_id"]),
        source_key=source_key(str(raw["source"])),
        source=str(raw["source"]),
        framework=str(raw["framework"]),
        model_raw=str(raw["model"]),
        gpu_raw=str(raw["gpu"]),
        precision_raw=str(raw["weight_precision"]),
    )
    _map_identity(raw, out, catalog)
    _map_shape(raw, out)
    _map_metrics(raw, out)
    out.values.update(
        assumptions="; ".join(out.assumptions),
        skip_reason="; ".join(out.skips),
        metric_skips="; ".join(out.metric_skips),
        wave_share=math.nan,
        prefill_budget_tokens=math.nan,
        harness_mixes_prefill=math.nan,
    )
    return out.values


def load_measurements(
    path: str | Path = DEFAULT_CSV, catalog: Catalog | None = None
) -> pd.DataFrame:
    """Read a measurements CSV (the measured_public.csv format) and map it to catalog ids.

    One output row per CSV row. `meas_tpot`/`meas_ttft`/`meas_e2e` are in ms and
    `meas_throughput` in output tokens/s of the whole replica; NaN where not measured or not
    usable. `skip_reason` is empty for rows that can be compared with the model.
    `catalog` (default: the project's) supplies each quant's default KV dtype.
    """
    catalog = catalog if catalog is not None else load_catalog()
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    return measurements_from_frame(raw, catalog)


def measurements_from_frame(raw: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """`load_measurements` of a CSV already read as strings (every column of the
    measured_public.csv header present; empty cells for what is not published)."""
    return pd.DataFrame([_map_row(r, catalog) for _, r in raw.iterrows()])


def usable(measurements: pd.DataFrame) -> pd.DataFrame:
    """The rows with no skip reason."""
    return measurements[measurements["skip_reason"] == ""]


# ---- your own CSVs (`planner validate`, `planner calibrate`) ----------------------------

CSV_COLUMNS: tuple[str, ...] = (
    "row_id", "source", "source_locator", "date", "framework", "framework_version", "model",
    "params_b", "weight_precision", "kv_cache_precision", "gpu", "num_gpus", "tp", "pp",
    "batch_size", "concurrency", "scenario", "input_len", "output_len", "tpot_itl_ms", "ttft_ms",
    "e2e_latency_ms", "output_tok_s_per_user", "total_output_tok_s", "output_tok_s_per_gpu",
    "prefill_tok_s", "other_throughput_tok_s", "metric_stat", "notes",
)  # fmt: skip
CSV_REQUIRED: tuple[str, ...] = ("framework", "model", "gpu", "weight_precision")
CSV_METRIC_COLUMNS: tuple[str, ...] = (
    "tpot_itl_ms", "ttft_ms", "e2e_latency_ms", "output_tok_s_per_user", "total_output_tok_s",
    "output_tok_s_per_gpu", "prefill_tok_s",
)  # fmt: skip
# The columns of `load_measurements`, in its order: vLLM JSON rows are built to match.
MEASUREMENT_COLUMNS: tuple[str, ...] = (
    "row_id", "source_key", "source", "framework", "model_raw", "gpu_raw", "precision_raw",
    "engine", "engine_class", "model_id", "gpu_id", "quant_id", "kv_dtype", "num_gpus", "tp",
    "layer_split", "batch", "input_len", "output_len", "scenario_kind", "ttft_input_len",
    "ttft_batch", "meas_tpot", "meas_ttft", "meas_throughput", "meas_e2e", "metric_basis",
    "assumptions", "skip_reason", "metric_skips", "wave_share", "prefill_budget_tokens",
    "harness_mixes_prefill",
)  # fmt: skip
# wave_share: the share of a closed-loop benchmark's requests that arrive as its clients'
# first round (one wave), where the run says it (a vLLM result: max_concurrency /
# num_prompts); NaN elsewhere, where the engine profile's fitted `benchmark_wave_share` applies.
# prefill_budget_tokens, harness_mixes_prefill: the prompt tokens one pass of the measured
# deployment prefills and whether it ran them in the decode steps (1.0 / 0.0), where the
# harness is known to have set them (the aic rows: calibration.aic.AIC_GENERATOR); NaN
# elsewhere, where the engine's own default on that GPU applies (prediction._scheduler).


def read_csv_measurements(path: str | Path, catalog: Catalog) -> pd.DataFrame:
    """A measurements CSV in the format of data/calibration/measured_public.csv. Only the
    identity columns (framework, model, gpu, weight_precision) and one metric column are
    required; cells may be catalog ids (llama-3.1-8b, h100-sxm, fp8) or published names."""
    from planner.calibration.checks import check_csv_cells, check_row_count

    path = Path(path)
    text = read_text(path, "a CSV or JSON file", MAX_DATA_BYTES)
    try:
        raw = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: malformed CSV: {str(exc).strip().splitlines()[0]}") from None
    missing = [c for c in CSV_REQUIRED if c not in raw.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}; the format is that of "
            "data/calibration/measured_public.csv (data/calibration/SOURCES.md)"
        )
    if not any(c in raw.columns for c in CSV_METRIC_COLUMNS):
        raise InputError(f"{path}: no metric column (one of {', '.join(CSV_METRIC_COLUMNS)})")
    raw = raw.assign(**{c: "" for c in CSV_COLUMNS if c not in raw.columns})
    if (raw["row_id"].str.strip() == "").all():
        raw["row_id"] = [str(i) for i in range(1, len(raw) + 1)]
    bad = [v for v in raw["row_id"] if not v.strip().isdigit()]
    if bad:
        raise InputError(f"{path}: row_id must be a whole number, got {shorten(bad[0])}")
    check_row_count(len(raw), str(path))
    check_csv_cells(raw, path)
    raw.loc[raw["source"].str.strip() == "", "source"] = path.name
    if raw.empty:
        return pd.DataFrame(columns=list(MEASUREMENT_COLUMNS))
    return measurements_from_frame(raw, catalog)
