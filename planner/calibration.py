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
  the log error (own Levenberg-Marquardt over numpy, no scipy), with the uncertainty of every
  constant from the Jacobian of the log residuals.

Your own measurements (`planner validate`, `planner calibrate`, at the end of this module):

* `read_measurements(paths, catalog, identity)`: CSVs in the measured_public.csv format and
  the JSON of `vllm bench serve --save-result` (`vllm_result_rows`; the JSON does not say
  what ran, so `Identity` names the model, GPU, tp and quant), as rows of the same schema.
* `validation(...)` / `render_validation`: predicted vs measured per row, error per metric.
* `calibrate(...)` / `render_calibration` / `calibration_header`: `fit_profile` on those rows
  as a new profile; refuses a fit of more constants than measured values.
* A serving-benchmark row at request rate inf is a closed loop of max_concurrency requests:
  compared as waves of that many requests arriving together (`serving_wave_ms`).

Nothing here writes a file except `write_profile` (`profile_yaml` gives the text).

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

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

from planner.catalog import Catalog, load_catalog
from planner.errors import InputError, unknown_name_message
from planner.loading import json_error, read_text
from planner.perf import evaluate as ev
from planner.perf import roofline as rf
from planner.perf.candidates import IDEAL, GridSpec, deployment_rows
from planner.perf.memory import PREFILL_CHUNK_TOKENS
from planner.schema.engine import Efficiency, EngineProfile
from planner.schema.model import Model

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEFAULT_CSV = PROJECT_DIR / "data" / "calibration" / "measured_public.csv"

METRICS: tuple[str, ...] = ("tpot", "ttft", "throughput", "e2e")
METRIC_UNITS = {"tpot": "ms", "ttft": "ms", "throughput": "tok/s", "e2e": "ms"}
MEASURED = {m: f"meas_{m}" for m in METRICS}
PREDICTED = {m: f"pred_{m}" for m in METRICS}

SERVER_ENGINES: tuple[str, ...] = ("trtllm", "vllm", "lmdeploy", "mlc")
FIT_PARAMS: tuple[str, ...] = (
    "eta_mem",
    "eta_compute_decode",
    "eta_compute_prefill",
    "allreduce_latency_us",
    "step_overhead_ms",
    "prefill_overhead_ms",
)
BOUNDS: dict[str, tuple[float, float]] = {
    "eta_mem": (0.3, 1.0),
    "eta_compute_decode": (0.3, 1.0),
    "eta_compute_prefill": (0.3, 1.0),
    "eta_kv": (0.3, 1.0),
    "allreduce_latency_us": (1.0, 100.0),
    "step_overhead_ms": (0.0, 20.0),
    "prefill_overhead_ms": (0.0, 20.0),
}
# Width of the prior that pulls a GPU-family override towards the default (natural units).
FAMILY_PRIOR_SCALE: dict[str, float] = {
    "eta_mem": 0.1,
    "eta_compute_decode": 0.1,
    "eta_compute_prefill": 0.1,
    "eta_kv": 0.1,
    "allreduce_latency_us": 10.0,
    "step_overhead_ms": 1.0,
    "prefill_overhead_ms": 2.0,
}

# ---------------------------------------------------------------------------------------
# Mapping the published rows to catalog ids
# ---------------------------------------------------------------------------------------

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


def _kv_dtype(
    raw: pd.Series, engine: str, quant_id: str | None, catalog: Catalog
) -> tuple[str | None, str]:
    stated = str(raw.get("kv_cache_precision") or "").lower()
    if "fp8" in stated:
        return "fp8", ""
    if engine == "trtllm" and quant_id in ("fp8", "fp4"):
        return "fp8", "KV dtype not published: FP8 KV assumed for TensorRT-LLM FP8/FP4"
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


# ---------------------------------------------------------------------------------------
# Predictions
# ---------------------------------------------------------------------------------------

ProfileArg = EngineProfile | Mapping[str, EngineProfile] | None


def _profile_for(profile: ProfileArg, engine: str) -> EngineProfile | None:
    if profile is None or isinstance(profile, EngineProfile):
        return profile
    return profile.get(engine) or profile.get("*")


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    return df[name].to_numpy(dtype=float)


def batch_prefill_ms(
    model: Model,
    frame: pd.DataFrame,
    batch: np.ndarray | None = None,
    input_len: np.ndarray | None = None,
    chunk_tokens: int = PREFILL_CHUNK_TOKENS,
) -> np.ndarray:
    """Prefill of `batch` requests of `input_len` tokens, B*I tokens run in passes of at
    most `chunk_tokens` (vLLM / TensorRT-LLM chunked prefill: max_num_batched_tokens 8192).

    Per pass, the same terms as `evaluate`'s per-request prefill: compute at the prefill
    efficiency, the weights read once (MoE: the experts the pass's tokens touch), two
    all-reduces per layer, the fixed prefill overhead. Compute and all-reduce payload scale
    with B*I; weight reads, collective latencies and the overhead with the number of passes.
    For B = 1 and I <= chunk_tokens it equals `prefill_ms`. `frame` holds a grid's deployment
    and eff_* columns; batch and input_len default to its `batch` and `input_len` columns.
    """
    b = _col(frame, "batch") if batch is None else np.asarray(batch, dtype=float)
    i_len = _col(frame, "input_len") if input_len is None else np.asarray(input_len, float)
    tp = _col(frame, "tp")
    tokens = b * i_len
    passes = np.maximum(np.ceil(tokens / chunk_tokens), 1.0)
    flops = b * ev.flops_prefill_per_request(model, i_len) / tp
    w_bytes = passes * ev.bytes_weights_per_step(model, frame, tokens / passes) / tp
    t_c = rf.latency_compute(
        flops, _col(frame, "peak_flops"), _col(frame, "eff_eta_compute_prefill")
    )
    t_m = rf.latency_memory(
        w_bytes, _col(frame, "bandwidth_bytes_per_s"), _col(frame, "eff_eta_mem")
    )
    t_comm = passes * rf.latency_allreduce(
        tp,
        model.num_hidden_layers,
        tokens / passes,
        model.hidden_size,
        _col(frame, "link_bytes_per_s"),
        _col(frame, "eff_allreduce_latency_us") * 1e-6,
    )
    overhead = passes * _col(frame, "eff_prefill_overhead_ms")
    return (np.maximum(t_c, t_m) + t_comm) * 1e3 + overhead


def static_batch_e2e_ms(
    model: Model, evaluated: pd.DataFrame, tpot_step_ms: np.ndarray | None = None
) -> np.ndarray:
    """End-to-end latency of a batch of B requests (vLLM latency benchmark, TensorRT-LLM
    gptSessionBenchmark, and one turn of offline continuous batching): B prefills of I tokens
    batched (`batch_prefill_ms`), then O - 1 decode steps at batch B (the prefill emits the
    first token), each at `tpot_step_ms` (mean context I + O/2). `evaluated` is an
    evaluated grid at that batch and shape.

    e2e = prefill(B x I tokens) + (O - 1) * tpot_step(B)
    """
    steps = np.maximum(_col(evaluated, "output_len") - 1.0, 0.0)
    step = _col(evaluated, "tpot_step_ms") if tpot_step_ms is None else tpot_step_ms
    return batch_prefill_ms(model, evaluated) + steps * step


_CORE_COLUMNS = ("tpot_step_ms", "prefill_ms", "max_batch", "fits", "bound", "prefill_bound")


def _evaluate_core(model: Model, grid: pd.DataFrame) -> dict[str, np.ndarray]:
    """Memory, decode step, prefill and serving rate of `evaluate`, without queueing (whose
    Erlang recursion costs one numpy step per sequence slot: slow at batch 5000)."""
    full = ev.evaluate(model, grid, statistic="none")
    return {k: full[k].to_numpy() for k in (*_CORE_COLUMNS, "throughput_tok_s", "tpot_ms")}


EFF_FIELDS: tuple[str, ...] = tuple(Efficiency.model_fields)


@dataclass
class Design:
    """The measurement rows as grid rows, grouped by model, ready for repeated evaluation.

    `rows` are the measurement rows that can be predicted (mapped model, GPU and quant, a
    valid deployment); `groups` hold (model, grid, positions in rows). Batches left open
    (offline max-throughput rows) are resolved to max_batch with the memory constants of the
    profile the design was built with; fits do not change those constants.
    """

    rows: pd.DataFrame
    groups: list[tuple[Model, pd.DataFrame, np.ndarray]]
    rejected: pd.DataFrame

    def families(self) -> np.ndarray:
        return self.rows["gpu_family"].to_numpy()

    def subset(self, mask: np.ndarray) -> Design:
        """The design restricted to the rows where `mask` is true (batches stay resolved)."""
        mask = np.asarray(mask, dtype=bool)
        new_pos = np.cumsum(mask) - 1
        groups = []
        for model, grid, pos in self.groups:
            keep = mask[pos]
            if keep.any():
                groups.append((model, grid[keep].reset_index(drop=True), new_pos[pos[keep]]))
        return Design(rows=self.rows[mask], groups=groups, rejected=self.rejected)

    def evaluate(self, effs: Efficiency | Sequence[Efficiency]) -> pd.DataFrame:
        """Predictions for every row (aligned to rows), with one efficiency for all rows or
        one per row."""
        n = len(self.rows)
        res = {
            k: np.full(n, np.nan)
            for k in ("tpot_step_ms", "prefill_ms", "max_batch", "throughput_serving_model")
        }
        res.update({k: np.full(n, np.nan) for k in PREDICTED.values()})
        res["fits"] = np.zeros(n, dtype=bool)
        res["bound"] = np.full(n, "", dtype=object)
        for model, grid, pos in self.groups:
            _set_eff(grid, effs if isinstance(effs, Efficiency) else [effs[i] for i in pos])
            core = _evaluate_core(model, grid)
            for key in ("tpot_step_ms", "prefill_ms", "max_batch", "fits", "bound"):
                res[key][pos] = core[key]
            _predict_metrics(model, grid, core, res, pos)
        return pd.DataFrame(res, index=self.rows.index)


def _set_eff(grid: pd.DataFrame, effs: Efficiency | Sequence[Efficiency]) -> None:
    if isinstance(effs, Efficiency):
        for name, value in effs.model_dump().items():
            grid[f"eff_{name}"] = float(value)
        return
    dumped = [e.model_dump() for e in effs]
    for name in EFF_FIELDS:
        grid[f"eff_{name}"] = np.array([d[name] for d in dumped], dtype=float)


def _predict_metrics(
    model: Model, grid: pd.DataFrame, core: dict, res: dict, pos: np.ndarray
) -> None:
    """TPOT: the decode step. TTFT: prefill of ttft_batch x ttft_input_len (no queueing).
    Throughput: B * O / e2e (static batches and offline continuous batching alike). E2E:
    batched prefill + (O-1) decode steps. Also the serving-rate throughput of `evaluate`
    (per-request prefill) as `throughput_serving_model`, for comparison. Serving-benchmark
    rows (scenario kinds in SERVING_KINDS) replace TPOT and TTFT: see `serving_wave_ms`."""
    e2e = static_batch_e2e_ms(model, grid, core["tpot_step_ms"])
    tpot = np.array(core["tpot_step_ms"], dtype=float)
    ttft = batch_prefill_ms(model, grid, _col(grid, "ttft_batch"), _col(grid, "ttft_input_len"))
    kinds = grid["scenario_kind"].to_numpy()
    wave = kinds == "serving"
    if wave.any():
        w_ttft, w_tpot = serving_wave_ms(model, grid[wave], tpot[wave])
        ttft[wave], tpot[wave] = w_ttft, w_tpot
    poisson = kinds == "serving_poisson"
    tpot[poisson] = np.asarray(core["tpot_ms"], dtype=float)[poisson]
    res[PREDICTED["tpot"]][pos] = tpot
    res[PREDICTED["ttft"]][pos] = ttft
    res[PREDICTED["throughput"]][pos] = _col(grid, "batch") * _col(grid, "output_len") / e2e * 1e3
    res[PREDICTED["e2e"]][pos] = e2e
    res["throughput_serving_model"][pos] = core["throughput_tok_s"]


# Serving-benchmark rows (`vllm bench serve`, planner.measurements): "serving" is a closed
# loop at infinite request rate with `batch` requests in flight; "serving_poisson" is a
# finite request rate (batch from Little's law, TPOT only).
SERVING_KINDS: tuple[str, ...] = ("serving", "serving_poisson")


def serving_wave_ms(
    model: Model,
    grid: pd.DataFrame,
    tpot_step_ms: np.ndarray,
    chunk_tokens: int = PREFILL_CHUNK_TOKENS,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean TTFT and mean TPOT of a wave of B equal requests that arrive together.

    `vllm bench serve --request-rate inf --max-concurrency B` with fixed lengths sends B
    requests at once, and B new ones when those finish (they finish together), so every
    wave starts on an idle replica. The B prompts are prefilled in n = ceil(B I / C)
    chunked passes (C = 8192 tokens, `batch_prefill_ms` P for the whole wave, p = P / n per
    pass); prompt j (1..B, packed in order) completes in pass k_j = ceil(j I / C), so its
    TTFT is k_j p. It then decodes one token per pass in the remaining n - k_j passes
    (decode tokens ride in the mixed prefill batches), and the rest at the decode step s(B):

        TTFT = mean_j(k_j) p
        TPOT = mean_j((m_j p + (O - 1 - m_j) s) / (O - 1)),  m_j = min(n - k_j, O - 1)

    B * O / (P + (O - 1) s), the throughput `predict` compares for every row, is this wave's
    output rate. Queueing for a slot is nil by construction (at most B in flight).
    """
    b = np.maximum(np.rint(_col(grid, "batch")), 1.0).astype(int)
    i_len = _col(grid, "input_len")
    o_len = _col(grid, "output_len")
    total = batch_prefill_ms(model, grid, b.astype(float), i_len, chunk_tokens)
    passes = np.maximum(np.ceil(b * i_len / chunk_tokens), 1.0)
    per_pass = total / passes
    ttft = np.empty(len(b))
    tpot = np.empty(len(b))
    for n, (bb, ii, oo, nn) in enumerate(zip(b, i_len, o_len, passes, strict=True)):
        k = np.maximum(np.ceil(np.arange(1, bb + 1) * ii / chunk_tokens), 1.0)
        ttft[n] = k.mean() * per_pass[n]
        decode = max(oo - 1.0, 1.0)
        m = np.minimum(nn - k, decode)
        tpot[n] = np.mean(m * per_pass[n] + (decode - m) * tpot_step_ms[n]) / decode
    return ttft, tpot


def _deployment(row: pd.Series, catalog: Catalog) -> tuple[dict | None, str, str]:
    """One grid row (without batch/shape) for a measurement row, or the reason it has none."""
    model = catalog.model(row["model_id"])
    gpu = catalog.gpu(row["gpu_id"])
    tp = int(row["tp"])
    note = ""
    if tp > gpu.scaleup_domain_gpus:
        gpu = gpu.model_copy(update={"scaleup_domain_gpus": tp})
        note = f"tp {tp} over {gpu.interconnect} (beyond the catalog's scale-up domain)"
    spec = GridSpec(
        gpus=[gpu], quants=[catalog.quant(row["quant_id"])], tps=[tp], kv_dtypes=[row["kv_dtype"]]
    )
    ok, rejected = deployment_rows(model, spec, None, ideal=True)
    if not ok:
        return None, rejected[0]["reason"], note
    return ok[0], "", note


def build_design(
    measurements: pd.DataFrame, catalog: Catalog, profile: ProfileArg, ideal: bool = False
) -> Design:
    """Grid rows for every mapped measurement row (skipped rows included: layer-split rows
    are predicted as one sequential device); unresolvable rows go to `rejected`."""
    mapped = measurements.dropna(subset=["model_id", "gpu_id", "quant_id", "kv_dtype"])
    records, keep, rejected = [], [], []
    for idx, row in mapped.iterrows():
        dep, reason, note = _deployment(row, catalog)
        if dep is None:
            rejected.append({"row_id": row["row_id"], "reason": reason})
            continue
        batch = row["batch"]
        dep.update(
            batch=1 if math.isnan(batch) else int(batch),
            shape_index=0,
            input_len=row["input_len"],
            output_len=row["output_len"],
            ttft_input_len=row["ttft_input_len"],
            ttft_batch=row["ttft_batch"],
            scenario_kind=row["scenario_kind"],
            _open_batch=math.isnan(batch),
            _family=catalog.gpu(row["gpu_id"]).family,
            _note=note,
        )
        records.append(dep)
        keep.append(idx)
    rows = measurements.loc[keep].copy()
    grid_all = pd.DataFrame(records, index=rows.index)
    rows["gpu_family"] = grid_all["_family"] if records else []
    rows["predict_note"] = grid_all["_note"] if records else []
    groups = []
    for model_id, sub in grid_all.groupby(rows["model_id"], sort=True) if records else []:
        pos = rows.index.get_indexer(sub.index)
        grid = sub.drop(columns=["_family", "_note"]).reset_index(drop=True)
        groups.append((catalog.model(model_id), grid, pos))
    design = Design(rows=rows, groups=groups, rejected=pd.DataFrame(rejected))
    _resolve_open_batches(design, _row_effs(design, profile, ideal))
    return design


def _resolve_open_batches(design: Design, effs: Sequence[Efficiency]) -> None:
    """Rows whose batch is not published run at the largest batch that fits."""
    for model, grid, pos in design.groups:
        open_rows = grid["_open_batch"].to_numpy(dtype=bool)
        if not open_rows.any():
            continue
        _set_eff(grid, [effs[i] for i in pos])
        max_batch = _evaluate_core(model, grid)["max_batch"]
        grid.loc[open_rows, "batch"] = np.maximum(max_batch[open_rows], 1)


def _row_effs(design: Design, profile: ProfileArg, ideal: bool) -> list[Efficiency]:
    if ideal:
        return [IDEAL] * len(design.rows)
    out = []
    for engine, family in zip(design.rows["engine"], design.rows["gpu_family"], strict=True):
        prof = _profile_for(profile, engine)
        out.append(IDEAL if prof is None else prof.for_family(family))
    return out


def predict(
    measurements: pd.DataFrame, catalog: Catalog, profile: ProfileArg, ideal: bool = False
) -> pd.DataFrame:
    """The model's prediction of every mapped row's metrics.

    `profile` is one EngineProfile for every row, or a mapping engine label -> profile
    (key '*' as fallback). Which model output is compared with each measurement:

    * TPOT: `tpot_step_ms` at the row's batch and shape (single-stream and static runs have no
      prefill interleaved, so not `tpot_ms`).
    * TTFT: the prefill time of `ttft_batch` requests of `ttft_input_len` tokens (batch-1
      probes and llama-bench pp 512: no queueing, no in-flight decode).
    * Throughput: B * O / `static_batch_e2e_ms` at the published batch, or at max_batch
      when none is published (offline runs at infinite request rate). For static batches
      this is the benchmark's own definition; for offline continuous batching it is the
      steady state with prefills batched into chunks. `evaluate`'s `throughput_tok_s`
      charges every request its own prefill pass (a full weight read and the fixed prefill
      overhead each), which at batch 1000+ and short prompts under-predicts by up to 2x;
      it is kept as `throughput_serving_model` for comparison.
    * E2E: `static_batch_e2e_ms`.
    * Serving-benchmark rows (`vllm_result_rows`): at request rate inf ('serving') TTFT and
      TPOT are the means over a wave of `batch` requests arriving together
      (`serving_wave_ms`), throughput as above (the wave's output rate); at a finite rate
      ('serving_poisson') TPOT is `evaluate`'s `tpot_ms` (prefill interleaved).

    Returns the predictable rows of `measurements` with pred_* columns and diagnostics.
    """
    design = build_design(measurements, catalog, profile, ideal)
    return _assemble(design, design.evaluate(_row_effs(design, profile, ideal)))


def _assemble(design: Design, res: pd.DataFrame) -> pd.DataFrame:
    out = design.rows.copy()
    batches = np.full(len(out), np.nan)
    for _, grid, pos in design.groups:
        batches[pos] = grid["batch"].to_numpy(dtype=float)
    out["pred_batch"] = batches
    for col in res.columns:
        out[col] = res[col]
    for m in METRICS:
        out.loc[out[MEASURED[m]].isna(), PREDICTED[m]] = np.nan
    return out


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------


def long_errors(pred: pd.DataFrame, include_skipped: bool = False) -> pd.DataFrame:
    """One row per (measurement row, metric) with measured, predicted and the errors.

    `signed_pct` = (pred - meas) / meas * 100; `optimism_pct` > 0 means the model predicts a
    faster system than measured (lower latency or higher throughput)."""
    frame = pred if include_skipped else pred[pred["skip_reason"] == ""]
    parts = []
    keep = [
        "row_id",
        "source_key",
        "engine",
        "gpu_id",
        "gpu_family",
        "model_id",
        "quant_id",
        "tp",
        "skip_reason",
    ]
    for m in METRICS:
        sub = frame[frame[MEASURED[m]].notna() & frame[PREDICTED[m]].notna()]
        if sub.empty:
            continue
        part = sub[keep].copy()
        part["metric"] = m
        part["measured"] = sub[MEASURED[m]].to_numpy(dtype=float)
        part["predicted"] = sub[PREDICTED[m]].to_numpy(dtype=float)
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=[*keep, "metric", "measured", "predicted"])
    out = pd.concat(parts, ignore_index=True)
    ratio = out["predicted"] / out["measured"]
    out["signed_pct"] = (ratio - 1.0) * 100.0
    out["abs_pct"] = out["signed_pct"].abs()
    speed = np.where(out["metric"] == "throughput", ratio, 1.0 / ratio)
    out["optimism_pct"] = (speed - 1.0) * 100.0
    out["log_ratio"] = np.log(ratio)
    return out


def _summary(errors: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    grouped = errors.groupby(keys, sort=True)
    out = grouped.agg(
        n=("abs_pct", "size"),
        median_abs_pct=("abs_pct", "median"),
        p90_abs_pct=("abs_pct", lambda s: float(np.percentile(s, 90))),
        median_signed_pct=("signed_pct", "median"),
        median_optimism_pct=("optimism_pct", "median"),
    )
    return out.reset_index()


def error_table(pred: pd.DataFrame, include_skipped: bool = False) -> pd.DataFrame:
    """Median and 90th-percentile absolute % error per metric: over all rows (by='all'),
    per GPU (by='gpu') and per source (by='source'). Columns: by, group, metric, n,
    median_abs_pct, p90_abs_pct, median_signed_pct, median_optimism_pct."""
    errors = long_errors(pred, include_skipped)
    if errors.empty:
        return pd.DataFrame(
            columns=[
                "by",
                "group",
                "metric",
                "n",
                "median_abs_pct",
                "p90_abs_pct",
                "median_signed_pct",
                "median_optimism_pct",
            ]
        )
    tables = []
    for by, key in (("all", None), ("gpu", "gpu_id"), ("source", "source_key")):
        if key is None:
            part = _summary(errors.assign(group="all"), ["group", "metric"])
        else:
            part = _summary(errors.rename(columns={key: "group"}), ["group", "metric"])
        tables.append(part.assign(by=by))
    out = pd.concat(tables, ignore_index=True)
    return out[
        [
            "by",
            "group",
            "metric",
            "n",
            "median_abs_pct",
            "p90_abs_pct",
            "median_signed_pct",
            "median_optimism_pct",
        ]
    ]


# ---------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------


def _to_z(name: str, value: float) -> float:
    lo, hi = BOUNDS[name]
    u = min(max((value - lo) / (hi - lo), 1e-6), 1 - 1e-6)
    return math.log(u / (1.0 - u))


def _from_z(name: str, z: float) -> float:
    lo, hi = BOUNDS[name]
    return lo + (hi - lo) / (1.0 + math.exp(-min(max(z, -30.0), 30.0)))


def levenberg_marquardt(
    fun: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    max_iter: int = 100,
    rtol: float = 1e-9,
    step: float = 1e-5,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Minimise ||fun(x)||^2 from x0 (forward-difference Jacobian, Marquardt scaling).
    Returns (x, residuals at x, evaluations)."""
    x = np.asarray(x0, dtype=float).copy()
    r = fun(x)
    cost, lam, n_eval = float(r @ r), 1e-3, 1
    for _ in range(max_iter):
        jac = _jacobian(fun, x, r, step)
        n_eval += len(x)
        grad, hess = jac.T @ r, jac.T @ jac
        improved = False
        while lam < 1e12:
            damp = lam * (np.diag(hess) + 1e-9)
            delta = np.linalg.solve(hess + np.diag(damp), -grad)
            r_new = fun(x + delta)
            n_eval += 1
            c_new = float(r_new @ r_new)
            if c_new < cost:
                done = cost - c_new <= rtol * max(cost, 1e-300)
                x, r, cost, lam, improved = x + delta, r_new, c_new, max(lam / 5, 1e-9), True
                break
            lam *= 5
        if not improved or done:
            break
    return x, r, n_eval


def _jacobian(
    fun: Callable[[np.ndarray], np.ndarray], x: np.ndarray, r: np.ndarray, step: float
) -> np.ndarray:
    jac = np.empty((len(r), len(x)))
    for j in range(len(x)):
        xp = x.copy()
        xp[j] += step
        jac[:, j] = (fun(xp) - r) / step
    return jac


@dataclass
class _Problem:
    """Residuals of one fit: which rows, which metrics, weights, and which params move."""

    design: Design
    base: Efficiency
    names: tuple[str, ...]
    targets: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]  # metric, pos, meas, w
    prior: Mapping[str, float] | None = None
    prior_weight: float = 0.0
    sigma: float = 1.0  # data residuals are log errors / sigma (matters with a prior only)
    evaluations: int = 0

    def eff(self, values: Mapping[str, float]) -> Efficiency:
        return self.base.model_copy(update=dict(values))

    def values(self, z: np.ndarray) -> dict[str, float]:
        return {n: _from_z(n, zi) for n, zi in zip(self.names, z, strict=True)}

    def residuals(self, z: np.ndarray) -> np.ndarray:
        self.evaluations += 1
        res = self.design.evaluate(self.eff(self.values(z)))
        parts = [
            np.sqrt(w) * np.log(res[PREDICTED[m]].to_numpy()[pos] / meas) / self.sigma
            for m, pos, meas, w in self.targets
        ]
        if self.prior is not None and self.prior_weight > 0:
            vals = self.values(z)
            parts.append(
                np.array(
                    [
                        math.sqrt(self.prior_weight)
                        * (vals[n] - self.prior[n])
                        / FAMILY_PRIOR_SCALE[n]
                        for n in self.names
                    ]
                )
            )
        return np.concatenate(parts) if parts else np.zeros(0)


def _targets(
    design: Design, weighting: str
) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    rows = design.rows
    counts = rows["source_key"].value_counts()
    out = []
    for m in METRICS:
        meas = rows[MEASURED[m]].to_numpy(dtype=float)
        pos = np.flatnonzero(np.isfinite(meas) & (meas > 0))
        if len(pos) == 0:
            continue
        if weighting == "sqrt_source":
            w = 1.0 / np.sqrt(counts[rows["source_key"].to_numpy()[pos]].to_numpy(float))
        else:
            w = np.ones(len(pos))
        out.append((m, pos, meas[pos], w))
    mean_w = np.mean(np.concatenate([t[3] for t in out])) if out else 1.0
    return [(m, pos, meas, w / mean_w) for m, pos, meas, w in out]  # mean weight 1


def _fit_mask(
    design: Design,
    engine_filter: Iterable[str] | str | None,
    row_filter: Callable[[pd.DataFrame], pd.Series] | None,
) -> np.ndarray:
    rows = design.rows
    mask = np.array(rows["skip_reason"] == "", dtype=bool)
    if engine_filter is not None:
        engines = {engine_filter} if isinstance(engine_filter, str) else set(engine_filter)
        mask = mask & np.array(rows["engine"].isin(engines), dtype=bool)
    if row_filter is not None:
        mask = mask & np.array(row_filter(rows), dtype=bool)
    return mask


def _jacobian_natural(problem: _Problem, values: Mapping[str, float]) -> np.ndarray:
    """d residual / d constant in natural units; one-sided steps of 1e-4 of each constant's
    range, pointing into the bounds (so constants at a bound get a finite derivative)."""
    names = problem.names
    r0 = problem.residuals(np.array([_to_z(n, values[n]) for n in names]))
    cols = []
    for name in names:
        lo, hi = BOUNDS[name]
        step = 1e-4 * (hi - lo)
        step = step if values[name] + step <= hi else -step
        moved = {**values, name: values[name] + step}
        z = np.array([_to_z(n, moved[n]) for n in names])
        cols.append((problem.residuals(z) - r0) / step)
    return np.column_stack(cols) if cols else np.zeros((len(r0), 0))


def _identified(problem: _Problem, values: Mapping[str, float]) -> list[bool]:
    """A constant is identified when moving it changes some data residual."""
    jac = _jacobian_natural(problem, values)
    n_data = sum(len(t[1]) for t in problem.targets)
    return [bool(np.max(np.abs(jac[:n_data, j]), initial=0.0) > 1e-9) for j in range(jac.shape[1])]


def _starts(names: Sequence[str], base: Efficiency, n_starts: int) -> list[np.ndarray]:
    z_base = np.array([_to_z(n, getattr(base, n)) for n in names])
    starts = [z_base]
    rng = np.random.default_rng(0)
    for _ in range(max(n_starts - 1, 0)):
        starts.append(rng.normal(0.0, 1.0, size=len(names)))
    return starts


def _solve(problem: _Problem, n_starts: int) -> tuple[np.ndarray, np.ndarray]:
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for z0 in _starts(problem.names, problem.base, n_starts):
        z, r, _ = levenberg_marquardt(problem.residuals, z0)
        cost = float(r @ r)
        if best is None or cost < best[0] - 1e-12:
            best = (cost, z, r)
    assert best is not None
    return best[1], best[2]


def _uncertainty(problem: _Problem, values: Mapping[str, float], r: np.ndarray) -> dict:
    """1-sigma of each fitted constant: s^2 (J^T J)^-1 with J the Jacobian of the (weighted)
    log residuals in natural units and s^2 the residual variance per degree of freedom
    (prior rows included, so family overrides get their posterior width). For a constant at
    a bound this is the width of the one-sided curvature only."""
    jac = _jacobian_natural(problem, values)
    dof = max(len(r) - len(values), 1)
    s2 = float(r @ r) / dof
    try:
        cov = s2 * np.linalg.pinv(jac.T @ jac)
        sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    except np.linalg.LinAlgError:  # pragma: no cover
        sd = np.full(len(values), np.nan)
    return {n: float(x) for n, x in zip(problem.names, sd, strict=True)}


def _fit_one(
    design: Design,
    base: Efficiency,
    params: Sequence[str],
    weighting: str,
    n_starts: int,
    prior: Mapping[str, float] | None = None,
    prior_weight: float = 0.0,
    sigma: float = 1.0,
) -> tuple[Efficiency, dict]:
    if prior is not None:  # start at, and freeze unseen constants to, the prior's values
        base = base.model_copy(update={n: prior[n] for n in params})
    targets = _targets(design, weighting)
    problem = _Problem(design, base, tuple(params), targets)
    base_values = {n: getattr(base, n) for n in params}
    ident = _identified(problem, base_values) if targets else [False] * len(params)
    free = tuple(n for n, ok in zip(params, ident, strict=True) if ok)
    problem = _Problem(design, base, free, targets, prior, prior_weight, sigma)
    report: dict = {
        "rows": len(design.rows),
        "residuals": int(sum(len(t[1]) for t in targets)),
        "fitted": list(free),
        "not_identified": [n for n in params if n not in free],
    }
    if not free:
        return base, report
    r0 = problem.residuals(np.array([_to_z(n, getattr(base, n)) for n in free]))
    z, r = _solve(problem, n_starts)
    values = problem.values(z)
    sd = _uncertainty(problem, values, r)
    n_data = report["residuals"]
    report.update(
        values=values,
        sd=sd,
        at_bound=[
            n
            for n, v in values.items()
            if min(abs(v - b) for b in BOUNDS[n]) < 1e-3 * (BOUNDS[n][1] - BOUNDS[n][0])
        ],
        rms_log_before=float(sigma * np.sqrt(np.mean(r0[:n_data] ** 2))),
        rms_log_after=float(sigma * np.sqrt(np.mean(r[:n_data] ** 2))),
        evaluations=problem.evaluations,
    )
    return problem.eff(values), report


def fit_profile(
    measurements: pd.DataFrame,
    catalog: Catalog,
    base_profile: EngineProfile,
    engine_filter: Iterable[str] | str | None = SERVER_ENGINES,
    params: Sequence[str] = FIT_PARAMS,
    families: Sequence[str] = (),
    min_family_rows: int = 8,
    family_prior_weight: float = 1.0,
    weighting: str = "sqrt_source",
    n_starts: int = 3,
    row_filter: Callable[[pd.DataFrame], pd.Series] | None = None,
    prior_profile: EngineProfile | None = None,
    prior_weight: float = 1.0,
    family_params: Sequence[str] | None = None,
) -> tuple[EngineProfile, dict]:
    """Fit efficiency constants of `base_profile` on the usable rows of the chosen engines.

    Least squares on the log error of every measured metric (TPOT, TTFT, throughput, e2e),
    each row weighted 1/sqrt(rows of its source) so one big table cannot drown the others
    (weighting='equal' to switch off). Parameters move inside BOUNDS through a logistic
    transform; a parameter the rows cannot see (no residual changes with it, e.g.
    allreduce latency without tp > 1 rows) keeps its base value and is reported as not
    identified. Multi-start (base values + random starts) guards against the kinks of the
    roofline max().

    `families`: GPU families that get their own override when they have >= min_family_rows
    rows; an override is fitted on that family's rows only, with a Gaussian prior pulling
    it towards the default: residuals are log errors / s (s = the default fit's weighted rms
    log error, the noise level of these rows) and (constant - default) / FAMILY_PRIOR_SCALE
    times sqrt(family_prior_weight).

    `family_params`: the constants an override may change (default: `params`).

    `prior_profile`: partial pooling for engines whose rows leave some directions loose (the
    TensorRT-LLM tables have no small-batch decode, so eta_mem trades against the step
    overhead): the default is pulled towards `prior_profile.default` exactly as a family
    override is pulled towards the default (s from a first unpooled fit).

    Returns the profile (default fitted, overrides added, everything else from base) and a
    report: rows used, per-constant value and 1-sigma, constants at a bound, rms log error
    before and after, per family.
    """
    full = build_design(measurements, catalog, base_profile)
    design = full.subset(_fit_mask(full, engine_filter, row_filter))
    if prior_profile is None:
        default, rep = _fit_one(design, base_profile.default, params, weighting, n_starts)
    else:
        _, first = _fit_one(design, base_profile.default, params, weighting, 1)
        default, rep = _fit_one(
            design,
            base_profile.default,
            params,
            weighting,
            n_starts,
            {n: getattr(prior_profile.default, n) for n in params},
            prior_weight,
            max(first.get("rms_log_after", 0.1), 0.03),
        )
        rep["prior"] = prior_profile.id
    report: dict = {
        "default": rep,
        "row_ids": design.rows["row_id"].tolist(),
        "sources": design.rows["source_key"].value_counts().to_dict(),
        "families": {},
    }
    fam_col = design.families()
    overrides: dict[str, Efficiency] = {}
    for fam in families:
        fam_mask = fam_col == fam
        if fam_mask.sum() < min_family_rows:
            report["families"][fam] = {"rows": int(fam_mask.sum()), "skipped": "too few rows"}
            continue
        fparams = tuple(family_params or params)
        prior = {n: getattr(default, n) for n in fparams}
        sigma = max(rep.get("rms_log_after", 0.1), 0.03)
        eff, fam_rep = _fit_one(
            design.subset(fam_mask),
            default,
            fparams,
            weighting,
            n_starts,
            prior,
            family_prior_weight,
            sigma,
        )
        overrides[fam] = eff
        report["families"][fam] = fam_rep
    profile = base_profile.model_copy(update={"default": default, "families": overrides})
    return profile, report


def identifiable(
    measurements: pd.DataFrame,
    catalog: Catalog,
    base_profile: EngineProfile,
    params: Sequence[str] = FIT_PARAMS,
    engine_filter: Iterable[str] | str | None = None,
) -> dict:
    """What `fit_profile` would see before it fits: the rows it would use, the measured
    values (rows x metrics) and the constants some residual moves with ('identified'; the
    others keep their base value). A fit of more constants than values is underdetermined:
    `planner calibrate` refuses it and names the constants to drop."""
    full = build_design(measurements, catalog, base_profile)
    design = full.subset(_fit_mask(full, engine_filter, None))
    targets = _targets(design, "equal")
    problem = _Problem(design, base_profile.default, tuple(params), targets)
    base_values = {n: getattr(base_profile.default, n) for n in params}
    ident = _identified(problem, base_values) if targets else [False] * len(params)
    return {
        "rows": len(design.rows),
        "values": int(sum(len(t[1]) for t in targets)),
        "identified": [n for n, ok in zip(params, ident, strict=True) if ok],
        "not_identified": [n for n, ok in zip(params, ident, strict=True) if not ok],
        "rejected": design.rejected,
    }


def support(
    measurements: pd.DataFrame,
    catalog: Catalog,
    profile: EngineProfile,
    params: Sequence[str] = FIT_PARAMS,
) -> dict[str, int]:
    """How many usable rows' predictions move with each constant at `profile`'s default
    values: a constant seen by one or two rows (eta_compute_decode when a single point is
    past the ridge) is fitted to those rows' noise."""
    full = build_design(measurements, catalog, profile)
    design = full.subset(_fit_mask(full, None, None))
    targets = _targets(design, "equal")
    if not targets:
        return dict.fromkeys(params, 0)
    problem = _Problem(design, profile.default, tuple(params), targets)
    jac = _jacobian_natural(problem, {n: getattr(profile.default, n) for n in params})
    pos = np.concatenate([t[1] for t in targets])
    return {n: len(set(pos[np.abs(jac[:, j]) > 1e-9])) for j, n in enumerate(params)}


# ---------------------------------------------------------------------------------------
# The shipped profiles: which rows fit which engine profile
# ---------------------------------------------------------------------------------------

# Starting values and the constants that are not fitted (eta_kv, mem_util, runtime reserve):
# the pre-calibration defaults of catalogs/engines/vllm.yaml. They are engineering priors,
# not measurements: a decode that streams weights at ~3/4 of peak bandwidth, GEMMs at about
# half of peak in decode and ~60% in prefill, collectives of ~15 us, a scheduler/launch cost
# of ~1.5 ms a step and ~5 ms a prefill. A recipe with `base_prior_weight` > 0 pulls its fit
# gently towards them, so a constant the rows barely see stays sane instead of running to a
# bound (without it, leaving out the only server TTFT source drives prefill_overhead_ms to 0
# and TTFT out of sample to a 29% median error).
BASE_EFFICIENCY = Efficiency(
    eta_mem=0.75,
    eta_compute_decode=0.5,
    eta_compute_prefill=0.6,
    eta_kv=0.8,
    allreduce_latency_us=15.0,
    step_overhead_ms=1.5,
    prefill_overhead_ms=5.0,
    mem_util=0.9,
    runtime_reserve_gb=2.0,
)


@dataclass(frozen=True)
class Recipe:
    """How one shipped engine profile is fitted: which engines' rows, which GPU families
    may get an override and how many rows an override needs."""

    id: str
    name: str
    engines: tuple[str, ...]
    families: tuple[str, ...] = ()
    min_family_rows: int = 8
    params: tuple[str, ...] = FIT_PARAMS
    prior: str | None = None  # recipe whose fitted default the default is pooled towards
    family_params: tuple[str, ...] | None = None  # constants an override may change
    base_prior_weight: float = 0.0  # weight of a Gaussian prior towards BASE_EFFICIENCY
    caveats: str = ""  # appended to the profile's notes

    def base_profile(self, source: str = "to be fitted", as_of: str = "unfitted") -> EngineProfile:
        return EngineProfile(
            id=self.id, name=self.name, source=source, as_of=as_of, default=BASE_EFFICIENCY
        )


# Family overrides were tried for vllm and trtllm (hopper/ampere/ada/cdna3, all constants or
# eta_mem + step overhead only): leave-one-source-out error got worse (throughput median
# 11% -> 16-19%), so those profiles ship a default only. For llama.cpp, overrides of the
# decode constants cut the leave-one-GPU-out TPOT error from 26% to 13% (GDDR Ada cards
# reach a larger fraction of their bandwidth than HBM A100/H100 at batch 1).
_THROUGHPUT_NOTE = (
    "Max-throughput rows are predicted as B*O / (prefill of the B prompts in 8192-token "
    "chunks + (O-1) decode steps), which is what static-batch and offline benchmarks "
    "measure (planner.perf.evaluate's continuous-batching rate shares chunked prefill passes "
    "the same way)."
)

RECIPES: dict[str, Recipe] = {
    "vllm": Recipe(
        "vllm",
        "vLLM (continuous batching, CUDA graphs, chunked prefill)",
        SERVER_ENGINES,
        # chosen by leave-one-source-out among 0.05/0.2/1 (TTFT median 18/17/17%, TPOT
        # 8/9/11%): the smallest weight that keeps unseen constants off their bounds
        base_prior_weight=0.2,
        caveats=(
            "Caveats: the public set has no vLLM max-throughput or TTFT rows, so 45 of the 58 "
            "rows are TensorRT-LLM (v0.5/v0.6 of 2023 and v1.0) and the compute efficiencies "
            "are mostly TensorRT-LLM's: expect vLLM to be somewhat slower at large batch. "
            "vLLM's own rows are 8 small-batch end-to-end latencies (MI300X TP8 FP8, H200 "
            "bf16), which pin eta_mem, the all-reduce latency and the step overhead. "
            "eta_mem and step_overhead_ms trade off (few small-batch rows): the overhead is "
            "known to +/- 0.6 ms only. The decode step is max(weights, GEMMs) + max(KV, "
            "attention), attention at the 16-bit peak. eta_kv fitted freely gives 0.67-0.70 "
            "+/- 0.10 with no better fit (weighted rms 0.1735 vs 0.1749), so the 0.8 is kept. "
            "Starts matter a little: the log-error surface has shallow minima along eta_mem vs "
            "step overhead (1 start: eta_mem 0.63, overhead 0.0 ms, rms 0.184). GPU-family "
            "overrides made leave-one-source-out error worse and are not shipped. "
            + "A weak Gaussian prior (weight 0.2) pulls the constants towards engineering "
            "defaults (calibration.BASE_EFFICIENCY), so constants the rows barely see stay "
            "off their bounds; in-sample errors move by under a point. " + _THROUGHPUT_NOTE
        ),
    ),
    "trtllm": Recipe(
        "trtllm",
        "TensorRT-LLM (in-flight batching, FP8/FP4 ModelOpt checkpoints)",
        ("trtllm",),
        prior="vllm",
        caveats=(
            "Caveats: the TensorRT-LLM rows are max-throughput points and batch-1 TTFT only, "
            "with no small-batch decode, so eta_mem and step_overhead_ms are not separable "
            "from them alone (unpooled fits land at eta_mem 0.58 with 0 ms or 0.98 with 11 ms "
            "depending on the start): hence the pooling towards the server-engine fit. Mixed "
            "software: v0.5/v0.6 (2023, static batching, FP8 KV) and v1.0 (2025, PyTorch "
            "backend; KV dtype assumed FP8). The two B200 FP4 rows are over-predicted by "
            "30-40% (one Blackwell source, no override). mem_util 0.9 is of total memory while "
            "TensorRT-LLM's kv_cache_free_gpu_mem_fraction 0.9 is of the memory left after "
            "the weights, so max_batch is conservative (the H200 blog's batch 192 of "
            "Llama-2-70B FP8 at 128/2048 does not fit in the model). " + _THROUGHPUT_NOTE
        ),
    ),
    "llamacpp": Recipe(
        "llamacpp",
        "llama.cpp (GGUF, single stream, llama-bench)",
        ("llamacpp",),
        families=("ada", "ampere", "hopper"),
        min_family_rows=3,
        family_params=("eta_mem", "step_overhead_ms"),
        caveats=(
            "Caveats: llama-bench of May 2024 (llama.cpp commit not stated) on RunPod, batch "
            "1: tg 512 from an empty context (input_len 1) for TPOT, pp 512 for TTFT. Single "
            "source, so cross-validated by leaving one GPU out. eta_compute_decode and "
            "allreduce_latency_us are not seen at batch 1 without TP. Multi-GPU rows split "
            "layers (not TP) and are not fitted. GDDR Ada cards reach a larger fraction of "
            "their bandwidth at batch 1 than HBM A100/H100 (family overrides of eta_mem and "
            "step overhead). Prefill: the RTX 4090 is 2x faster than predicted because "
            "llama.cpp's FP16 GEMMs run at the GeForce FP16-accumulate rate (330 TFLOPS) "
            "while the catalog lists the FP32-accumulate 165; on H100 llama.cpp's prefill "
            "reaches ~17% of the dense peak, below the 0.3 bound, and the 18.8 ms prefill "
            "overhead absorbs part of that."
        ),
    ),
}


def fit_recipe(
    measurements: pd.DataFrame,
    catalog: Catalog,
    recipe: Recipe,
    row_filter: Callable[[pd.DataFrame], pd.Series] | None = None,
    n_starts: int = 3,
) -> tuple[EngineProfile, dict]:
    """Fit one recipe (default + family overrides) from BASE_EFFICIENCY; a recipe with a
    prior first fits the prior recipe on the same rows filter."""
    prior, weight = None, 1.0
    if recipe.prior is not None:
        prior, _ = fit_recipe(measurements, catalog, RECIPES[recipe.prior], row_filter, n_starts)
    elif recipe.base_prior_weight > 0:
        prior, weight = recipe.base_profile(), recipe.base_prior_weight
    return fit_profile(
        measurements,
        catalog,
        recipe.base_profile(),
        engine_filter=recipe.engines,
        params=recipe.params,
        families=recipe.families,
        min_family_rows=recipe.min_family_rows,
        n_starts=n_starts,
        row_filter=row_filter,
        prior_profile=prior,
        prior_weight=weight,
        family_params=recipe.family_params,
    )


def cross_validate(
    measurements: pd.DataFrame,
    catalog: Catalog,
    recipe: Recipe,
    group_col: str = "source_key",
    n_starts: int = 3,
) -> pd.DataFrame:
    """Leave one group out (a source by default): fit the recipe on the other groups,
    predict the held-out group's rows. Returns the held-out predictions of every group,
    with `held_out` naming the group and `fit_note` the constants the fit could not see."""
    rows = usable(measurements)
    rows = rows[rows["engine"].isin(recipe.engines)]
    parts = []
    for group in sorted(rows[group_col].dropna().unique()):
        profile, report = fit_recipe(
            measurements,
            catalog,
            recipe,
            row_filter=lambda r, g=group: r[group_col] != g,
            n_starts=n_starts,
        )
        held = measurements[
            measurements["row_id"].isin(rows.loc[rows[group_col] == group, "row_id"])
        ]
        pred = predict(held, catalog, profile)
        pred["held_out"] = group
        pred["fit_note"] = ", ".join(report["default"]["not_identified"])
        parts.append(pred)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _fmt_constants(eff: Efficiency, sd: Mapping[str, float], params: Sequence[str]) -> str:
    out = []
    for name in params:
        value = getattr(eff, name)
        sigma = sd.get(name)
        out.append(f"{name} {value:.3g}" + (f" +/- {sigma:.2g}" if sigma is not None else ""))
    return "; ".join(out)


def describe_fit(
    recipe: Recipe,
    profile: EngineProfile,
    report: dict,
    as_of: str,
    data_file: str = "data/calibration/measured_public.csv",
) -> tuple[str, str]:
    """The `source` and `notes` texts of a fitted profile: exactly what was fitted on what."""
    sources = ", ".join(f"{k} {v}" for k, v in sorted(report["sources"].items()))
    ids = report["row_ids"]
    source = (
        f"Fitted {as_of} by planner.calibration.fit_recipe('{recipe.id}') on {data_file} "
        f"(verbatim copy of the public set described in data/calibration/SOURCES.md): "
        f"{len(ids)} rows of engines {', '.join(recipe.engines)} ({sources}; row_id "
        f"{', '.join(str(i) for i in ids)}). Least squares on log(predicted/measured) of "
        f"TPOT, TTFT, throughput and end-to-end latency, rows weighted 1/sqrt(rows of their "
        f"source), constants bounded (eta 0.3-1, allreduce 1-100 us, overheads 0-20 ms)"
        + (
            f"; default pooled towards the '{recipe.prior}' fit (same rows filter) with a "
            f"Gaussian prior"
            if recipe.prior
            else ""
        )
        + (
            f"; {'/'.join(recipe.families)} overrides of "
            f"{', '.join(recipe.family_params or recipe.params)} fitted on that family's rows "
            f"(>= {recipe.min_family_rows}) with a prior towards the default"
            if recipe.families
            else "; no GPU-family overrides"
        )
        + "."
    )
    rep = report["default"]
    notes = [
        f"default (+/- 1 sigma from the Jacobian of the log residuals): "
        f"{_fmt_constants(profile.default, rep.get('sd', {}), recipe.params)}; weighted rms "
        f"log error {rep.get('rms_log_after', float('nan')):.3f}."
    ]
    if rep.get("not_identified"):
        notes.append(
            f"Not identified by these rows (kept at the pre-calibration value): "
            f"{', '.join(rep['not_identified'])}."
        )
    if rep.get("at_bound"):
        notes.append(f"At a bound: {', '.join(rep['at_bound'])}.")
    for fam, fam_rep in report["families"].items():
        if "values" in fam_rep:
            notes.append(
                f"{fam} override ({fam_rep['rows']} rows): "
                f"{_fmt_constants(profile.families[fam], fam_rep['sd'], fam_rep['fitted'])}."
            )
        else:
            notes.append(f"{fam}: no override ({fam_rep.get('rows', 0)} rows).")
    notes.append(
        f"Not fitted: eta_kv {profile.default.eta_kv}, mem_util {profile.default.mem_util}, "
        f"runtime_reserve_gb {profile.default.runtime_reserve_gb} (pre-calibration values)."
    )
    if recipe.caveats:
        notes.append(recipe.caveats)
    return source, " ".join(notes)


def fit_shipped_profiles(
    measurements: pd.DataFrame, catalog: Catalog, as_of: str, n_starts: int = 8
) -> dict[str, tuple[EngineProfile, dict]]:
    """Fit every recipe of RECIPES; the profiles carry their source, notes and date.

    The log-error surface has shallow, nearly equivalent minima along eta_mem vs
    step_overhead_ms (the roofline max() has kinks): 8 starts find the best of them; fewer
    starts move the constants within about one sigma."""
    out = {}
    for rid, recipe in RECIPES.items():
        profile, report = fit_recipe(measurements, catalog, recipe, n_starts=n_starts)
        source, notes = describe_fit(recipe, profile, report, as_of)
        out[rid] = (
            profile.model_copy(update={"source": source, "notes": notes, "as_of": as_of}),
            report,
        )
    return out


# ---------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------


def _round_eff(eff: Efficiency) -> dict:
    out = {}
    for name, value in eff.model_dump().items():
        digits = 3 if name.startswith("eta") or name == "mem_util" else 2
        out[name] = round(float(value), digits)
    return out


def profile_document(profile: EngineProfile) -> dict:
    """The YAML document of an engine profile (schema of planner/schema/engine.py)."""
    doc = {
        "id": profile.id,
        "name": profile.name,
        "source": profile.source,
        "as_of": profile.as_of,
        "notes": profile.notes,
        "default": _round_eff(profile.default),
        "families": {k: _round_eff(v) for k, v in sorted(profile.families.items())},
    }
    EngineProfile.model_validate(doc)
    return doc


def profile_yaml(profile: EngineProfile, header: str = "") -> str:
    """The text of an engine profile YAML file: `header` as a comment block, then the
    document of `profile_document`."""
    import yaml

    text = yaml.safe_dump(profile_document(profile), sort_keys=False, width=100, allow_unicode=True)
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comment + text


def write_profile(profile: EngineProfile, path: str | Path, header: str = "") -> Path:
    """Write an engine profile YAML (the only function here that writes a file)."""
    path = Path(path)
    path.write_text(profile_yaml(profile, header), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------
# Your own measurements: CSV rows and `vllm bench serve --save-result` JSON
# (`planner validate`, `planner calibrate`)
# ---------------------------------------------------------------------------------------

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
    "assumptions", "skip_reason", "metric_skips",
)  # fmt: skip
VLLM_SOURCE_KEY = "vllm-bench-serve"
VLLM_METRIC_KEYS: dict[str, tuple[str, ...]] = {
    "tpot": ("mean_tpot_ms", "median_tpot_ms"),
    "ttft": ("mean_ttft_ms", "median_ttft_ms"),
    "throughput": ("output_throughput",),
}
WAVE_ASSUMPTION = (
    "vLLM serving-benchmark rows at request rate inf with max_concurrency B are compared as "
    "waves of B equal requests arriving together on an idle replica (fixed lengths finish "
    "together): TTFT = mean pass in which a prompt completes x pass time, prompts prefilled in "
    "8192-token chunks; TPOT = decode step at batch B plus the prefill passes a request "
    "decodes through; throughput = B x O / (wave prefill + (O-1) decode steps)."
)


_T = TypeVar("_T")


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


def _option(option: str, lookup: Callable[[str], _T], value: str) -> _T:
    """`lookup(value)`, an unknown id's message prefixed with the option that gave it."""
    try:
        return lookup(value)
    except InputError as exc:
        raise InputError(f"{option}: {exc.message}") from None


def resolve_identity(identity: Identity, catalog: Catalog) -> dict:
    """Catalog ids of `identity`, checked: an unknown id names its closest match, an
    impossible combination (tp, KV dtype, quant on that GPU) says why."""
    for name, value in (
        ("--tp", identity.tp),
        ("--input-len", identity.input_len),
        ("--output-len", identity.output_len),
    ):
        if value is not None and value <= 0:
            raise InputError(f"{name}: must be positive, got {value}")
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


def read_json_results(path: str | Path) -> list[dict]:
    """The result objects of one JSON file: one object (`--save-result`), a list of them,
    or JSON Lines (`--append-result` appends one object per line). A syntax error names
    the line and column."""
    path = Path(path)
    text = read_text(path, "a CSV or JSON file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise InputError(json_error(path, exc)) from None
        data = []
        for number, line in enumerate(text.splitlines(), start=1):
            try:
                data.append(json.loads(line)) if line.strip() else None
            except json.JSONDecodeError as line_exc:
                raise InputError(json_error(path, line_exc, number)) from None
    docs = data if isinstance(data, list) else [data]
    if not docs:
        raise InputError(f"{path}: no benchmark result in the file")
    for doc in docs:
        if not isinstance(doc, dict):
            raise InputError(
                f"{path}: expected JSON objects (vLLM benchmark results), got a "
                f"{type(doc).__name__}"
            )
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
            f"{where}: request_rate: expected a number or 'inf', got {value!r}"
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


def _vllm_operating_point(doc: Mapping, where: str, out: _RowMap) -> tuple[float, str]:
    """(batch, scenario kind): the requests in flight, and which comparison applies."""
    rate = _request_rate(doc, where)
    conc, prompts = _num(doc.get("max_concurrency")), _num(doc.get("num_prompts"))
    if math.isinf(rate):
        if conc > 0:
            batch = min(conc, prompts) if prompts > 0 else conc
            out.assumptions.append(
                f"request rate inf, max_concurrency {conc:g}: waves of {batch:g} requests "
                "arriving together (serving_wave_ms)"
            )
        elif prompts > 0:
            batch = prompts
            out.assumptions.append(
                "request rate inf without max_concurrency: all num_prompts requests in flight "
                "at once (one wave)"
            )
        else:
            batch = math.nan
            out.skips.append("neither max_concurrency nor num_prompts: the batch is unknown")
        return batch, "serving"
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
        return math.nan, "serving_poisson"
    batch = float(max(round(in_flight), 1))
    batch = min(batch, conc) if conc > 0 else batch
    out.assumptions.append(
        f"request rate {rate:g}/s: batch {batch:g} from Little's law (request_throughput x "
        "mean_e2el_ms); TPOT compared with continuous batching's TPOT with prefill interleaved"
    )
    return batch, "serving_poisson"


def _vllm_metrics(doc: Mapping, where: str, o_len: float, out: _RowMap) -> dict:
    if not any(k in doc for keys in VLLM_METRIC_KEYS.values() for k in keys):
        raise InputError(
            f"{where}: not a vLLM serving benchmark result (none of "
            f"{', '.join(k for keys in VLLM_METRIC_KEYS.values() for k in keys)})"
        )
    values, basis = {}, []
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
    values.update(meas_e2e=math.nan, metric_basis="; ".join(basis))
    return values


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
    batch, kind = _vllm_operating_point(doc, where, out)
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
    total_output_tokens / completed unless `identity` gives them. At request rate inf the
    batch is max_concurrency (capped by num_prompts; num_prompts without a concurrency
    limit) and the row is compared as waves of that many requests (`serving_wave_ms`). At
    a finite rate only TPOT is compared, at the batch of Little's law.
    """
    rows = []
    for number, doc in enumerate(docs, start=1):
        where = source if len(docs) == 1 else f"{source} (result {number})"
        rows.append({"row_id": number, **_vllm_row(doc, ids, where, identity)})
    return pd.DataFrame(rows, columns=list(MEASUREMENT_COLUMNS))


def read_csv_measurements(path: str | Path, catalog: Catalog) -> pd.DataFrame:
    """A measurements CSV in the format of data/calibration/measured_public.csv. Only the
    identity columns (framework, model, gpu, weight_precision) and one metric column are
    required; cells may be catalog ids (llama-3.1-8b, h100-sxm, fp8) or published names."""
    path = Path(path)
    read_text(path, "a CSV or JSON file")
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
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
        raise InputError(f"{path}: row_id must be a whole number, got {bad[0]!r}")
    raw.loc[raw["source"].str.strip() == "", "source"] = path.name
    if raw.empty:
        return pd.DataFrame(columns=list(MEASUREMENT_COLUMNS))
    return measurements_from_frame(raw, catalog)


def input_kind(path: str | Path) -> str:
    """'csv' or 'json', by the file name's suffix, else by the first character."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".csv", ".json", ".jsonl"):
        return "csv" if suffix == ".csv" else "json"
    return "json" if read_text(path, "a CSV or JSON file").lstrip()[:1] in ("{", "[") else "csv"


def read_measurements(
    paths: Sequence[str | Path], catalog: Catalog, identity: Identity = Identity()
) -> pd.DataFrame:
    """Every input as rows of the `load_measurements` schema, plus `input` (the file) and
    `input_row` (the row's id in it); row_id is renumbered 1..N when inputs collide."""
    kinds = [(Path(p), input_kind(p)) for p in paths]
    ids: dict = {}
    json_inputs = [p for p, k in kinds if k == "json"]
    if json_inputs:
        missing = identity.missing()
        if missing:
            raise InputError(
                f"{json_inputs[0]}: a vLLM benchmark result does not say what was measured: "
                f"pass {', '.join(missing)} (catalog ids of the model, GPU, tensor-parallel "
                "degree and quantization)"
            )
        ids = resolve_identity(identity, catalog)
    parts = []
    for path, kind in kinds:
        if kind == "csv":
            frame = read_csv_measurements(path, catalog)
        else:
            frame = vllm_result_rows(read_json_results(path), ids, str(path), identity)
        parts.append(frame.assign(input=str(path), input_row=frame["row_id"].to_numpy()))
    out = pd.concat(parts, ignore_index=True)
    if out.empty:
        raise InputError(f"no measurement rows in {', '.join(str(p) for p in paths)}")
    if out["row_id"].duplicated().any():
        out["row_id"] = np.arange(1, len(out) + 1)
    return out


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
    for _, r in measurements.iterrows():
        reason = r["skip_reason"]
        if not reason and r["row_id"] not in set(pred["row_id"]):
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


def _row_record(r: pd.Series, profile_ids: Mapping[str, str]) -> dict:
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
        "note": _row_note(r),
    }


def _row_note(r: pd.Series) -> str:
    notes = [str(r.get("predict_note", "") or "")]
    if r["scenario_kind"] in SERVING_KINDS and not bool(r["fits"]):
        notes.append(
            f"batch {r['pred_batch']:g} exceeds the model's max_batch {r['max_batch']:g}: the "
            "engine would queue or preempt requests the comparison does not see"
        )
    return "; ".join(n for n in notes if n)


def _summary_records(table: pd.DataFrame) -> list[dict]:
    keep = ["by", "group", "metric", "n", "median_abs_pct", "p90_abs_pct", "median_signed_pct"]
    return [{k: r[k] for k in keep} for _, r in table.iterrows()]


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
        "rows": [_row_record(r, profile_ids) for _, r in pred.iterrows()],
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
    result = Calibration(fitted, base, report, params, seen_by, before, after, tuple(inputs))
    source, notes = describe_user_fit(result, rows, as_of)
    result.profile = fitted.model_copy(
        update={
            "id": new_id,
            "name": f"{base.name}, calibrated as '{new_id}'",
            "source": source,
            "notes": notes,
            "as_of": as_of or "unknown",
            "families": {},
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
    return source, " ".join(notes)


def overall_errors(table: pd.DataFrame) -> dict[str, dict]:
    """metric -> n, median_abs_pct, p90_abs_pct of an error_table's by='all' rows."""
    part = table[table["by"] == "all"]
    return {
        r["metric"]: {
            "n": int(r["n"]),
            "median_abs_pct": float(r["median_abs_pct"]),
            "p90_abs_pct": float(r["p90_abs_pct"]),
        }
        for _, r in part.iterrows()
    }


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
            "base": getattr(result.base.default, name),
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


# ---- text -------------------------------------------------------------------------------


def _num_text(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "l") -> str:
    """Columns padded to their widest cell; `align` says l(eft) or r(ight) per column, the
    last letter repeating for the columns beyond it."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=True)]
    align = align + align[-1] * len(widths)

    def line(cells: Sequence[str]) -> str:
        parts = [
            str(c).ljust(w) if align[i] == "l" else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])


_METRIC_HEADERS = {
    "tpot": "TPOT ms",
    "ttft": "TTFT ms",
    "throughput": "output tok/s",
    "e2e": "E2E ms",
}


def _metric_cell(rec: dict, metric: str) -> str:
    m = rec["metrics"].get(metric)
    if m is None:
        return "-"
    return f"{_num_text(m['measured'])} / {_num_text(m['predicted'])} {m['error_pct']:+.0f}%"


def _row_lines(result: dict) -> list[str]:
    metrics = [m for m in METRICS if any(m in r["metrics"] for r in result["rows"])]
    headers = ["row", "engine", "profile", "model", "gpu", "quant", "kv", "tp", "B", "in", "out"]
    rows = [
        [
            str(r["row_id"]),
            r["engine"],
            r["profile"],
            r["model"],
            r["gpu"],
            r["quant"],
            r["kv_dtype"],
            str(r["tp"]),
            f"{r['batch']:g}",
            f"{r['input_len']:.0f}",
            f"{r['output_len']:.0f}",
            *(_metric_cell(r, m) for m in metrics),
        ]
        for r in result["rows"]
    ]
    headers += [f"{_METRIC_HEADERS[m]} (meas / pred err)" for m in metrics]
    return [text_table(headers, rows, "lllllllr")]


def _summary_lines(summary: list[dict]) -> list[str]:
    out = []
    for by, title in (("all", "overall"), ("gpu", "per GPU"), ("source", "per source")):
        part = [s for s in summary if s["by"] == by]
        if not part:
            continue
        rows = [
            [
                s["group"],
                s["metric"],
                str(s["n"]),
                f"{s['median_abs_pct']:.0f}%",
                f"{s['p90_abs_pct']:.0f}%",
                f"{s['median_signed_pct']:+.0f}%",
            ]
            for s in part
        ]
        out += ["", f"Absolute % error, {title}:"]
        out.append(
            text_table(["group", "metric", "n", "median", "p90", "median signed"], rows, "llr")
        )
    return out


def render_validation(result: dict) -> str:
    """`planner validate`: the rows, then the error per metric overall, per GPU, per source."""
    c = result["counts"]
    profiles = ", ".join(f"{k} -> {v}" for k, v in sorted(result["profiles"].items()))
    lines = [
        f"{c['compared']} of {c['rows']} rows compared with the model (profiles: {profiles}); "
        "error = predicted / measured - 1",
        "",
        *_row_lines(result),
        *_summary_lines(result["summary"]),
    ]
    if result["skipped"]:
        lines += ["", f"Skipped ({len(result['skipped'])} rows):"]
        by_reason: dict[str, list[str]] = {}
        for s in result["skipped"]:
            by_reason.setdefault(s["reason"], []).append(str(s["row_id"]))
        lines += [f"  - {reason}: rows {', '.join(ids)}" for reason, ids in by_reason.items()]
    return "\n".join(lines) + "\n"


def render_calibration(result: Calibration, output: str | None) -> str:
    """`planner calibrate`: the fitted constants with 1-sigma, the error before and after."""
    rep = result.report["default"]
    p = result.profile
    rows = []
    for name in result.params:
        sd = rep.get("sd", {}).get(name)
        rows.append(
            [
                name,
                f"{getattr(result.base.default, name):.4g}",
                f"{getattr(p.default, name):.4g}",
                "-" if sd is None else f"{sd:.2g}",
                str(result.seen_by.get(name, 0)),
                _constant_note(name, rep, result.seen_by.get(name, 0)),
            ]
        )
    inputs = list(result.inputs)
    shown = ", ".join(inputs) if len(inputs) <= 3 else f"{len(inputs)} inputs ({inputs[0]}, ...)"
    lines = [
        f"Profile '{p.id}' fitted from '{result.base.id}' on {len(result.report['row_ids'])} "
        f"rows of {shown}",
        "",
        text_table(["constant", "base", "fitted", "+/- 1 sigma", "rows", "note"], rows, "lrrrrl"),
    ]
    if rep["residuals"] <= len(rep["fitted"]):
        lines.append(
            f"({rep['residuals']} measured values for {len(rep['fitted'])} constants: an exact "
            "fit, the 1-sigma values mean nothing)"
        )
    lines += [
        "",
        f"rms log error {rep.get('rms_log_before', math.nan):.3f} -> "
        f"{rep.get('rms_log_after', math.nan):.3f}",
        "",
        _error_table_text(result),
    ]
    if output:
        lines += ["", f"Wrote {output}"]
    return "\n".join(lines) + "\n"


def _constant_note(name: str, rep: dict, seen_by: int) -> str:
    if name not in rep["fitted"]:
        return "held: no row depends on it"
    notes = ["at bound"] if name in rep.get("at_bound", []) else []
    lo, hi = BOUNDS[name]
    if rep.get("sd", {}).get(name, 0.0) > 0.5 * (hi - lo):
        notes.append("undetermined: 1-sigma > half its range")
    if seen_by < 3:
        notes.append(f"weak: seen by {seen_by} row(s) only")
    return "; ".join(notes)


def _error_table_text(result: Calibration) -> str:
    before, after = overall_errors(result.before), overall_errors(result.after)
    rows = []
    for m, a in after.items():
        b = before.get(m, {"median_abs_pct": math.nan, "p90_abs_pct": math.nan})
        rows.append(
            [
                m,
                str(a["n"]),
                f"{b['median_abs_pct']:.1f}%",
                f"{b['p90_abs_pct']:.1f}%",
                f"{a['median_abs_pct']:.1f}%",
                f"{a['p90_abs_pct']:.1f}%",
            ]
        )
    headers = ["metric", "n", "before median", "before p90", "after median", "after p90"]
    return "Absolute % error on these rows:\n" + text_table(headers, rows, "lr")
